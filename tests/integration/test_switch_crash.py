"""A SIGKILL during a query switch or a savepoint (issue 30 point 5; docs/upgrades.md,
"A switch killed midway"; docs/reliability.md): real ``streamjob`` processes killed at
named points by the test-only crash sentinel ``STREAMJOB_TEST_CRASH_AT``
(streamjob/crashpoint.py), then restarted. One job copies a one-partition Kafka topic
into an SQLite table without a key (a replayed row would show twice), tagging each row
with the version of its query; in sequence:

1. killed after ALTER's graceful stop, before the catalog switch: the catalog still
   holds the old query with its pending switch; ``streamjob server --until-idle`` resumes
   it and runs the old query (and only it);
2. killed after the catalog switch, before the start: the server runs the new query
   (and only it);
3. killed while STOP ... WITH SAVEPOINT copies the checkpoint: no savepoint is listed;
   taking it again removes the partial copy and lists a whole savepoint. Then killed
   while CREATE SAVEPOINT copies the checkpoint of the running job: no savepoint is
   listed, the job is still meant to run and ``streamjob server --until-idle`` resumes
   it; CREATE SAVEPOINT again removes the partial copy and lists a whole savepoint.
4. killed in PROMOTE SHADOW after the catalog switch, before the start: the server runs
   the promoted query (and only it) from the switch point; PROMOTE again drops the
   scratch sinks.
5. killed in ALTER ... FROM EARLIEST (a change of source: a new checkpoint epoch) after
   the catalog switch, before the new epoch was prepared: the switch recorded the epoch
   to prepare; the server prepares it and runs the new query (and only it) from the
   topic's first record.

After each restart, every input record is in the table exactly once (pandas; in 5, once
more, from the new query), and the rows written after the restart all carry the one
version that ran."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pandas as pd
import pytest
import sqlalchemy as sa

from streamjob.catalog import Catalog
from streamjob.checkpoint import savepoint
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay

from .conftest import Cli

pytestmark = [pytest.mark.system, pytest.mark.slow]  # thirteen `streamjob` processes
#: Seconds this module takes on a fast host (the five crash scenarios and the two savepoint kills, 330-420 s on a loaded host): the slow tier hands it out
#: among the first (tests/conftest.py), so the run does not end on it.
EXPECTED_S = 300

SETUP = """
CREATE STREAM IF NOT EXISTS sw_k (id BIGINT)
TBLPROPERTIES("topic"="sw_k", "kafka.broker.list"="${{BROKER}}", "format"="json");
CREATE TABLE IF NOT EXISTS sw_out (id BIGINT, ver STRING)
TBLPROPERTIES("connector"="sql", "url"="sqlite:///{db}");
CREATE STREAMJOB IF NOT EXISTS sw_j AS ("insert into sw_out select id, 'v1' as ver from sw_k")
JOBPROPERTIES("morphling.job.checkpoint.interval"="0",
              "morphling.job.max.records.per.batch"="40");
START STREAMJOB sw_j;
"""

ALTER = """
START STREAMJOB sw_j;
ALTER STREAMJOB sw_j AS ("insert into sw_out select id, 'v2' as ver from sw_k");
"""

STOP_WITH_SAVEPOINT = """
START STREAMJOB sw_j;
STOP STREAMJOB sw_j WITH SAVEPOINT sp1;
"""

CREATE_SAVEPOINT = """
START STREAMJOB sw_j;
CREATE SAVEPOINT sp0 FOR STREAMJOB sw_j;
"""

ALTER_FROM_EARLIEST = """
CREATE STREAM IF NOT EXISTS sw_k2 (id BIGINT)
TBLPROPERTIES("topic"="sw_k", "kafka.broker.list"="${BROKER}", "format"="json");
START STREAMJOB sw_j;
ALTER STREAMJOB sw_j AS ("insert into sw_out select id, 'v4' as ver from sw_k2") FROM EARLIEST;
"""

PROMOTE = """
START STREAMJOB sw_j;
ALTER STREAMJOB sw_j AS ("insert into sw_out select id, 'v3' as ver from sw_k") WITH SHADOW
JOBPROPERTIES ('shadow.batches'='2', 'shadow.timeout'='60s');
PROMOTE SHADOW FOR STREAMJOB sw_j;
"""


def _send(bootstrap: str, ids: range) -> None:
    replay(bootstrap, "sw_k", [json.dumps({"id": i}).encode() for i in ids])


def _killed_at(cli: Cli, point: str, script) -> str:
    """Run ``streamjob run script`` until it SIGKILLs itself at ``point``; its output."""
    proc = cli.popen("run", str(script), BROKER=cli.bootstrap, STREAMJOB_TEST_CRASH_AT=point)
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        try:  # its Spark JVM, if the sentinel left it
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == -signal.SIGKILL, out
    return out


def _ok(res: subprocess.CompletedProcess) -> None:
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr


def _rows(db) -> pd.DataFrame:
    return pd.read_sql("select id, ver from sw_out", sa.create_engine(f"sqlite:///{db}"))


def _job(cli: Cli):
    with Catalog(Home.open(cli.home).catalog_url) as cat:
        job = cat.get_job("default", "sw_j")
        return job, cat.list_savepoints(job.uid)


def _statement(cli: Cli, sql: str) -> str:
    """Execute one statement against the home's catalog in this process (no job manager:
    a savepoint reads the checkpoint directory on this host's disk); its message."""
    home = Home.open(cli.home)
    with Catalog(home.catalog_url) as cat:
        return Executor(cat, home, principal="local:test").execute(parse_script(sql)[0]).message


