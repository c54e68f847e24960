"""Property-based: generated and mutated statements never escape as anything but the
project's own errors, and every error says where it is.

The parser and the validator (a dry-run executor on a scratch catalog) get statements
built from the grammar's pieces and the registry's properties, and corpus scripts
mutated at random (characters and tokens deleted, inserted, swapped, duplicated). The
default suite runs a few hundred examples; the ``slow`` test runs 10,000 (CI runs it).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from streamjob import properties as registry
from streamjob.client.check import scratch_catalog
from streamjob.exceptions import StreamJobError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.unit
#: Seconds the ``slow`` test takes on a fast host: a unit module would otherwise be handed
#: out last in the slow tier, which would end on it (tests/conftest.py).
EXPECTED_S = 170

CORPUS = Path(__file__).parent.parent / "corpus"
SCRIPTS = [p.read_text() for p in sorted((CORPUS / "valid").glob("*.sql"))]

SETUP = """
CREATE STREAM s (a INT, b STRING, ts TIMESTAMP) TBLPROPERTIES ("topic"="t",
  "kafka.broker.list"="h:9092", "watermark.column"="ts", "watermark.delay"="5 seconds");
CREATE STREAM r (value BIGINT, timestamp TIMESTAMP) TBLPROPERTIES ("source"="rate");
CREATE TABLE t (a INT, b STRING);
CREATE TABLE agg (b STRING, n BIGINT) TBLPROPERTIES ("connector"="sql",
  "url"="sqlite:///x.db", "primary.key"="b");
