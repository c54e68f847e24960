"""Chaos faults beside the SIGKILLs of test_chaos.py (issue 13, "Done when"): the
checkpoint disk full. (A broker and a database down for longer than 60 s are in
test_outages.py, a killed Spark JVM in test_jvm_death.py; the matrix is in
docs/reliability.md.)

The checkpoint root is a small tmpfs mounted for the test (the suite runs as root, as
CI does), filled to the last byte while the job runs and new input arrives, then freed.
The job must fail over while the disk is full and end RUNNING with every record once in
its exactly-once SQL sink, counted against its input."""

from __future__ import annotations

import subprocess

import pytest
import sqlalchemy as sa

from streamjob.catalog import Catalog
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import CHECKPOINT_DIR_KEY, Home
from streamjob.manager import JobManager

from .conftest import wait_for
from .world import World

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs at ``tmp_path/disk``, unmounted after the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory) -> object:
    """Write zeros into ``directory/filler`` until the file system is full; the path."""
    path = directory / "filler"
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return path


def test_a_full_checkpoint_disk_fails_over_and_loses_nothing(tmp_path, small_disk):
    home = Home.open(tmp_path / "home", {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
                                         CHECKPOINT_DIR_KEY: str(small_disk / "checkpoints")})
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home)
    manager = JobManager(catalog, home)
    files = tmp_path / "in"
    files.mkdir()
    writer = World(tmp_path / "w")  # only its atomic file writer
    db = tmp_path / "sink.db"
    for stmt in parse_script(f"""
        CREATE STREAM s (id BIGINT) TBLPROPERTIES ("source"="files", "path"="{files}", "format"="json");
        CREATE TABLE t (id BIGINT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{db}");
        CREATE STREAMJOB j AS ("insert into t select id from s")
          JOBPROPERTIES ("morphling.job.checkpoint.interval"="0");"""):
        ex.execute(stmt)
    try:
        writer.write(files, [{"id": i} for i in range(50)])
        manager.start(catalog.require_job("default", "j"))
        manager.wait_until_idle(timeout=300)
        filler = fill(small_disk)
        for part in range(3):  # new input while the disk is full
            writer.write(files, [{"id": i} for i in range(50 + part * 50, 100 + part * 50)])
        wait_for(lambda: catalog.require_job("default", "j").attempts > 0, 300,
                 "a failure while the checkpoint disk is full")
        assert catalog.require_job("default", "j").status != "FAILED"
        filler.unlink()
        manager.wait_until_idle(timeout=600)
        assert catalog.require_job("default", "j").status == "RUNNING"
        engine = sa.create_engine(f"sqlite:///{db}")
        with engine.connect() as conn:
            ids = sorted(r[0] for r in conn.execute(sa.text("select id from t")))
        engine.dispose()
        assert ids == list(range(200))
    finally:
        for uid in list(manager.runners):
            manager.stop(uid)
        catalog.close()
        writer.close()
