"""The release side of :class:`streamjob.manager.attempt.Attempt` without Spark: its
releases run last-registered first, each even when another failed (logged), once; and an
attempt whose session cannot be made (the second step) deletes the temporary checkpoint
directory it had made (the first)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from streamjob.checkpoint.recorder import CheckpointTracker
from streamjob.exceptions import StreamJobError
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


def test_an_attempt_whose_session_fails_deletes_its_temporary_directory(ex):
    made = []

    def no_session(conf, sources):  # step 2 fails, after step 1 made the directory
        made.append(Path(attempt.checkpoint_dir).is_dir())
        raise StreamJobError("no Spark session here")

    attempt = _attempt(ex, no_session)
    with pytest.raises(StreamJobError, match="no Spark session"):
        attempt.open()
    assert made == [True]
    assert not Path(attempt.checkpoint_dir).exists()
    assert attempt.query is None and attempt.backend is None
