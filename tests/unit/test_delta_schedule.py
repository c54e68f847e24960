"""Scheduled maintenance of Delta tables (issue 32): ``"optimize.interval"``,
``"vacuum.interval"`` and ``"vacuum.retain.hours"`` make the server's
MaintenanceService run OPTIMIZE and VACUUM through the executor, with an operator's
rights and every refusal of the statements, on real delta-rs tables."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from streamjob.catalog import Catalog
from streamjob.executor import Executor
from streamjob.executor.schedule import MaintenanceService
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.unit

HOUR = 3_600_000


def _run(ex: Executor, text: str):
    for stmt in parse_script(text):
        ex.execute(stmt)


def _files(path) -> int:
    return len(DeltaTable(str(path)).file_uris())


def _appends(path, n: int) -> None:
    for i in range(n):
        write_deltalake(str(path), pa.table({"id": [i]}), mode="append")


@pytest.fixture
def world(tmp_path):
    home = Home.open(tmp_path / "home", {})
    ex = Executor(Catalog(home.catalog_url), home)
    return home, ex


def test_optimize_runs_when_due_and_again_after_its_interval(world):
    home, ex = world
    t = home.root / "data" / "t"
    _run(ex, f"""CREATE TABLE t (id BIGINT) STORED AS DELTA LOCATION '{t}'
                 TBLPROPERTIES ("optimize.interval"="1 hour");
                 CREATE TABLE plain (id BIGINT) STORED AS DELTA LOCATION '{home.root}/data/p';""")
    _appends(t, 3)
    _appends(home.root / "data" / "p", 3)
    svc = MaintenanceService(ex.catalog, home)
    now = svc._clock()
    [(name, what, outcome)] = svc.run_once(now)
    assert (name, what) == ("default.t", "optimize") and "3 files" in outcome
    assert _files(t) == 1
    assert _files(home.root / "data" / "p") == 3  # no schedule
    assert svc.run_once(now + HOUR - 1) == []  # not due yet
    # a new server reads the last OPTIMIZE from the table's log: not due either
    assert MaintenanceService(ex.catalog, home).run_once(now + 60_000) == []
    _appends(t, 2)
    [(_, _, outcome)] = svc.run_once(now + HOUR)
    assert "3 files" in outcome  # the compacted one and the two new


def test_scheduled_vacuum_keeps_the_statements_refusals(world, tmp_path):
    home, ex = world
    inside, outside = home.root / "data" / "v", tmp_path / "outside"
    _run(ex, f"""CREATE TABLE v (id BIGINT) STORED AS DELTA LOCATION '{inside}'
                 TBLPROPERTIES ("vacuum.interval"="1 day", "vacuum.retain.hours"="0");
                 CREATE TABLE o (id BIGINT) STORED AS DELTA LOCATION '{outside}'
                 TBLPROPERTIES ("optimize.interval"="1 day");
                 CREATE STREAM vs (id BIGINT) STORED AS DELTA LOCATION '{inside}';
                 CREATE TABLE sink (id BIGINT) STORED AS DELTA LOCATION '{home.root}/data/s';
                 CREATE STREAMJOB reader AS ("insert into sink select id from vs");""")
    _appends(inside, 2)
    _appends(outside, 2)
    svc = MaintenanceService(ex.catalog, home)
    got = {(name, what): outcome for name, what, outcome in svc.run_once()}
    # outside the admin's file roots: an operator's rights do not reach it
    assert got[("default.o", "optimize")].startswith("refused:")
    assert "streamjob.security.file.roots" in got[("default.o", "optimize")]
    # a job reads the table as a Delta stream: RETAIN 0 HOURS is refused, as the statement
    assert got[("default.v", "vacuum")].startswith("refused:")
    assert "default.reader reads it as a Delta stream" in got[("default.v", "vacuum")]
    _run(ex, "DROP STREAMJOB reader;")
    DeltaTable(str(inside)).optimize.compact()  # two files are now removed ones
    later = MaintenanceService(ex.catalog, home).run_once(svc._clock() + 2 * 86_400_000)
    outcome = {(n, w): o for n, w, o in later}[("default.v", "vacuum")]
    assert "deleted 2 files" in outcome, outcome


def test_the_service_thread_runs_the_schedule_while_active_and_stops(world):
    """The server's thread (cli/server.py starts it beside the alerts): a look at once
    when active, none while not; stop() ends it."""
    import threading

    home, ex = world
    looked = threading.Event()

    class Watched(MaintenanceService):
        def run_once(self, now_ms=None):
            looked.set()
            return super().run_once(now_ms)

    asked, twice = [], threading.Event()

    def inactive() -> bool:  # the second question comes after a whole idle cycle
        asked.append(1)
        if len(asked) >= 2:
            twice.set()
        return False

    idle = Watched(ex.catalog, home, check_s=0.05, active=inactive).start()
    try:
        assert twice.wait(30) and not looked.is_set()
    finally:
        idle.stop()
    svc = Watched(ex.catalog, home, check_s=0.05).start()
    try:
        assert looked.wait(30)
    finally:
        svc.stop()
    assert not svc._thread.is_alive()