def _exactly_once(rows: pd.DataFrame, upto: int) -> None:
    assert rows["id"].is_unique, rows[rows["id"].duplicated(keep=False)]  # nothing doubled
    assert sorted(rows["id"]) == list(range(upto))  # nothing lost


def test_a_kill_at_each_point_of_a_switch_or_savepoint_runs_exactly_one_version(
        tmp_path, broker):
    cli = Cli(tmp_path / "home", broker.bootstrap)
    db = tmp_path / "out.db"
    setup, alter = tmp_path / "setup.sql", tmp_path / "alter.sql"
    stop_sp, create_sp = tmp_path / "stop_sp.sql", tmp_path / "create_sp.sql"
    setup.write_text(SETUP.format(db=db))
    alter.write_text(ALTER)
    stop_sp.write_text(STOP_WITH_SAVEPOINT)
    create_sp.write_text(CREATE_SAVEPOINT)
    promote, finish = tmp_path / "promote.sql", tmp_path / "finish.sql"
    promote.write_text(PROMOTE)
    from_earliest = tmp_path / "from_earliest.sql"
    from_earliest.write_text(ALTER_FROM_EARLIEST)
    finish.write_text("PROMOTE SHADOW FOR STREAMJOB sw_j;\n")
    create_topic(broker.bootstrap, "sw_k", 1)
    _send(broker.bootstrap, range(0, 100))
    _ok(cli.run("run", str(setup), "--until-idle", BROKER=broker.bootstrap))
    _exactly_once(_rows(db), 100)

    # 1. after the graceful stop, before the catalog switch: the old query, only
    _send(broker.bootstrap, range(100, 200))
    _killed_at(cli, "upgrade.stopped", alter)
    job, _ = _job(cli)
    assert "'v1'" in job.query and job.pending_switch is not None  # the intent is durable
    assert job.pending_switch["version"] == 2
    _send(broker.bootstrap, range(200, 300))
    _ok(cli.run("server", "--until-idle"))
    job, _ = _job(cli)
    assert job.pending_switch is None and job.desired_state == "RUNNING"
    rows = _rows(db)
    _exactly_once(rows, 300)
    assert set(rows["ver"]) == {"v1"}  # never neither: the old query ran on; never both

    # 2. after the catalog switch, before the start: the new query, only
    _killed_at(cli, "upgrade.switched", alter)
    job, _ = _job(cli)
    assert "'v2'" in job.query and job.pending_switch is None
    assert job.desired_state == "RUNNING"
    _send(broker.bootstrap, range(300, 400))
    _ok(cli.run("server", "--until-idle"))
    rows = _rows(db)
    _exactly_once(rows, 400)
    assert set(rows[rows["id"] >= 300]["ver"]) == {"v2"}
    assert set(rows[rows["id"] < 300]["ver"]) == {"v1"}

    # 3. during the savepoint's copy: no half savepoint is listed
    _killed_at(cli, "savepoint.copy", stop_sp)
    job, savepoints = _job(cli)
    assert savepoints == []
    folder = savepoint.folder(Home.open(cli.home).checkpoint_dir("default", "sw_j"), "sp1")
    assert os.path.isdir(folder)  # the kill was mid-copy: files, and no manifest
    assert not os.path.exists(os.path.join(folder, savepoint.MANIFEST))
    out = cli.run("run", str(stop_sp), BROKER=broker.bootstrap)
    _ok(out)
    assert "stopped with savepoint sp1" in out.stdout + out.stderr
    job, savepoints = _job(cli)
    assert [sp.name for sp in savepoints] == ["sp1"]
    assert savepoint.missing(savepoints[0].location) == []  # whole
    # CREATE SAVEPOINT of the running job, killed mid-copy: nothing listed, still RUNNING
    _killed_at(cli, "savepoint.copy", create_sp)
    job, savepoints = _job(cli)
    assert [sp.name for sp in savepoints] == ["sp1"] and job.desired_state == "RUNNING"
    folder = savepoint.folder(Home.open(cli.home).checkpoint_dir("default", "sw_j"), "sp0")
    assert os.path.isdir(folder) and not os.path.exists(os.path.join(folder, savepoint.MANIFEST))
    _send(broker.bootstrap, range(400, 500))
    _ok(cli.run("server", "--until-idle"))  # resumes it: no START since the kill
    rows = _rows(db)
    _exactly_once(rows, 500)
    assert set(rows[rows["id"] >= 300]["ver"]) == {"v2"}
    msg = _statement(cli, "CREATE SAVEPOINT sp0 FOR STREAMJOB sw_j")  # taken again
    assert msg.startswith("savepoint sp0 of streamjob default.sw_j taken: checkpoint "), msg
    job, savepoints = _job(cli)
    assert sorted(sp.name for sp in savepoints) == ["sp0", "sp1"]
    assert job.desired_state == "RUNNING"
    assert [savepoint.missing(sp.location) for sp in savepoints] == [[], []]  # whole

    # 4. PROMOTE SHADOW killed after its catalog switch, before the start: the shadow
    # read the backlog beside the live job (40 records a batch); after the restart the
    # promoted query runs, only it, from the switch point
    _send(broker.bootstrap, range(500, 900))
    _killed_at(cli, "promote.switched", promote)
    job, _ = _job(cli)
    assert "'v3'" in job.query and job.pending_switch is None
    assert job.desired_state == "RUNNING"
    _send(broker.bootstrap, range(900, 1000))
    _ok(cli.run("server", "--until-idle"))
    rows = _rows(db)
    _exactly_once(rows, 1000)
    assert set(rows[rows["id"] < 500]["ver"]) == {"v1", "v2"}  # untouched
    late = rows[rows["id"] >= 500].sort_values("id")
    assert set(late["ver"]) <= {"v2", "v3"} and set(late[late["id"] >= 900]["ver"]) == {"v3"}
    # one switch point: v2 wrote a prefix of the backlog, v3 everything after it
    assert max(late[late["ver"] == "v2"]["id"], default=499) < min(late[late["ver"] == "v3"]["id"])
    assert "sw_out__shadow_sw_j" in sa.inspect(sa.create_engine(f"sqlite:///{db}")).get_table_names()
    _ok(cli.run("run", str(finish)))  # PROMOTE again finishes it: the scratch sinks go
    assert sa.inspect(sa.create_engine(f"sqlite:///{db}")).get_table_names().count(
        "sw_out__shadow_sw_j") == 0

    # 5. ALTER ... FROM EARLIEST killed after its catalog switch, before the new epoch:
    # the switch's transaction recorded the epoch to prepare; the server prepares it and
    # runs the new query, only it, from the topic's first record
    _killed_at(cli, "upgrade.switched", from_earliest)
    job, _ = _job(cli)
    assert "'v4'" in job.query and job.desired_state == "STOPPED"
    assert job.pending_switch["phase"] == "start_over" and job.pending_switch["run"]
    _send(broker.bootstrap, range(1000, 1100))
    _ok(cli.run("server", "--until-idle"))
    job, _ = _job(cli)
    assert job.pending_switch is None and job.desired_state == "RUNNING"  # never neither
    rows = _rows(db)
    _exactly_once(rows[rows["ver"] != "v4"], 1000)  # never both: v3 did not run again
    _exactly_once(rows[rows["ver"] == "v4"], 1100)  # the new epoch, from the first record
