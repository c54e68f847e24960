"""OPTIMIZE and VACUUM of Delta tables (issue 32): the grammar (Delta Lake's spelling,
positions), what is refused before any file changes (another kind of table, a viewer,
the anonymous caller, an operator's table outside the admin's file roots, an unknown or
partition ZORDER column, a short retention while a job reads the table as a Delta
stream), and the work itself on a small real delta-rs table. The safety against a
job's checkpointed position, and no duplicate in a Delta stream after OPTIMIZE, are
tests/integration/test_delta_maintenance.py."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from streamjob.catalog import Catalog
from streamjob.catalog.records import Role
from streamjob.exceptions import (AccessDeniedError, ObjectInUseError, ParseError,
                                  StreamJobError)
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.grammar import statements as st
from streamjob.home import Home
from streamjob.security import PolicyError

pytestmark = pytest.mark.unit


@pytest.fixture
def home(tmp_path):
    return Home.open(tmp_path / "home", {})


def _run(ex: Executor, text: str):
    out = None
    for stmt in parse_script(text):
        out = ex.execute(stmt)
    return out


def _executor(home: Home, role: Role = Role.ADMIN, principal=None) -> Executor:
    return Executor(Catalog(home.catalog_url), home, role=role, principal=principal)


def _appends(path, n: int) -> None:
    for i in range(n):
        write_deltalake(str(path), pa.table({"id": [i, i + 100], "day": ["a", "b"],
                                             "v": [float(i), 1.0]}), mode="append")


@pytest.mark.parametrize("text, want", [
    ("OPTIMIZE TABLE t", st.OptimizeTable(st.QualifiedName("t"))),
    ("optimize db.t", st.OptimizeTable(st.QualifiedName("t", "db"))),
    ("OPTIMIZE t ZORDER BY (A, `b`)", st.OptimizeTable(st.QualifiedName("t"), ("a", "b"))),
    ("VACUUM TABLE t", st.VacuumTable(st.QualifiedName("t"))),
    ("vacuum t retain 0 hours", st.VacuumTable(st.QualifiedName("t"), 0)),
    ("VACUUM TABLE t RETAIN 200 HOURS DRY RUN", st.VacuumTable(st.QualifiedName("t"), 200, True)),
    ("VACUUM t DRY RUN", st.VacuumTable(st.QualifiedName("t"), None, True)),
])
def test_the_statements_parse_in_deltas_spelling(text, want):
    [got] = parse_script(text)
    assert got == want


@pytest.mark.parametrize("text, where, words", [
    ("OPTIMIZE t ZORDER BY (a,\n a)", (2, 2), "named twice"),
    ("VACUUM t RETAIN 99999999 HOURS", (1, 17), "RETAIN takes a number of hours"),
    ("VACUUM t RETAIN -1 HOURS", (1, 17), "unexpected"),
    ("VACUUM t DRY RUN RETAIN 1 HOURS", (1, 18), "unexpected"),
    ("OPTIMIZE t ZORDER (a)", (1, 19), "BY"),
])
def test_grammar_refusals_are_located(text, where, words):
    with pytest.raises(ParseError) as err:
        parse_script(text)
    assert (err.value.line, err.value.column) == where
    assert words in err.value.message


def test_optimize_compacts_and_reports_what_changed(home, tmp_path):
    ex = _executor(home)
    _run(ex, f"CREATE TABLE t (id BIGINT, day STRING, v DOUBLE) STORED AS DELTA "
             f"LOCATION '{tmp_path}/t';")
    _appends(tmp_path / "t", 4)
    before = DeltaTable(str(tmp_path / "t")).to_pandas().sort_values("id").reset_index(drop=True)
    result = _run(ex, "OPTIMIZE TABLE t;")
    dt = DeltaTable(str(tmp_path / "t"))
    assert len(dt.file_uris()) == 1 and dt.version() == 4
    data = result.to_json()
    assert (data["table"], data["operation"], data["version"], data["files_added"],
            data["files_removed"]) == ("default.t", "compact", 4, 1, 4)
    assert data["bytes_removed"] > 0 and data["bytes_added"] > 0
    assert result.rows == [("default.t", 4, 1, 4, data["bytes_added"], data["bytes_removed"], 1)]
    after = dt.to_pandas().sort_values("id").reset_index(drop=True)
    assert after.equals(before)
    again = _run(ex, "OPTIMIZE t ZORDER BY (v);").to_json()
    assert again["operation"] == "zorder" and again["zorder_by"] == ["v"]
    # VACUUM of no reader's table: Delta's default retention keeps the fresh removals
    kept = _run(ex, "VACUUM TABLE t DRY RUN;").to_json()
    assert (kept["files_deleted"], kept["retention_hours"], kept["dry_run"]) == (0, 168, True)
    listed = _run(ex, "VACUUM TABLE t RETAIN 0 HOURS DRY RUN;")
    assert listed.to_json()["files_deleted"] >= 4 and len(dt.file_uris()) >= 1
    assert all((tmp_path / "t" / f).exists() for f, _size in listed.rows)
    done = _run(ex, "VACUUM TABLE t RETAIN 0 HOURS;").to_json()
    assert done["files_deleted"] == listed.to_json()["files_deleted"] and not done["dry_run"]
    assert not any((tmp_path / "t" / f["path"]).exists() for f in done["files"])
    # the log still lists the removed files; what is gone is not counted again
    assert _run(ex, "VACUUM TABLE t RETAIN 0 HOURS;").to_json()["files_deleted"] == 0
    assert DeltaTable(str(tmp_path / "t")).to_pandas().sort_values("id") \
        .reset_index(drop=True).equals(before)


@pytest.mark.parametrize("text, where, words", [
    ("OPTIMIZE TABLE\n  p", (2, 3), "is a files (parquet) table"),
    ("VACUUM TABLE s", (1, 14), "is a stream"),
    ("VACUUM TABLE nope", (1, 14), "does not exist"),
    ("OPTIMIZE d ZORDER BY (id,\n idd)", (2, 2), "did you mean 'id'"),
    ("OPTIMIZE d ZORDER BY (day)", (1, 23), "partition column"),
    ("OPTIMIZE TABLE d", (1, 16), "no Delta table at"),
])
def test_refusals_name_their_reason_at_the_name(home, tmp_path, text, where, words):
    ex = _executor(home)
    _run(ex, f"""CREATE TABLE p (id BIGINT) STORED AS PARQUET LOCATION '{tmp_path}/p';
