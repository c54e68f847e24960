"""The SQL table sink against real databases: SQLite files and PostgreSQL (a fresh schema
per test at STREAMJOB_TEST_PG_URL or 127.0.0.1:5432/test; the tests fail, not skip, when
PostgreSQL is down). No Spark: the sink is called as the runner's foreachBatch would,
with an Arrow table per micro-batch (``write_arrow``) or row dicts (``write_batch``)."""

from __future__ import annotations

import datetime as dt
import os
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from streamjob.connectors.sql import sink as sql_sink
from streamjob.connectors.spec import SqlTableSpec
from streamjob.connectors.sql.sink import SqlSink
from streamjob.exceptions import ConnectorError, SchemaMismatch, ValidationError

pytestmark = pytest.mark.component

PG_URL = os.environ.get("STREAMJOB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")

COLS = [{"name": "id", "type": "bigint"}, {"name": "name", "type": "string"},
        {"name": "n", "type": "int"}]


@pytest.fixture(scope="module")
def pg_admin():
    """An engine on the test PostgreSQL database (fails the tests if unreachable)."""
    engine = sa.create_engine(PG_URL)
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT 1"))
    yield engine
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    """A sink database: a SQLite file, or a fresh PostgreSQL schema (with a password in
    the URL, which trust auth ignores, so that masking can be checked)."""
    if request.param == "sqlite":
        u = f"sqlite:///{tmp_path / 'sink.db'}"
        yield u
        _dispose(u)
        return
    admin = request.getfixturevalue("pg_admin")
    schema = f"sj_sink_{uuid.uuid4().hex[:12]}"
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    u = (make_url(PG_URL).set(password="s3cret")
         .update_query_dict({"options": f"-csearch_path={schema}"})
         .render_as_string(hide_password=False))
    try:
        yield u
    finally:
        _dispose(u)
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))


def _dispose(u: str) -> None:
    eng = sql_sink._ENGINES.pop(u, None)
    if eng is not None:
        eng.dispose()


def ddl(url: str, *statements: str) -> None:
    eng = sql_sink.engine_for(url)
    with eng.begin() as conn:
        for s in statements:
            conn.execute(sa.text(s))


def select(sink: SqlSink, order: str = "id") -> list[tuple]:
    """The sink table's rows read back through its own column types, ordered."""
    with sink.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.select(sink.table).order_by(sa.text(order)))]


def batch(ids, names=None, ns=None) -> pa.Table:
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array(names if names is not None else [f"r{i}" for i in ids], pa.string()),
        "n": pa.array(ns if ns is not None else [i % 7 for i in ids], pa.int32()),
    })


def sink_for(url, pk=(), exactly_once=True, upsert=False, cols=COLS, uid="job-1", table="t"):
    return SqlSink(SqlTableSpec(url, table, tuple(pk)), cols, uid,
                   exactly_once=exactly_once, upsert=upsert)


# -- creation and writes ---------------------------------------------------------------

def test_table_is_created_from_the_declared_schema(url):
    cols = COLS + [{"name": "amount", "type": "decimal(12,2)"}, {"name": "at", "type": "timestamp"},
                   {"name": "day", "type": "date"}, {"name": "ok", "type": "boolean"},
                   {"name": "raw", "type": "binary"}, {"name": "ratio", "type": "double"}]
    sink = sink_for(url, pk=("id",), upsert=True, cols=cols)
    sink.check()  # a missing table is fine, and check() creates nothing
    assert not sa.inspect(sink.engine).has_table("t")
    sink.prepare()
    insp = sa.inspect(sink.engine)
    have = {c["name"]: c["type"] for c in insp.get_columns("t")}
    assert list(have) == [c["name"] for c in cols]
    assert {name: sql_sink._column_family(t) for name, t in have.items()} == {
        c["name"]: sql_sink.type_family(c["type"]) for c in cols}
    assert insp.get_pk_constraint("t")["constrained_columns"] == ["id"]
    assert insp.has_table(sql_sink.MARKER_TABLE)
    # a restart finds its own table fitting
    sink_for(url, pk=("id",), upsert=True, cols=cols).prepare()


