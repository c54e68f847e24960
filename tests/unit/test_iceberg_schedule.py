"""Scheduled maintenance of Iceberg tables (issue 32): ``"optimize.interval"``,
``"vacuum.interval"`` and ``"vacuum.retain.hours"`` on a table STORED AS ICEBERG make
the server's MaintenanceService run OPTIMIZE and VACUUM through the executor, with an
operator's rights and every refusal of the statements, on real pyiceberg tables in the
home's SQL catalog (SQLite)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from streamjob.catalog import Catalog
from streamjob.connectors import lakehouse
from streamjob.connectors import spec as cspec
from streamjob.connectors.iceberg.catalog import load_table
from streamjob.connectors.iceberg.sink import IcebergSink
from streamjob.executor import Executor
from streamjob.executor.schedule import MaintenanceService
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.unit

HOUR = 3_600_000
COLS = [{"name": "id", "type": "BIGINT"}]


def _run(ex: Executor, text: str):
    for stmt in parse_script(text):
        ex.execute(stmt)


def _spec(ex, name):
    return cspec.spec_of_table(ex.catalog.get_table("default", name))


def _appends(ex, name: str, n: int, start: int = 0) -> None:
    """``n`` commits of one row each to Iceberg table ``name`` (one small file each)."""
    sink = IcebergSink(_spec(ex, name), COLS, f"default.{name}", f"{name}-app", False)
    sink.prepare()
    for i in range(start, start + n):
        sink.write_arrow(pa.table({"id": pa.array([i], pa.int64())}), i)


def _files(ex, name) -> int:
    return len(list(load_table(_spec(ex, name).ref).scan().plan_files()))


@pytest.fixture
def world(tmp_path):
    home = Home.open(tmp_path / "home", {})
    ex = Executor(Catalog(home.catalog_url), home)
    return home, ex


def test_iceberg_properties_reach_the_spec_and_the_schedule(world):
    home, ex = world
    _run(ex, f"""CREATE TABLE a (id BIGINT) STORED AS ICEBERG LOCATION '{home.root}/data/wh'
                 TBLPROPERTIES ("optimize.interval"="1 hour", "vacuum.interval"="1 day");
                 CREATE TABLE b (id BIGINT) STORED AS ICEBERG LOCATION '{home.root}/data/wh'
                 TBLPROPERTIES ("vacuum.interval"="1 day", "vacuum.retain.hours"="5");
                 CREATE TABLE c (id BIGINT) STORED AS ICEBERG LOCATION '{home.root}/data/wh';""")
    assert lakehouse.schedule(_spec(ex, "a")) == {"optimize": HOUR, "vacuum": 24 * HOUR,
                                                  "retain_hours": 120}
    assert lakehouse.schedule(_spec(ex, "b")) == {"vacuum": 24 * HOUR, "retain_hours": 5}
    assert lakehouse.schedule(_spec(ex, "c")) == {}


def test_iceberg_compacted_and_vacuumed_when_due_and_not_before(world):
    home, ex = world
    _run(ex, f"""CREATE TABLE t (id BIGINT) STORED AS ICEBERG LOCATION '{home.root}/data/wh'
                 TBLPROPERTIES ("optimize.interval"="1 hour", "vacuum.interval"="1 day",
                                "vacuum.retain.hours"="0");
                 CREATE TABLE plain (id BIGINT) STORED AS ICEBERG
                 LOCATION '{home.root}/data/wh';""")
    _appends(ex, "t", 3)
    _appends(ex, "plain", 3)
    assert lakehouse.last_maintained(_spec(ex, "t"), "optimize") is None
    svc = MaintenanceService(ex.catalog, home)
    now = svc._clock()
    got = {(n, w): o for n, w, o in svc.run_once(now)}
    assert set(got) == {("default.t", "optimize"), ("default.t", "vacuum")}, got
    assert _files(ex, "t") == 1 and _files(ex, "plain") == 3
    assert lakehouse.last_maintained(_spec(ex, "t"), "optimize") is not None
    assert lakehouse.last_maintained(_spec(ex, "t"), "vacuum") is None  # not recorded
    assert svc.run_once(now + HOUR - 1) == []  # neither due yet
    # a new server reads the last OPTIMIZE from the replace snapshot: not due; the
    # last VACUUM is recorded nowhere, so it vacuums once at its first check
    fresh = MaintenanceService(ex.catalog, home)
    assert [(n, w) for n, w, _ in fresh.run_once(now + 60_000)] == [("default.t", "vacuum")]
    assert fresh.run_once(now + 120_000) == []
    _appends(ex, "t", 2, start=10)
    assert [(n, w) for n, w, _ in svc.run_once(now + HOUR)] == [("default.t", "optimize")]
    assert _files(ex, "t") == 1
    assert [(n, w) for n, w, _ in svc.run_once(now + 24 * HOUR)] == [
        ("default.t", "optimize"), ("default.t", "vacuum")]


def test_iceberg_refusals_are_logged_and_retried(world, tmp_path, caplog):
    home, ex = world
    _run(ex, f"""CREATE TABLE o (id BIGINT) STORED AS ICEBERG LOCATION '{tmp_path}/outside'
                 TBLPROPERTIES ("optimize.interval"="1 day");""")
    _appends(ex, "o", 2)
    svc = MaintenanceService(ex.catalog, home)
    now = svc._clock()
    with caplog.at_level("WARNING"):
        [(name, what, outcome)] = svc.run_once(now)
    assert (name, what) == ("default.o", "optimize") and outcome.startswith("refused:")
    assert "streamjob.security.file.roots" in outcome
    assert "scheduled OPTIMIZE TABLE default.o" in caplog.text
    assert _files(ex, "o") == 2
    [(_, _, again)] = svc.run_once(now + 86_400_000)  # retried at the next due time
    assert again.startswith("refused:")
