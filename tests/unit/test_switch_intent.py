"""The durable intent of a query switch (issue 30 point 5; docs/upgrades.md, "A switch
killed midway"): ``Catalog.begin_switch`` records it with the stop, the switch's own
transaction clears it, and a switch whose process is gone is resumed once with the old
query (``manager/liveness.py``), on SQLite and PostgreSQL. A switch to a new checkpoint
epoch (FROM, WITH STATE RESET) killed after its transaction leaves a pending start over
that a server's recovery pass or START finishes (``executor/switch_finish.py``): the new
query runs in a new epoch, never on the old one (SQLite, no Spark)."""

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


# ------------------------------------------------- a switch to a new checkpoint epoch

EPOCH_SETUP = """
CREATE STREAM events (id INT, name STRING) TBLPROPERTIES ("topic"="t",
  "kafka.broker.list"="h:9092", "format"="json");
CREATE TABLE counts (name STRING, n BIGINT)
  TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{db}", "primary.key"="name");
CREATE STREAMJOB j AS ("insert into counts select name, count(*) from events group by name");
"""
REKEYED = "insert into counts select cast(id as string), count(*) from events group by id"


@pytest.fixture
def ex(tmp_path):
    """An executor without Spark or job manager on a SQLite catalog holding job j, whose
    checkpoint directory has an epoch of its own."""
    from streamjob.catalog import Catalog
    from streamjob.checkpoint import identity
    from streamjob.executor import Executor
    from streamjob.grammar import parse_script
    from streamjob.home import Home

    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home, principal="local:alice")
    for stmt in parse_script(EPOCH_SETUP.format(db=tmp_path / "out.db")):
        ex.execute(stmt)
    identity.start_over(home.checkpoint_dir("default", "j"), catalog.get_job("default", "j"),
                        None)
    yield ex
    catalog.close()


def _killed_after_switch(ex, start_from: str, run: bool, pid: int):
    """What ALTER STREAMJOB j AS (REKEYED) FROM ... leaves when its process (``pid``) is
    killed right after the switch (crash point ``upgrade.switched``): the stop's intent,
    then the switch's transaction, and no more. Returns the old epoch."""
    from streamjob.checkpoint import identity
    from streamjob.executor.switch_finish import start_over_intent

    job = ex.catalog.get_job("default", "j")
    if run:
        ex.catalog.update_job("default", "j", desired_state="RUNNING", uid=job.uid)
        ex.catalog.begin_switch(job.uid, _marker(pid))
    intent = {**start_over_intent(start_from, run), "pid": pid}
    ex.catalog.replace_job_query(job.uid, REKEYED, dict(job.properties), [],
                                 principal="local:alice", change="incompatible",
                                 start_over=intent)
    return identity.read(ex.home.checkpoint_dir("default", "j")).epoch


def _finish(ex):
    from streamjob.executor.switch_finish import finish_start_over

    return lambda job: finish_start_over(ex, job)


def test_a_kill_after_a_switch_from_earliest_leaves_the_new_query_to_run_on_a_new_epoch(
        ex, tmp_path):
    from streamjob.checkpoint import identity

    ckdir = ex.home.checkpoint_dir("default", "j")
    old_epoch = _killed_after_switch(ex, "earliest", run=True, pid=_dead_pid())
    job = ex.catalog.get_job("default", "j")
    # the switch's transaction holds the new query and the epoch still to prepare
    assert job.query == REKEYED and job.desired_state == "STOPPED"
    assert job.pending_switch["phase"] == "start_over"
    assert job.pending_switch["version"] == 2 and job.pending_switch["run"] is True
    assert "a start over (its new checkpoint epoch) is pending" in _described(ex.catalog,
                                                                               tmp_path)
    # a process without the executor (a shell's registration) leaves it alone: the new
    # query is never started on the old epoch
    assert resume_abandoned_switches(ex.catalog) == []
    assert ex.catalog.get_job("default", "j").desired_state == "STOPPED"
    # killed again midway through the finish (the epoch prepared, the catalog not):
    # the finish runs again
    ex._new_epoch(job, ex._plan("default", "j", REKEYED, job.properties, {}), "earliest")
    [finished] = resume_abandoned_switches(ex.catalog, finish=_finish(ex))
    assert finished.uid == job.uid
    job = ex.catalog.get_job("default", "j")
    assert job.pending_switch is None and job.desired_state == "RUNNING"  # never neither
    assert job.query == REKEYED
    new = identity.read(ckdir)
    assert new.epoch != old_epoch and new.start == "earliest"
    assert resume_abandoned_switches(ex.catalog, finish=_finish(ex)) == []  # once


def test_start_finishes_a_stopped_jobs_pending_start_over_and_a_live_switch_is_waited_for(ex):
    from streamjob.checkpoint import identity
    from streamjob.grammar import parse_script

    offsets = '{"t": {"0": 42}}'  # WITH STATE RESET: the final checkpoint's offsets
    old_epoch = _killed_after_switch(ex, offsets, run=False, pid=os.getpid())
    # this process's own switch is not a dead one's: a server leaves it alone
    assert resume_abandoned_switches(ex.catalog, finish=_finish(ex)) == []
    out = ex.execute(parse_script("START STREAMJOB j")[0])
    assert f"over from the offsets {offsets} (checkpoint epoch" in out.message
    job = ex.catalog.get_job("default", "j")
    assert job.pending_switch is None and job.desired_state == "RUNNING"
    new = identity.read(ex.home.checkpoint_dir("default", "j"))
    assert new.epoch != old_epoch and new.start == offsets


def test_alter_from_earliest_of_a_stopped_job_leaves_nothing_pending(ex):
    from streamjob.checkpoint import identity
    from streamjob.grammar import parse_script

    old = identity.read(ex.home.checkpoint_dir("default", "j")).epoch
    out = ex.execute(parse_script(f'ALTER STREAMJOB j AS ("{REKEYED}") FROM EARLIEST')[0])
    assert "at its next START it starts over from earliest (checkpoint epoch" in out.message
    job = ex.catalog.get_job("default", "j")
    assert job.pending_switch is None and job.desired_state != "RUNNING"
    assert identity.read(ex.home.checkpoint_dir("default", "j")).epoch != old