def test_append_writes_every_batch(url):
    sink = sink_for(url)
    sink.prepare()
    assert sink.write_arrow(batch(range(3)), 0) == 3
    assert sink.write_batch([{"ID": 3, "Name": "r3", "n": 3}], 1) == 1  # names in any case
    # a batch may omit declared columns: they stay NULL
    assert sink.write_arrow(pa.table({"id": pa.array([4], pa.int64())}), 2) == 1
    assert select(sink) == [(0, "r0", 0), (1, "r1", 1), (2, "r2", 2), (3, "r3", 3), (4, None, None)]
    assert sink.last_committed() == 2


def test_upsert_updates_existing_keys_last_row_wins(url):
    sink = sink_for(url, pk=("id",), upsert=True)
    sink.prepare()
    assert sink.write_arrow(batch([1, 2]), 0) == 2
    # key 2 updated, key 3 inserted; key 3 twice in one batch: the later row wins
    assert sink.write_arrow(batch([2, 3, 3], ["two", "x", "three"], [20, 0, 30]), 1) == 3
    assert sink.write_batch([{"id": 1, "name": "one", "n": 10}], 2) == 1
    assert select(sink) == [(1, "one", 10), (2, "two", 20), (3, "three", 30)]


def test_upsert_through_a_unique_index_of_an_existing_table(url):
    ddl(url, "CREATE TABLE t (seq INTEGER, id BIGINT, name VARCHAR(20), n NUMERIC(10,0), "
             "note TEXT, made INTEGER NOT NULL DEFAULT 0)",
        "CREATE UNIQUE INDEX t_id ON t (id)")
    # extra nullable / defaulted columns are fine; int declared into NUMERIC is fine
    sink = sink_for(url, pk=("id",), upsert=True)
    sink.prepare()
    sink.write_arrow(batch([1, 2]), 0)
    sink.write_arrow(batch([2], ["two"], [22]), 1)
    assert select(sink) == [(1, "r1", 1), (2, "two", 22)]


def test_replay_of_a_committed_batch_is_skipped(url):
    sink = sink_for(url, pk=("id",), upsert=True)
    sink.prepare()
    assert sink.write_arrow(batch([1]), 0) == 1
    assert sink.write_arrow(batch([1, 2], ["a", "b"]), 1) == 2
    # a crash after the sink committed batch 1 but before Spark recorded it: replayed
    assert sink.write_arrow(batch([1, 2], ["again", "again"]), 1) == 0
    assert sink.write_batch([{"id": 9, "name": "old", "n": 0}], 0) == 0
    assert select(sink) == [(1, "a", 1), (2, "b", 2)]
    assert sink.last_committed() == 1
    # an empty batch still advances the marker
    assert sink.write_arrow(batch([]), 2) == 0
    assert sink.last_committed() == 2
    # another incarnation of the job (new uid) starts afresh
    assert sink_for(url, pk=("id",), upsert=True, uid="job-2").write_arrow(batch([3]), 0) == 1


def test_at_least_once_writes_replays_again(url):
    sink = sink_for(url, exactly_once=False)
    sink.prepare()
    sink.write_arrow(batch([1]), 0)
    sink.write_arrow(batch([1]), 0)
    assert select(sink) == [(1, "r1", 1), (1, "r1", 1)]
    assert sink.last_committed() is None


@pytest.mark.parametrize("path", ["arrow", "dicts"])
def test_a_failed_write_leaves_neither_rows_nor_marker(url, path):
    sink = sink_for(url, pk=("id",))  # append into a table with a primary key
    sink.prepare()
    sink.write_arrow(batch([1, 2]), 0)
    bad = batch([3, 4, 1, 5])  # id 1 exists: the batch violates the key midway
    with pytest.raises(ConnectorError, match=r"writing batch 1 to SQL table 't' at .*failed"):
        sink.write_arrow(bad, 1) if path == "arrow" else sink.write_batch(bad.to_pylist(), 1)
    assert select(sink) == [(1, "r1", 1), (2, "r2", 2)]
    assert sink.last_committed() == 0
    # the replay of batch 1 (fixed upstream) then lands in full
    assert sink.write_arrow(batch([3, 4, 5]), 1) == 3
    assert [r[0] for r in select(sink)] == [1, 2, 3, 4, 5]
    assert sink.last_committed() == 1