CREATE STREAMJOB j AS ("insert into t select a, b from s");
"""

KEYWORDS = ["CREATE", "STREAM", "TABLE", "STREAMJOB", "AS", "SELECT", "INSERT", "INTO",
            "FROM", "WHERE", "GROUP", "BY", "TBLPROPERTIES", "JOBPROPERTIES", "START", "STOP",
            "DROP", "ALTER", "SET", "RESET", "DESCRIBE", "SHOW", "LIST", "STREAMJOBS",
            "CHECKPOINTS", "FOR", "CHECKPOINT", "IF", "NOT", "EXISTS", "ROW", "FORMAT",
            "DELIMITED", "FIELDS", "TERMINATED", "STORED", "LOCATION", "STREAMWINDOW",
            "LENGTH", "SLIDE", "SECOND", "window", "count(*)", "JOIN", "ON", "UNION"]
PUNCT = ["(", ")", ",", ";", "=", ".", "'", '"', "`", "--", "/*", "*/", "\\", "'\\001'",
         "${X}", "<", ">", ":", "*", "\n", " ", "\t", "é", "\x00", "0", "-1", "99999999999999999999"]
NAMES = ["s", "r", "t", "agg", "j", "x", "default.s", "db2.t", "`select`", "`a b`", "a", "b",
         "ts", "value", "nope"]
TYPES = ["int", "string", "bigint", "double", "timestamp", "decimal(10,2)", "array<int>",
         "map<string,int>", "struct<a:int>", "strng", "varchar(5)"]
PROP_NAMES = [p.name for p in registry.JOB] + [p.name for p in registry.CONNECTOR] + [
    "spark.sql.shuffle.partitions", "morphling.bogus", "topic2"]
VALUES = ["true", "FALSE", "0", "-1", "60000", "1 s", "10 seconds", "earliest", "zookeeper",
          "json", "raw", "files", "sql", "", "x", "a,b", "h:9092", "1e9"]

name = hs.sampled_from(NAMES)
value = hs.sampled_from(VALUES)
props = hs.lists(hs.tuples(hs.sampled_from(PROP_NAMES), value), max_size=4).map(
    lambda kv: "(" + ", ".join(f'"{k}"="{v}"' for k, v in kv) + ")")
columns = hs.lists(hs.tuples(name, hs.sampled_from(TYPES)), min_size=1, max_size=4).map(
    lambda cs: "(" + ", ".join(f"{n} {t}" for n, t in cs) + ")")
select = hs.builds(
    lambda cols, src, window, where, group: (
        f"select {cols} from {src}{window}{where}{group}"),
    hs.sampled_from(["a", "a, b", "*", "b, count(*)", "x", "upper(b)", "a + 1, b"]),
    name,
    hs.sampled_from(["", " STREAMWINDOW w AS (LENGTH '10' SECOND)",
                     " streamwindow w as (length '1' minute slide '30' second)",
                     " STREAMWINDOW w AS (LENGTH '0' SECOND)", " STREAMWINDOW w"]),
    hs.sampled_from(["", " where a > 1", " where nope = 1", " where"]),
    hs.sampled_from(["", " group by b", " group by window(ts, '10 seconds'), b"]),
)
statement = hs.one_of(
    hs.builds(lambda n, c, p: f"CREATE STREAM {n} {c} TBLPROPERTIES {p}", name, columns, props),
    hs.builds(lambda n, q: f"CREATE STREAM {n} AS {q}", name, select),
    hs.builds(lambda n, c, p: f"CREATE TABLE IF NOT EXISTS {n} {c} TBLPROPERTIES {p}",
              name, columns, props),
    hs.builds(lambda n, tgt, q, p: f'CREATE STREAMJOB {n} AS ("insert into {tgt} {q}") '
              f"JOBPROPERTIES {p}", name, name, select, props),
    hs.builds(lambda verb, n: f"{verb} {n}", hs.sampled_from(
        ["START STREAMJOB", "STOP STREAMJOB", "DROP STREAMJOB IF EXISTS", "DESCRIBE STREAMJOB",
         "SHOW CHECKPOINTS FOR STREAMJOB", "DESCRIBE", "DROP STREAM", "DROP TABLE IF EXISTS"]),
        name),
    hs.builds(lambda n, c: f"START STREAMJOB {n} FROM CHECKPOINT {c}", name,
              hs.integers(0, 10**20)),
    hs.builds(lambda n, p: f"ALTER STREAMJOB {n} SET JOBPROPERTIES {p}", name, props),
    hs.builds(lambda k, v: f"SET {k} = {v}", hs.sampled_from(PROP_NAMES), value),
    hs.sampled_from(["SET", "RESET", "LIST STREAMJOBS", "SHOW STREAMS", "SHOW TABLES"]),
)
generated = hs.lists(statement, min_size=1, max_size=4).map(lambda xs: ";\n".join(xs) + ";")


@hs.composite
def mutated(draw):
    """A corpus script or a generated one, cut and mutated."""
    text = draw(hs.one_of(hs.sampled_from(SCRIPTS), generated))
    for _ in range(draw(hs.integers(1, 4))):
        pos = draw(hs.integers(0, len(text)))
        op = draw(hs.sampled_from(["delete", "insert", "swap", "duplicate", "truncate"]))
        if op == "delete":
            text = text[:pos] + text[pos + draw(hs.integers(1, 12)):]
        elif op == "insert":
            piece = draw(hs.one_of(hs.sampled_from(KEYWORDS + PUNCT + NAMES), hs.text(max_size=3)))
            text = text[:pos] + piece + text[pos:]
        elif op == "swap":
            other = draw(hs.integers(0, len(text)))
            a, b = sorted((pos, other))
            text = text[:a] + text[b:b + 5] + text[a + 5:b] + text[a:a + 5] + text[b + 5:]
        elif op == "duplicate":
            text = text[:pos] + text[pos:pos + draw(hs.integers(1, 40))] + text[pos:]
        else:
            text = text[:pos]
    return text


class Harness:
    """A scratch catalog with SETUP, put back to it after every example that changed it.

    The scratch catalog is one in-memory SQLite connection (StaticPool): SQLite's own
    change counter (``total_changes``) says whether an example wrote anything, and its
    backup API copies the SETUP state kept at the start back over the live database (a
    few pages), where reading and dropping what an example left behind through the
    catalog cost more than the example itself."""

    def __init__(self, home: Home):
        self.catalog = scratch_catalog(None)
        self.home = home
        for stmt in parse_script(SETUP):
            Executor(self.catalog, home, dry_run=True).execute(stmt)
        raw = self.catalog._engine.raw_connection()  # noqa: SLF001 - the scratch's one connection
        self.db = raw.driver_connection  # sqlite3.Connection, shared with the catalog
        raw.close()  # back to the StaticPool; the connection stays open
        self.base = self._names()
        self.saved = sqlite3.connect(":memory:")
        self.db.backup(self.saved)
        self.restores = 0

    def _names(self):
        c = self.catalog
        return ({f"{j.qualified_name}#{j.uid}" for j in c.list_jobs()},
                {s.qualified_name for s in c.list_streams()},
                {t.qualified_name for t in c.list_tables()})

    def run(self, text: str) -> None:
        """Parse ``text`` and dry-run its statements; every error must say where it is.
        The catalog is put back to SETUP afterwards when the example wrote to it."""
        try:
            statements = parse_script(text)
        except StreamJobError as exc:
            assert exc.line is not None and exc.column is not None, exc
            return
        before = self.db.total_changes
        try:
            executor = Executor(self.catalog, self.home, dry_run=True)
            for stmt in statements:
                try:
                    executor.execute(stmt)
                except StreamJobError as exc:
                    assert exc.line is not None and exc.column is not None, exc
                    assert exc.message
        finally:
            if self.db.total_changes != before:
                self.restore()

    def restore(self) -> None:
        """SETUP's state copied back over the live database (no transaction is open
        between two catalog calls)."""
        self.saved.backup(self.db)
        self.restores += 1


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return Harness(Home.open(tmp_path_factory.mktemp("fuzz-home")))


def _fuzz(harness, examples: int):
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(hs.one_of(generated, mutated()))
    def check(text):
        harness.run(text)

    check()


def test_fuzz_quick(harness):
    _fuzz(harness, 300)
    assert harness.restores > 0  # some examples wrote to the catalog ...
    assert harness._names() == harness.base  # ... and it is SETUP again after them


@pytest.mark.slow
def test_fuzz_10000_statements(harness):
    _fuzz(harness, 10_000)
