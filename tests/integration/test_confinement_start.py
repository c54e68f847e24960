"""Issue 28 point 3 in the job manager, with real Spark: a job whose objects were written
into the catalog before the admin's rules (or by a client that skipped them) is refused
when the job manager starts it — the home's own state and the catalog's database are
never a job's data, whoever asks. On main at 0761648 the job ran and wrote Parquet files
into the home (beside the catalog) and read the catalog's own tables."""

from __future__ import annotations

import pytest

from streamjob.catalog.records import JobStatus
from streamjob.manager.job_manager import JobManager

from .world import World

pytestmark = pytest.mark.spark


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    w.manager = JobManager(w.catalog, w.home)
    yield w
    for uid in list(w.manager.runners):
        w.manager.stop(uid)
    w.close()


def _job(world, name: str, sink: str) -> object:
    """A job on a rate stream into ``sink``, written straight into the catalog (as a row
    of before these rules would be: no statement checked it)."""
    world.catalog.create_job("default", name, f"insert into {sink} select value from s", {},
                             [("stream", "default", "s", "source"),
                              ("table", "default", sink, "sink")])
    return world.catalog.require_job("default", name)


def test_the_job_manager_refuses_rows_that_reach_the_home_or_the_catalog(world):
    world.run('CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");')
    world.catalog.create_table("default", "in_home", [{"name": "value", "type": "bigint"}], {},
                               None, stored_as="parquet", location=str(world.home.root))
    world.catalog.create_table("default", "tokens", [{"name": "value", "type": "bigint"}],
                               {"connector": "sql", "url": world.home.catalog_url,
                                "table": "api_tokens"}, None)
    for name, sink, words in (("j_home", "in_home", "streamjob home"),
                              ("j_catalog", "tokens", "catalog's own database")):
        runner = world.manager.start(_job(world, name, sink))
        runner.join(120)
        job = world.catalog.require_job("default", name)
        assert job.status == JobStatus.FAILED, job
        assert words in (job.last_error or ""), job.last_error
    written = [p.name for p in world.home.root.iterdir()
               if p.name.startswith(("part-", "_spark_metadata"))]
    assert written == []  # nothing written into the home
