"""A job host follows STOP from other clients (manager/liveness.py
HostRegistration.follow): with each heartbeat, a runner whose job's desired state is
STOPPED is asked to stop once. A job started again after such a stop has a new runner,
and a later STOP must reach that one too (the set of asked jobs once held uids, so a
restart before the next heartbeat left the new runner running for good)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import DesiredState
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.manager.liveness import HostRegistration

pytestmark = pytest.mark.unit


class Runner:
    """A job's runner as the host's watcher sees it: its job, alive until asked to stop
    (the thread a real JobRunner is)."""

    def __init__(self, job) -> None:
        self.job = job
        self.stopped = threading.Event()
        self.asked = 0

    def is_alive(self) -> bool:
        return not self.stopped.is_set()

    def request_stop(self, graceful: bool = True) -> None:
        self.asked += 1
        self.stopped.set()


class Runners:
    """The part of a JobManager the watcher reads: ``runners`` and ``running()``."""

    def __init__(self) -> None:
        self.runners: dict[str, Runner] = {}

    def running(self) -> list[Runner]:
        return [r for r in self.runners.values() if r.is_alive()]


def test_a_job_started_again_is_stopped_again_by_another_clients_stop(tmp_path):
    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home, None, principal="local:test")
    for sql in parse_script("""
        CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="127.0.0.1:9");
        CREATE TABLE out (a INT) TBLPROPERTIES ("connector"="console");
        CREATE STREAMJOB j AS ("insert into out select a from s");"""):
        ex.execute(sql)
    job = catalog.require_job("default", "j")
    host = HostRegistration(catalog, "local[1]")
    try:
        manager = Runners()
        host.follow(manager)
        first = manager.runners[job.uid] = Runner(job)
        catalog.update_job("default", "j", desired_state=DesiredState.STOPPED, uid=job.uid)
        host._follow_desired_states()
        assert first.asked == 1 and not first.is_alive()
        # started again before the next heartbeat: a new runner, the job wishes to run
        catalog.update_job("default", "j", desired_state=DesiredState.RUNNING, uid=job.uid)
        second = manager.runners[job.uid] = Runner(job)
        host._follow_desired_states()
        assert second.asked == 0  # it runs as wished
        catalog.update_job("default", "j", desired_state=DesiredState.STOPPED, uid=job.uid)
        host._follow_desired_states()
        assert second.asked == 1 and not second.is_alive()
        host._follow_desired_states()
        assert second.asked == 1  # asked once
    finally:
        host.close()
        catalog.close()
