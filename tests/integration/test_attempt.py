"""One attempt of a job (:class:`streamjob.manager.attempt.Attempt`) with real Spark, a
real catalog and checkpoint directory: it releases what it built in reverse order, and
when a step fails halfway, exactly what it had built by then.

The attempt and each room's part of it (checkpoint, connectors, Spark) log each release
as it runs (``streamjob.releases``, DEBUG): the order is read from there."""

from __future__ import annotations

import logging
import threading

from pathlib import Path

import pytest

from streamjob.checkpoint.recorder import CheckpointTracker
from streamjob.exceptions import StreamJobError
from streamjob.manager.attempt import Attempt
from streamjob.planner.plan import plan_job
from streamjob.spark.session import job_session, spark_session

from .world import FAST, World, close_keeping_spark

pytestmark = pytest.mark.spark

QUERY_A = "insert into t select id, name from s"
QUERY_B = "insert into t select id, name from s2"  # other streams: another logic


class Recorded(Attempt):
    """An :class:`Attempt` whose ``released`` lists the name of each release run so far,
    its rooms' parts included (read from the release log)."""

    def __init__(self, *args, caplog, **kw) -> None:
        super().__init__(*args, **kw)
        self._caplog = caplog

    @property
    def released(self) -> list[str]:
        return [r.args[1] for r in self._caplog.records
                if r.name == "streamjob.releases" and r.args[0] == self.job.qualified_name]


def _listeners(session) -> int:
    return len(session.streams._jsqm.listListeners())


class AttemptWorld(World):
    """File streams ``s`` and ``s2`` (JSON lines in ``root/in``) and a Parquet table ``t``."""

    def __init__(self, root: Path, caplog) -> None:
        super().__init__(root)
        self.caplog = caplog
        caplog.set_level(logging.DEBUG, logger="streamjob.releases")
        self.inbox = root / "in"
        self.inbox.mkdir()
        self.sessions = []
        self.run(f"""
CREATE STREAM s (id BIGINT, name STRING)
  TBLPROPERTIES ("source"="files", "path"="{self.inbox}", "format"="json");
CREATE STREAM s2 (id BIGINT, name STRING)
  TBLPROPERTIES ("source"="files", "path"="{self.inbox}", "format"="json");
CREATE TABLE t (id BIGINT, name STRING) STORED AS PARQUET LOCATION '{root / "out"}';""")

    def attempt(self, job: str, query: str, props: dict | None = None) -> Recorded:
        """An attempt of job ``job`` (created here if new) running ``query``."""
        props = {**FAST, **(props or {})}
        if self.catalog.get_job("default", job) is None:
            quoted = ", ".join(f'"{k}"="{v}"' for k, v in props.items())
            self.run(f'CREATE STREAMJOB {job} AS ("{query}") JOBPROPERTIES ({quoted});')
        info = self.catalog.get_job("default", job)
        plan = plan_job(self.catalog, self.home, "default", job, query, props)

        def session(conf, sources):
            clone = job_session(spark_session(self.home), conf, sources)
            self.sessions.append(clone)
            return clone
        self.caplog.clear()
        return Recorded(self.catalog, self.home, info, plan, CheckpointTracker(), session,
                        caplog=self.caplog)


@pytest.fixture
def world(tmp_path, caplog):
    w = AttemptWorld(tmp_path, caplog)
    yield w
    w.close()


def test_an_attempt_releases_what_it_built_in_reverse_order(world):
    world.write(world.inbox, [{"id": 1, "name": "a"}])
    with world.attempt("j", QUERY_A) as attempt:
        session = world.sessions[-1]
        assert attempt.query.isActive and _listeners(session) == 1
        attempt.query.processAllAvailable()
        assert attempt.checkpoint_dir == world.home.checkpoint_dir("default", "j")
    assert attempt.released == ["stopping the query", "removing the listener",
                                "closing the sink", "withdrawing the running mark",
                                "closing the checkpoint backend"]
    assert not attempt.query.isActive and _listeners(session) == 0
    attempt.close()  # a second close releases nothing again
    assert len(attempt.released) == 5


def test_an_attempt_without_durable_checkpoints_deletes_its_directory_last(world):
    with world.attempt("j", QUERY_A, {"morphling.job.enable.checkpoint": "false"}) as attempt:
        temporary = Path(attempt.checkpoint_dir)
        assert temporary.is_dir() and temporary != Path(world.home.checkpoint_dir("default", "j"))
    assert attempt.released[-1] == "deleting the temporary checkpoint"
    assert not temporary.exists()


def test_an_attempt_that_fails_halfway_releases_what_it_had_built(world):
    world.write(world.inbox, [{"id": 1, "name": "a"}])
    with world.attempt("j", QUERY_A) as first:
        first.query.processAllAvailable()
    # the same job with another logic: its checkpoint's fingerprint refuses it (step 2d),
    # after the session and the backend were built, before the sink and the query
    second = world.attempt("j", QUERY_B)
    with pytest.raises(StreamJobError, match="(?i)logic"):
        second.open()
    assert second.released == ["withdrawing the running mark", "closing the checkpoint backend"]
    assert second.query is None and second.sink is None and _listeners(world.sessions[-1]) == 0
    second.close()
    assert len(second.released) == 2


def test_a_run_plans_the_job_once_per_statement_and_once_per_attempt(world, monkeypatch):
    """CREATE + START executed as ``streamjob run`` does (checked whole, then executed),
    then the job runs here until idle: three plans (4 + 1 before issue 29), and Spark's
    streaming analysis once (at CREATE)."""
    from streamjob.planner import plan as plan_module
    from streamjob.client.session import ClientSession
    from streamjob.spark import analysis

    planned, analysed = [], []  # planned: (query, whether the statement's thread planned)
    real_analyze, real_refuse = plan_module.analyze, analysis.refuse_what_spark_refuses
    caller = threading.current_thread()
    monkeypatch.setattr(plan_module, "analyze", lambda q, *a, **k: planned.append(
        (q, threading.current_thread() is caller)) or real_analyze(q, *a, **k))
    monkeypatch.setattr(analysis, "refuse_what_spark_refuses",
                        lambda *a, **k: analysed.append(1) or real_refuse(*a, **k))
    world.write(world.inbox, [{"id": 1, "name": "a"}])
    session = ClientSession(world.catalog, world.home, host_jobs=True)
    session.host()  # as `streamjob run`: its Spark analyses CREATE STREAMJOB
    try:
        list(session.execute_script(
            f'CREATE STREAMJOB j AS ("{QUERY_A}") JOBPROPERTIES ("morphling.job.checkpoint.interval"="0");\n'
            "START STREAMJOB j;"))
        # one plan per statement (the runner's thread may have planned its attempt already)
        assert [q for q, statement in planned if statement] == [QUERY_A] * 2
        assert len(analysed) == 1
        session.manager.wait_until_idle(timeout=180)
        [runner] = session.manager.runners.values()
        assert runner.attempt is not None
        assert [q for q, statement in planned if not statement] == [QUERY_A]  # and one attempt
    finally:
        close_keeping_spark(session)
