"""``run --until-idle`` with a Delta stream (tests/integration/test_delta_source.py
reads Delta streams otherwise): the job manager hosted in process, as ``streamjob run``
hosts it, stops waiting once the job's checkpoint holds the position after the table's
latest version. Its own module: it hosts the job as ``streamjob run`` does."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from .test_delta_source import append, out_ids
from .world import World, close_keeping_spark


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    yield w
    w.close()


@pytest.mark.spark
def test_run_until_idle_waits_for_the_latest_version(world):
    """As ``streamjob run --until-idle``: the job manager runs the job until its
    checkpoint's position reaches the version after the table's latest one, over several
    micro-batches (two files each), a version of no data files included."""
    from streamjob.client.session import ClientSession

    src, out = world.root / "src3", world.root / "out3"
    for k in range(3):
        append(src, 10 * k, 10)
    DeltaTable(str(src)).optimize.compact()  # the latest version reads no file
    world.run(f"""
    CREATE STREAM src3 (id BIGINT, name STRING, day STRING)
      STORED AS DELTA LOCATION '{src}' TBLPROPERTIES("maxFilesPerTrigger"="2");
    CREATE TABLE out3 (id BIGINT, name STRING, day STRING) STORED AS DELTA LOCATION '{out}';
    """)
    session = ClientSession(world.catalog, world.home, host_jobs=True)
    session.host()
    try:
        list(session.execute_script(
            'CREATE STREAMJOB idle3 AS ("insert into out3 select * from src3") '
            'JOBPROPERTIES ("morphling.job.checkpoint.interval"="0");\nSTART STREAMJOB idle3;'))
        session.manager.wait_until_idle(timeout=180)
    finally:
        close_keeping_spark(session)
    assert out_ids(out) == list(range(30))