def test_row_dicts_arrow_cannot_convert_go_to_the_database_as_they_are(url):
    sink = sink_for(url, pk=("id",), upsert=True)
    sink.prepare()
    assert sink.write_batch([], 0) == 0 and sink.last_committed() == 0
    # "7" for a bigint column: Arrow refuses it, the database casts it
    assert sink.write_batch([{"id": "7", "name": "seven", "n": 7}], 1) == 1
    assert sink.write_batch([{"id": 7, "name": "SEVEN", "n": 70}], 2) == 1
    assert select(sink) == [(7, "SEVEN", 70)]


def test_batch_with_an_undeclared_column_is_refused(url):
    sink = sink_for(url)
    sink.prepare()
    with pytest.raises(ConnectorError, match="undeclared column 'other'"):
        sink.write_arrow(batch([1]).append_column("other", pa.array([1])), 0)
    assert sink.last_committed() is None


def test_many_rows_in_one_batch(url):
    """20,000 rows per batch (COPY on PostgreSQL, chunked executemany on SQLite), append
    and upsert through the staging table."""
    n = 20_000
    sink = sink_for(url, pk=("id",), upsert=True)
    sink.prepare()
    assert sink.write_arrow(batch(range(n)), 0) == n
    # the second batch updates half the keys and adds 5,000 new ones
    assert sink.write_arrow(batch(range(n // 2, n + 5_000), ns=[1] * (n // 2 + 5_000)), 1) == n // 2 + 5_000
    with sink.engine.connect() as conn:
        count, total = conn.execute(sa.text("SELECT count(*), sum(n) FROM t")).one()
    assert count == n + 5_000
    assert total == sum(i % 7 for i in range(n // 2)) + n // 2 + 5_000
    appender = sink_for(url, table="t2", uid="job-3")
    appender.prepare()
    assert appender.write_arrow(batch(range(n)), 0) == n
    with appender.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(DISTINCT id), max(name) FROM t2")).one() == (n, "r9999")


# -- types -------------------------------------------------------------------------------

TYPED = [{"name": "id", "type": "int"}, {"name": "at", "type": "timestamp"},
         {"name": "day", "type": "date"}, {"name": "amount", "type": "decimal(12,2)"},
         {"name": "raw", "type": "binary"}, {"name": "ok", "type": "boolean"},
         {"name": "text", "type": "string"}, {"name": "ratio", "type": "double"},
         {"name": "big", "type": "bigint"}, {"name": "small", "type": "smallint"},
         {"name": "code", "type": "varchar(10)"}, {"name": "f", "type": "float"}]

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))
TYPED_ROWS = [
    {"id": 1, "at": dt.datetime(2024, 3, 1, 12, 30, 15, 123456, tzinfo=IST), "day": dt.date(2024, 2, 29),
     "amount": Decimal("12345.67"), "raw": b"\x00\x01\xff\\x", "ok": True,
     "text": 'quote " comma , newline \n tab \t back\\slash ünï €', "ratio": 0.1 + 0.2,
     "big": 2 ** 62, "small": -32768, "code": "AA", "f": 1.5},
    {"id": 2, "at": dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), "day": dt.date(1, 1, 1),
     "amount": Decimal("-0.01"), "raw": b"", "ok": False, "text": "", "ratio": -1e300,
     "big": -(2 ** 63), "small": 0, "code": "", "f": -0.25},
    {"id": 3, **{c["name"]: None for c in TYPED[1:]}},
]


@pytest.mark.parametrize("path", ["arrow", "dicts"])
def test_types_round_trip(url, path):
    sink = sink_for(url, cols=TYPED)
    sink.prepare()
    if path == "arrow":
        from streamjob.columntypes import arrow_schema

        schema = arrow_schema(TYPED).set(1, pa.field("at", pa.timestamp("us", tz="Asia/Kolkata")))
        sink.write_arrow(pa.Table.from_pylist(TYPED_ROWS, schema=schema), 0)
    else:
        sink.write_batch(TYPED_ROWS, 0)
    got = [dict(zip([c["name"] for c in TYPED], r)) for r in select(sink)]
    for row in got:  # SQLite keeps the UTC wall clock without an offset
        if row["at"] is not None and row["at"].tzinfo is None:
            row["at"] = row["at"].replace(tzinfo=dt.timezone.utc)
        if row["raw"] is not None:
            row["raw"] = bytes(row["raw"])
    assert got == TYPED_ROWS
    assert got[0]["at"].utcoffset() is not None and got[0]["at"] == TYPED_ROWS[0]["at"]
    assert got[1]["text"] == "" and got[2]["text"] is None  # empty string is not NULL


def test_naive_timestamps_are_taken_as_utc(url):
    cols = [{"name": "id", "type": "int"}, {"name": "at", "type": "timestamp"}]
    sink = sink_for(url, cols=cols)
    sink.prepare()
    naive = dt.datetime(2024, 5, 6, 7, 8, 9, 10)
    sink.write_arrow(pa.table({"id": pa.array([1], pa.int32()),
                               "at": pa.array([naive], pa.timestamp("us"))}), 0)
    sink.write_arrow(pa.table({"id": pa.array([2], pa.int32()),
                               "at": pa.array([naive], pa.timestamp("ns", tz="UTC"))}), 1)
    got = [r[1] for r in select(sink)]
    assert [g.replace(tzinfo=dt.timezone.utc) if g.tzinfo is None else g for g in got] == \
        [naive.replace(tzinfo=dt.timezone.utc)] * 2


# -- schema check -----------------------------------------------------------------------

MISMATCHES = {
    "missing column": ("CREATE TABLE t (id BIGINT, name TEXT)", False,
                       r"column 'n' is missing \(declared int\)", ("n",)),
    "incompatible type": ("CREATE TABLE t (id BIGINT, name INTEGER, n TEXT)", False,
                          r"column 'name' is declared string \(string\) but the table has "
                          r"INTEGER \(integer\); column 'n' is declared int \(integer\) but the "
                          r"table has TEXT \(string\)", ("name", "n")),
    "extra NOT NULL column": ("CREATE TABLE t (id BIGINT, name TEXT, n INT, extra INT NOT NULL)", False,
                              r"column 'extra' \(INTEGER NOT NULL, no default\) is not declared",
                              ("extra",)),
    "no unique key for the upsert": ("CREATE TABLE t (id BIGINT, name TEXT, n INT)", True,
                                     r"primary.key \(id\) has no primary key or unique index on "
                                     r"exactly those columns \(the table has: none\)", ("id",)),
    "key on other columns": ("CREATE TABLE t (id BIGINT, name TEXT, n INT, PRIMARY KEY (id, name))", True,
                             r"primary.key \(id\) has no .* \(the table has: \(id, name\)\)", ("id",)),
}


@pytest.mark.parametrize("kind", list(MISMATCHES))
def test_schema_mismatch_is_refused_before_the_job_starts(url, kind):
    create, upsert, pattern, columns = MISMATCHES[kind]
    ddl(url, create)
    sink = sink_for(url, pk=("id",), upsert=upsert)
    for call in (sink.check, sink.prepare):
        with pytest.raises(SchemaMismatch, match=pattern) as info:
            call()
        err = info.value
        assert isinstance(err, ValidationError) and not isinstance(err, ConnectorError)
        assert err.columns == columns
        text = str(err)
        assert "SQL table 't' at " in text and "Alter the table" in text
        assert "s3cret" not in text
        if url.startswith("postgresql"):
            assert "postgres:***@127.0.0.1:5432/test" in text
    assert not sa.inspect(sink.engine).has_table(sql_sink.MARKER_TABLE)  # nothing created


def test_upsert_key_must_be_declared(url):
    sink = sink_for(url, pk=("id", "carrier"), upsert=True)
    with pytest.raises(SchemaMismatch, match="primary.key column 'carrier' is not a declared column"):
        sink.check()


# -- unreachable ------------------------------------------------------------------------

def test_unreachable_database_names_the_masked_address():
    u = "postgresql+psycopg://u:pw@127.0.0.1:1/x"
    sink = sink_for(u)
    try:
        for call in (sink.check, sink.prepare, lambda: sink.write_arrow(batch([1]), 0),
                     sink.last_committed):
            with pytest.raises(ConnectorError, match=r"u:\*\*\*@127\.0\.0\.1:1/x") as info:
                call()
            assert not isinstance(info.value, SchemaMismatch)
            assert ":pw@" not in str(info.value)
    finally:
        _dispose(u)
