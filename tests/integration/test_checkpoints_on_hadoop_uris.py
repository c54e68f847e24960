"""Every checkpoint guarantee on a checkpoint root that is a Hadoop URI, exactly as on a
local path (issue 33 point 4), in the test run's own Spark session: a ``viewfs://``
root (Hadoop's mount-table file system, mounted onto a temporary directory: not local
to streamjob's eyes, so every operation goes through Hadoop's ``FileSystem`` in the
driver's JVM) and a ``file://`` root. Checked on each: the checkpoint identity is
written and a foreign or lost directory refused; a changed stateful query is refused by
the fingerprint; an in-flight checkpoint expires; DROP STREAMJOB deletes only a
directory whose identity names the job's uid; ``START ... FROM CHECKPOINT n`` restores
n under a new epoch. The files are asserted on the directory the root maps to."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

from streamjob.catalog import Catalog
from streamjob.checkpoint import fingerprint, identity, store
from streamjob.checkpoint.expiry import ExpiryWatch
from streamjob.exceptions import CheckpointError, JobError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import CHECKPOINT_DIR_KEY, Home
from streamjob.planner.plan import plan_job

pytestmark = pytest.mark.spark

SETUP = """
CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE totals (k STRING, total DOUBLE)
  TBLPROPERTIES ("connector"="sql", "url"="postgresql://app:s3cret@db/x", "primary.key"="k");
"""
AGG = "insert into totals select k, sum(v) from s group by k"


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    """The process's Spark session (started here if none runs, as the modules' worlds
    start it: local[2]), left running for the worker's next module (stopping it would
    make that module start a JVM)."""
    from streamjob.spark import session as engine

    return engine.spark_session(Home.open(tmp_path_factory.mktemp("spark-home"),
                                          {"spark.master": "local[2]"}))


@pytest.fixture(params=["viewfs", "file"])
def ex(request, spark, tmp_path):
    """An executor whose home's checkpoint root is a ``viewfs://`` or ``file://`` URI
    over ``tmp_path/disk``; ``ex.disk`` is that directory."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if request.param == "viewfs":
        mount = f"sj{uuid.uuid4().hex[:8]}"
        spark._jsc.hadoopConfiguration().set(f"fs.viewfs.mounttable.{mount}.link./ck",
                                              disk.as_uri())
        root = f"viewfs://{mount}/ck"
    else:
        root = disk.as_uri()
    home = Home.open(tmp_path / "home", {CHECKPOINT_DIR_KEY: root})
    executor = Executor(Catalog(f"sqlite:///{tmp_path}/catalog.db"), home)
    for stmt in parse_script(SETUP):
        executor.execute(stmt)
    executor.disk = disk
    yield executor
    executor.catalog.close()


def run(ex, sql):
    out = None
    for stmt in parse_script(sql):
        out = ex.execute(stmt)
    return out


def _job(ex, name="j"):
    run(ex, f'CREATE STREAMJOB {name} AS ("{AGG}")')
    job = ex.catalog.get_job("default", name)
    return job, ex.home.checkpoint_dir("default", name), ex.disk / "default" / name


def _logs(local: Path, ids, commits=None) -> None:
    """Offset (and commit) log entries as Spark writes them, on the mapped directory."""
    for log, batch_ids in (("offsets", ids), ("commits", ids if commits is None else commits)):
        (local / log).mkdir(parents=True, exist_ok=True)
        for i in batch_ids:
            (local / log / str(i)).write_text("v1\n{}\n{}")


def _foreign(ckdir: str, uid: str) -> None:
    """An identity naming ``uid``, written through the root's file system (Hadoop's
    local file system keeps a checksum beside each file it writes)."""
    store.write_file(store.join_uri(ckdir, identity.FILE_NAME),
                     json.dumps({"job_uid": uid, "epoch": "e"}))


def _record(ex, job, ids) -> None:
    now = datetime.now(timezone.utc)
    for i in ids:
        ex.catalog.record_checkpoint(job.uid, i, started_at=now, ended_at=now, duration_ms=1,
                                     source_offsets={}, input_rows=1, retained=5)


def test_the_identity_is_written_and_a_foreign_or_lost_directory_refused(ex):
    job, ckdir, local = _job(ex)
    assert not ckdir.startswith("/")
    first = identity.prepare(ckdir, job, None)  # a first start: a new epoch
    assert json.loads((local / identity.FILE_NAME).read_text())["job_uid"] == job.uid
    assert identity.read(ckdir) == first and first.epoch
    _foreign(ckdir, "other")
    with pytest.raises(CheckpointError, match="belongs to another job"):
        identity.prepare(ckdir, job, None)
    store.delete_file(store.join_uri(ckdir, identity.FILE_NAME))
    _record(ex, job, [1])
    with pytest.raises(CheckpointError, match="holds none"):
        identity.prepare(ckdir, job, ex.catalog.latest_checkpoint(job.uid))
    # the orphan check lists the root through the same file system
    _logs(local, [0])
    assert identity.job_directories(ex.home.checkpoint_root) == ["default.j"]