CREATE STREAM s (id BIGINT) STORED AS DELTA LOCATION '{tmp_path}/d';
CREATE TABLE d (id BIGINT, day STRING) STORED AS DELTA LOCATION '{tmp_path}/d'
  PARTITIONED BY (day);""")
    with pytest.raises(StreamJobError) as err:
        _run(ex, text)
    assert words in err.value.message
    assert (err.value.line, err.value.column) == where


@pytest.mark.parametrize("role, principal", [(Role.VIEWER, "token:v"),
                                             (Role.OPERATOR, "anonymous")])
@pytest.mark.parametrize("text", ["OPTIMIZE TABLE t", "VACUUM TABLE t DRY RUN"])
def test_a_viewer_and_the_anonymous_caller_are_refused(home, role, principal, text):
    _run(_executor(home), f"CREATE TABLE t (id BIGINT) STORED AS DELTA "
                          f"LOCATION '{home.root}/data/t';")
    write_deltalake(f"{home.root}/data/t", pa.table({"id": [1]}), mode="append")
    with pytest.raises(AccessDeniedError) as err:
        _run(_executor(home, role, principal), text)
    assert "changes a table's files" in err.value.message
    assert (err.value.line, err.value.column) == (1, 16 if "OPTIMIZE" in text else 14)


def test_an_operator_maintains_tables_under_the_file_roots_only(home, tmp_path):
    admin = _executor(home)
    _run(admin, f"""CREATE TABLE outside (id BIGINT) STORED AS DELTA LOCATION '{tmp_path}/o';
CREATE TABLE inside (id BIGINT) STORED AS DELTA LOCATION '{home.root}/data/i';""")
    for where in (tmp_path / "o", home.root / "data" / "i"):
        write_deltalake(str(where), pa.table({"id": [1]}), mode="append")
        write_deltalake(str(where), pa.table({"id": [2]}), mode="append")
    op = _executor(home, Role.OPERATOR, "token:ops")
    for text in ("OPTIMIZE TABLE outside", "VACUUM TABLE outside DRY RUN"):
        with pytest.raises(PolicyError) as err:
            _run(op, text)
        assert "streamjob.security.file.roots" in err.value.message
        assert err.value.column == (16 if "OPTIMIZE" in text else 14)
    assert _run(op, "OPTIMIZE TABLE inside").to_json()["files_removed"] == 2
    assert _run(admin, "OPTIMIZE TABLE outside").to_json()["files_removed"] == 2


def test_a_short_retention_is_refused_while_a_job_reads_the_table_as_a_stream(home, tmp_path):
    ex = _executor(home)
    _run(ex, f"""CREATE TABLE t (id BIGINT) STORED AS DELTA LOCATION '{tmp_path}/t';
CREATE STREAM ts (id BIGINT) STORED AS DELTA LOCATION 'file://{tmp_path}/t';
CREATE TABLE out (id BIGINT) STORED AS DELTA LOCATION '{tmp_path}/out';
CREATE STREAMJOB reader AS ("insert into out select id from ts");""")
    write_deltalake(str(tmp_path / "t"), pa.table({"id": [1]}), mode="append")
    with pytest.raises(ObjectInUseError) as err:
        _run(ex, "VACUUM TABLE t\nRETAIN 1 HOURS DRY RUN;")
    assert "streamjob default.reader reads it as a Delta stream" in err.value.message
    assert (err.value.line, err.value.column) == (2, 8)
    assert _run(ex, "VACUUM TABLE t RETAIN 168 HOURS DRY RUN;").to_json()["files_deleted"] == 0
    _run(ex, "DROP STREAMJOB reader;")
    assert _run(ex, "VACUUM TABLE t RETAIN 1 HOURS DRY RUN;").to_json()["files_deleted"] == 0
    # through a derived stream too
    _run(ex, """CREATE STREAM big AS SELECT id FROM ts WHERE id > 0;
CREATE STREAMJOB via_derived AS ("insert into out select id from big");""")
    with pytest.raises(ObjectInUseError) as err:
        _run(ex, "VACUUM TABLE t RETAIN 1 HOURS DRY RUN;")
    assert "streamjob default.via_derived reads it" in err.value.message


def test_a_dry_run_check_touches_no_file(home, tmp_path):
    ex = Executor(Catalog(home.catalog_url), home, dry_run=True)
    _run(ex, f"CREATE TABLE t (id BIGINT) STORED AS DELTA LOCATION '{tmp_path}/t';")
    _appends(tmp_path / "t", 0)
    assert "can be optimized" in _run(ex, "OPTIMIZE TABLE t").message
    assert "can be vacuumed" in _run(ex, "VACUUM TABLE t RETAIN 0 HOURS").message
    assert not (tmp_path / "t").exists()
