"""How ``streamjob run FILE`` ends a failed job (issue 16), without Spark: the query of
each attempt is a stand-in that runs until stopped, or fails with a given error.

- ``--until-idle`` when a job's end offsets cannot be read (point a): the job ends FAILED
  with the error as its last error and its run's cause, not STOPPED with cause "stopped";
- an error no restart can fix (point b, data loss) fails the job at its first run, while
  a transient one (broker down) is still retried."""

from __future__ import annotations

import time
import types

import pytest
from click.testing import CliRunner

from streamjob.catalog import Catalog
from streamjob.cli import main
from streamjob.exceptions import ConnectorError
from streamjob.manager.job_manager import JobManager
from streamjob.manager.runner import JobRunner

pytestmark = pytest.mark.component

SCRIPT = """
CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="127.0.0.1:9",
  "kafka.request.timeout.ms"="1000");
CREATE TABLE out (k STRING, v DOUBLE) STORED AS JSON;
CREATE STREAMJOB j AS ("insert into out select k, v from s");
START STREAMJOB j;
"""


class _Query:
    """A streaming query that runs until stopped."""

    isActive = True
    lastProgress = None
    status = {"isTriggerActive": False, "message": "Waiting for data to arrive"}

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def awaitTermination(self, timeout):
        if self.error is not None:
            return True
        time.sleep(timeout)
        return not self.isActive

    def exception(self):
        return self.error

    def stop(self):
        self.isActive = False


FAILING: list[Exception] = []  # the error each attempt's query fails with (none: it runs)


def _start(self, plan):
    self.progress = types.SimpleNamespace(flush=lambda force=False: None)
    return _Query(FAILING[0] if FAILING else None)


@pytest.fixture
def no_spark(monkeypatch):
    monkeypatch.setattr(JobManager, "spark", lambda self: None)
    monkeypatch.setattr(JobRunner, "_start", _start)
    monkeypatch.setattr("streamjob.spark.session.stop_spark", lambda: None)
    monkeypatch.setattr("streamjob.spark.session.jvm_exit_code", lambda: None)
    FAILING.clear()


MISSING = "topic 't' does not exist on Kafka broker 127.0.0.1:9"


@pytest.mark.parametrize("case", ["unreachable broker", "missing topic"])
def test_a_job_whose_end_offsets_cannot_be_read_ends_failed_with_the_error(
        tmp_path, no_spark, monkeypatch, case):
    """Unreachable broker: the real reader against 127.0.0.1:9 (nothing listens). Missing
    topic: the reader's error (source.py) raised by a stand-in of end_offsets."""
    if case == "missing topic":
        def end_offsets(*args, **kwargs):
            raise ConnectorError(MISSING)
        monkeypatch.setattr("streamjob.manager.idle.end_offsets", end_offsets)
    error = MISSING if case == "missing topic" else "cannot reach Kafka broker at 127.0.0.1:9"
    home = tmp_path / "home"
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT)
    res = CliRunner().invoke(main, ["run", str(script), "--until-idle"],
                             env={"STREAMJOB_HOME": str(home), "COLUMNS": "200"})
    catalog = Catalog(f"sqlite:///{home}/catalog.db")
    try:
        job = catalog.require_job("default", "j")
        assert (job.status, (job.last_error or "")[:len(error)]) == ("FAILED", error)
        runs = catalog.list_runs(job.uid)
        assert [(r.status, r.cause) for r in runs] == [("FAILED", job.last_error)]
    finally:
        catalog.close()
    assert res.exit_code == 1, (res.stdout, res.stderr)
    assert f"job default.j FAILED: {error}" in res.stderr


DATA_LOSS = (
    "[STREAM_FAILED] Query [id = 7a10eb12, runId = 992b6067] terminated with exception: "
    "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most recent "
    "call last):\n  File \"/work/main/streamjob/connectors/kafka/source.py\", line 260, in "
    "latestOffset\nstreamjob.exceptions.ConnectorError: topic 't' partition 0 ends at offset 5, "
    "but the job has read up to offset 30: the topic was deleted and recreated, or truncated, "
    "and records may have been lost; set \"fail.on.data.loss\"=\"false\" on the stream to read "
    "the partition again from its beginning\n SQLSTATE: 38000\n")
BROKER_DOWN = DATA_LOSS.split("streamjob.exceptions")[0] + (
    "streamjob.exceptions.ConnectorError: cannot reach Kafka broker at 127.0.0.1:9: "
    "KafkaTimeoutError: Unable to bootstrap from ['127.0.0.1:9']\n SQLSTATE: 38000\n")
FAILOVER = """
CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="127.0.0.1:9");
CREATE TABLE out (k STRING, v DOUBLE) STORED AS JSON;
CREATE STREAMJOB j AS ("insert into out select k, v from s") JOBPROPERTIES(
  "morphling.task.max.failures"="1", "streamjob.failover.initial.backoff"="50");
START STREAMJOB j;
"""


def _run_failing(tmp_path, name: str, error: str):
    """``streamjob run`` of FAILOVER whose queries fail with ``error``: (job, runs, result)."""
    FAILING[:] = [Exception(error)]
    home = tmp_path / name
    script = tmp_path / f"{name}.sql"
    script.write_text(FAILOVER)
    res = CliRunner().invoke(main, ["run", str(script)],
                             env={"STREAMJOB_HOME": str(home), "COLUMNS": "200"})
    assert res.exit_code == 1, (res.stdout, res.stderr)
    catalog = Catalog(f"sqlite:///{home}/catalog.db")
    try:
        job = catalog.require_job("default", "j")
        return job, catalog.list_runs(job.uid), res
    finally:
        catalog.close()


def test_data_loss_fails_at_once_where_a_broker_down_is_retried(tmp_path, no_spark):
    """Same job and failover settings (max.failures 1: one restart): a broker down is
    retried once as before; data loss ends the job FAILED at its first run, its error
    followed by the note that no restart fixes it and how to start over."""
    job, runs, _ = _run_failing(tmp_path, "down", BROKER_DOWN)
    assert job.status == "FAILED" and len(runs) == 2
    assert job.last_error.startswith("cannot reach Kafka broker at 127.0.0.1:9")
    assert "a restart cannot fix" not in job.last_error

    job, runs, res = _run_failing(tmp_path, "lost", DATA_LOSS)
    assert job.status == "FAILED"
    assert [(r.status, r.cause) for r in runs] == [("FAILED", job.last_error)]  # no restart
    assert job.last_error.startswith("topic 't' partition 0 ends at offset 5")
    assert "a restart cannot fix this" in job.last_error
    assert "START STREAMJOB j FROM EARLIEST" in job.last_error
    assert f"job default.j failed: {job.last_error}" in res.stderr
