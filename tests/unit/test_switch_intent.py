"""The durable intent of a query switch (issue 30 point 5; docs/upgrades.md, "A switch
killed midway"): ``Catalog.begin_switch`` records it with the stop, the switch's own
transaction clears it, and a switch whose process is gone is resumed once with the old
query (``manager/liveness.py``), on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import sys

import pytest

from streamjob import crashpoint
from streamjob.manager.liveness import resume_abandoned_switches, switch_abandoned

from .catalog_helpers import _job

pytestmark = pytest.mark.component


def _marker(pid: int, host: str | None = None, at: dt.datetime | None = None) -> dict:
    return {"version": 2, "host": host or socket.gethostname(), "pid": pid, "owner": None,
            "at": (at or dt.datetime.now(dt.timezone.utc)).isoformat()}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _described(catalog, tmp_path) -> str:
    """DESCRIBE STREAMJOB j's overview rows, as text."""
    from streamjob.executor import Executor
    from streamjob.grammar import parse_script
    from streamjob.home import Home

    (tmp_path / "home").mkdir(exist_ok=True)
    ex = Executor(catalog, Home.open(tmp_path / "home"), None)
    result = ex.execute(parse_script("DESCRIBE STREAMJOB j")[0])
    return repr(result.rows) + repr([p.rows for p in result.sections])


def test_the_switch_clears_the_intent_and_a_dead_switcher_resumes_the_old_query(catalog,
                                                                                 tmp_path):
    _job(catalog, "j")
    job = catalog.get_job("default", "j")
    old_query = job.query
    stopping = catalog.begin_switch(job.uid, _marker(_dead_pid()))
    assert stopping.desired_state == "STOPPED" and stopping.pending_switch["version"] == 2
    assert catalog.get_job("default", "j").pending_switch == stopping.pending_switch
    assert "pending switch" in _described(catalog, tmp_path)

    resumed = resume_abandoned_switches(catalog)
    assert [j.uid for j in resumed] == [job.uid]
    again = catalog.get_job("default", "j")
    assert again.desired_state == "RUNNING" and again.pending_switch is None
    assert again.query == old_query
    assert [v.version for v in catalog.list_job_versions(job.uid)] == [1]
    assert resume_abandoned_switches(catalog) == []  # once

    # a switch that committed: its transaction cleared the intent; nothing is undone
    catalog.begin_switch(job.uid, _marker(_dead_pid()))
    switched, version = catalog.replace_job_query(
        job.uid, "insert into t select * from s -- v2", {}, [], principal=None,
        change="stateless", desired_state="RUNNING")
    assert version == 2 and switched.pending_switch is None
    assert resume_abandoned_switches(catalog) == []
    assert catalog.get_job("default", "j").query.endswith("v2")


def test_a_live_switcher_is_never_overtaken_and_a_newer_switch_is_not_undone(catalog):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    mine = _marker(os.getpid())
    catalog.begin_switch(uid, mine)
    assert not switch_abandoned(catalog, mine)
    assert resume_abandoned_switches(catalog) == []
    assert catalog.get_job("default", "j").desired_state == "STOPPED"
    # compare-and-set on the marker: an older one's resume does nothing
    assert catalog.resume_switch(uid, "2000-01-01T00:00:00+00:00") is None
    assert catalog.get_job("default", "j").pending_switch == mine


def test_another_hosts_unregistered_switcher_is_gone_after_the_ttl(catalog):
    now = dt.datetime.now(dt.timezone.utc)
    assert not switch_abandoned(catalog, _marker(1, "elsewhere.example", now))
    assert switch_abandoned(catalog, _marker(1, "elsewhere.example",
                                             now - dt.timedelta(seconds=600)))


def test_the_crash_sentinel_names_only_known_points(monkeypatch):
    monkeypatch.delenv(crashpoint.ENV, raising=False)
    for point in crashpoint.POINTS:
        crashpoint.reached(point)  # not set: nothing happens
    with pytest.raises(ValueError):
        crashpoint.reached("nowhere")
    proc = subprocess.run([sys.executable, "-c", "from streamjob import crashpoint; "
                           "crashpoint.reached('savepoint.copy'); print('survived')"],
                          env={**os.environ, crashpoint.ENV: "savepoint.copy"},
                          capture_output=True, text=True)
    assert proc.returncode == -9 and "survived" not in proc.stdout
