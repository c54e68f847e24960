"""The release side of :class:`streamjob.manager.attempt.Attempt` and of its checkpoint
side (:class:`streamjob.checkpoint.run.CheckpointRun`) without Spark: releases run
last-registered first, each even when another failed (logged), once; an attempt whose
session cannot be made (its first step) builds nothing else; a checkpoint side that fails
halfway deletes the temporary checkpoint directory it had made."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from streamjob.checkpoint.recorder import CheckpointTracker
from streamjob.checkpoint.run import CheckpointRun
from streamjob.connectors.run import ConnectorRun
from streamjob.exceptions import JobError, PropertyError, StreamJobError
from streamjob.manager.attempt import Attempt
from streamjob.planner.plan import plan_job

from .planning import executor

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM s (timestamp TIMESTAMP, value BIGINT) TBLPROPERTIES ("source"="rate");
CREATE TABLE t (id BIGINT) STORED AS PARQUET;
CREATE STREAMJOB j AS ("insert into t select value from s")
  JOBPROPERTIES ("morphling.job.enable.checkpoint"="false");
"""


@pytest.fixture
def ex(tmp_path):
    yield from executor(tmp_path, SETUP)


def _attempt(ex, job_session) -> Attempt:
    job = ex.catalog.get_job("default", "j")
    planned = plan_job(ex.catalog, ex.home, "default", "j", job.query, job.properties)
    return Attempt(ex.catalog, ex.home, job, planned, CheckpointTracker(), job_session)


def test_releases_run_in_reverse_each_once_and_a_failed_one_does_not_skip_the_rest(ex, caplog):
    attempt = _attempt(ex, job_session=None)
    ran = []
    attempt._release("first built", lambda: ran.append("first built"))
    attempt._release("second built", lambda: 1 / 0)
    attempt._release("third built", lambda: ran.append("third built"))
    with caplog.at_level(logging.WARNING, logger="streamjob.manager.runner"):
        attempt.close()
    assert ran == ["third built", "first built"]
    assert "default.j: second built failed: division by zero" in caplog.text
    attempt.close()
    assert ran == ["third built", "first built"]


def test_an_attempt_whose_session_fails_builds_nothing_else(ex):
    def no_session(conf, sources):  # step 1 fails: no directory, backend or sink yet
        raise StreamJobError("no Spark session here")

    attempt = _attempt(ex, no_session)
    with pytest.raises(StreamJobError, match="no Spark session"):
        attempt.open()
    assert attempt.checkpoint is None and attempt.checkpoint_dir is None
    assert attempt.query is None and attempt.backend is None and attempt.sink is None


def _checkpoint_run(ex, props: dict[str, str]) -> CheckpointRun:
    job = ex.catalog.get_job("default", "j")
    planned = plan_job(ex.catalog, ex.home, "default", "j", job.query,
                       {**job.properties, **props})
    return CheckpointRun(ex.catalog, ex.home, job, planned, CheckpointTracker())


def _released(caplog) -> list[str]:
    return [r.args[1] for r in caplog.records if r.name == "streamjob.releases"]


def test_a_checkpoint_side_releases_what_it_built_in_reverse_order(ex, caplog):
    run = _checkpoint_run(ex, {"morphling.checkpoint.retained": "3"})
    assert run.spark_conf["spark.sql.streaming.stateStore.minDeltasForSnapshot"] == "3"
    with caplog.at_level(logging.DEBUG, logger="streamjob.releases"):
        with run:
            temporary = Path(run.directory)
            assert temporary.is_dir() and run.marker == run.job.uid and not run.resumes
            assert run.recorder is not None and run.watch is not None
        run.close()  # a second close releases nothing again
    assert _released(caplog) == ["withdrawing the running mark", "closing the checkpoint backend",
                                 "deleting the temporary checkpoint"]
    assert not temporary.exists()


def test_a_checkpoint_side_that_fails_halfway_deletes_its_temporary_directory(ex, caplog):
    # the kafka backend of a job that reads no Kafka stream is refused as it opens (step 2),
    # after step 1 made the directory
    run = _checkpoint_run(ex, {"morphling.checkpoint.backend": "kafka"})
    with caplog.at_level(logging.DEBUG, logger="streamjob.releases"):
        with pytest.raises(PropertyError, match="Kafka"):
            run.open()
    assert run.directory is not None and not Path(run.directory).exists()
    assert run.backend is None and run.recorder is None
    assert _released(caplog) == ["deleting the temporary checkpoint"]


def test_a_connector_side_refused_by_a_new_checkpoint_closes_its_sink(ex, caplog):
    """A file table whose manifest lists batches refuses a new durable checkpoint
    (step 2 of :class:`~streamjob.connectors.run.ConnectorRun`); the sink built in step 1
    is closed, nothing prepared or committed."""
    job = ex.catalog.get_job("default", "j")
    planned = plan_job(ex.catalog, ex.home, "default", "j", job.query, job.properties)
    manifest = Path(planned.sink_spec.location) / "_spark_metadata"
    manifest.mkdir(parents=True)
    (manifest / "4").write_text("v1\n")
    side = ConnectorRun(job.qualified_name, planned.sink, planned.sink_spec, marker=job.uid,
                        exactly_once=True, checkpointed=True, new_checkpoint=True)
    with caplog.at_level(logging.DEBUG, logger="streamjob.releases"):
        with pytest.raises(JobError, match="manifest up to batch 4"):
            side.open()
    assert _released(caplog) == ["closing the sink"]
    assert side.sink is None and side.committers == []
    side.commit_offsets(0, {"source0": {}})  # no consumer group: nothing to commit