def test_a_changed_stateful_query_is_refused_by_the_fingerprint(ex):
    job, ckdir, local = _job(ex)
    _logs(local, [0])
    old = plan_job(ex.catalog, ex.home, "default", "j", AGG, {}, {})
    fingerprint.write(ckdir, fingerprint.of_plan(old))
    assert (local / fingerprint.FILE_NAME).exists()
    assert fingerprint.stored(ckdir) == fingerprint.of_plan(old)
    changed = plan_job(ex.catalog, ex.home, "default", "j",
                       "insert into totals select k, max(v) from s group by k", {}, {})
    with pytest.raises(JobError, match="its query changed"):
        fingerprint.check(ckdir, changed)
    # a planned change (ALTER ... AS) is accepted beside it; the next write replaces both
    assert fingerprint.plan_change(ckdir, fingerprint.of_plan(changed))
    assert fingerprint.check(ckdir, changed) == fingerprint.of_plan(changed)
    fingerprint.write(ckdir, fingerprint.of_plan(changed))
    assert not (local / fingerprint.NEXT_NAME).exists()
    # START of the job's own query (AGG) over the changed one's checkpoints: refused
    # before anything changes
    with pytest.raises(JobError, match="cannot resume from its checkpoints"):
        run(ex, "START STREAMJOB j")
    assert ex.catalog.get_job("default", "j").desired_state == "STOPPED"


def test_an_in_flight_checkpoint_expires(ex):
    _job_, ckdir, local = _job(ex)
    _logs(local, [0, 1, 2], commits=[0, 1])  # batch 2 started, not committed
    now = [100.0]
    watch = ExpiryWatch(ckdir, timeout_ms=2000, clock=lambda: now[0])
    assert watch.in_flight() == 2 and watch.poll() is None
    now[0] += 2.5
    assert watch.poll() == 2 and watch.poll() is None  # reported once
    assert watch.status_of(2) == "LATE"


def test_drop_deletes_only_a_directory_whose_identity_names_the_job(ex):
    job, ckdir, local = _job(ex)
    _logs(local, [0, 1])
    identity.prepare(ckdir, job, None)
    assert "its checkpoints were purged" in run(ex, "DROP STREAMJOB j").message
    assert not local.exists()
    # another incarnation's directory under the same name stays
    job, ckdir, local = _job(ex)
    _logs(local, [0])
    _foreign(ckdir, "older")
    msg = run(ex, "DROP STREAMJOB j").message
    assert "belongs to another job and was kept" in msg
    assert (local / "offsets" / "0").exists()


def test_start_from_checkpoint_n_restores_it_under_a_new_epoch(ex):
    job, ckdir, local = _job(ex)
    _logs(local, [3, 4, 5, 6])
    first = identity.prepare(ckdir, job, None)
    _record(ex, job, [3, 4, 5, 6])
    msg = run(ex, "START STREAMJOB j FROM CHECKPOINT 4").message
    assert "from checkpoint 4 (checkpoints 5, 6 removed); checkpoint epoch " in msg
    assert sorted(p.name for p in (local / "offsets").iterdir() if p.name.isdigit()) == ["3", "4"]
    assert sorted(p.name for p in (local / "commits").iterdir() if p.name.isdigit()) == ["4"]
    now = identity.read(ckdir)
    assert now.job_uid == job.uid and now.epoch not in ("", first.epoch)
    assert [c.checkpoint_id for c in ex.catalog.list_checkpoints(job.uid)] == [3, 4]
    assert not (ex.disk / "default" / "j.replaced").exists()


@pytest.mark.system
def test_a_client_without_spark_restores_and_drops_on_a_hadoop_root(tmp_path):
    """``streamjob -e`` hosts no Spark; on a ``viewfs://`` root, ``START ... FROM
    CHECKPOINT n`` and DROP start its own session and reach the directory through Hadoop
    (``checkpoint.filesystems.start_on_demand``), instead of failing. One statement
    process, one JVM."""
    import os
    import subprocess

    from .conftest import STREAMJOB

    disk, home = tmp_path / "disk", tmp_path / "home"
    mount = f"sj{uuid.uuid4().hex[:8]}"
    conf = ["--conf", f"{CHECKPOINT_DIR_KEY}=viewfs://{mount}/ck",
            "--conf", f"spark.hadoop.fs.viewfs.mounttable.{mount}.link./ck={disk.as_uri()}",
            "--conf", "spark.master=local[1]"]
    env = {**os.environ, "STREAMJOB_HOME": str(home)}

    def sj(*statements):
        res = subprocess.run([STREAMJOB, *conf, "-e", ";\n".join(statements)], env=env,
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout

    sj(*[s for s in SETUP.split(";") if s.strip()], f'CREATE STREAMJOB j AS ("{AGG}")')
    with Catalog(f"sqlite:///{home}/catalog.db") as cat:
        job = cat.get_job("default", "j")
        local = disk / "default" / "j"
        _logs(local, [3, 4, 5])
        (local / identity.FILE_NAME).write_text(json.dumps({"job_uid": job.uid, "epoch": "e0"}))
        now = datetime.now(timezone.utc)
        for i in (3, 4, 5):
            cat.record_checkpoint(job.uid, i, started_at=now, ended_at=now, duration_ms=1,
                                  source_offsets={}, input_rows=1, retained=5)
    out = sj("START STREAMJOB j FROM CHECKPOINT 4", "STOP STREAMJOB j", "DROP STREAMJOB j")
    assert "from checkpoint 4 (checkpoints 5 removed); checkpoint epoch" in out
    assert "checkpoint epoch e0" not in out
    assert "streamjob default.j dropped; its checkpoints were purged" in out
    assert not local.exists()
