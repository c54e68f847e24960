"""The SQL table sink: rows of each micro-batch written through SQLAlchemy.

Exactly-once (DESIGN §6): each batch is written in ONE database transaction holding

1. a check of the job's commit marker — if this batch id is not above the last committed
   one, the batch is a replay of a committed checkpoint and is skipped;
2. the rows (append, or upsert on the primary key);
3. the new commit marker ``(job uid, table) -> batch id``.

Spark re-runs an uncommitted batch with the same id and the same source offsets after a
crash, so either the whole batch (rows and marker) is in the database or none of it, and
a replay never doubles it. At-least-once (``morphling.result.auto.flush=true``) skips
the marker: rows land as produced and a replay may repeat them (an upsert on a primary
key makes that harmless).

The marker table ``streamjob_sink_commits`` lives in the sink's own database, because
it must commit in the same transaction as the rows.

How rows travel (:meth:`SqlSink.write_arrow`, the fast path fed with ``df.toArrow()``):

* PostgreSQL through psycopg 3: the Arrow batch is rendered as CSV by Arrow's own writer
  and streamed with ``COPY ... FROM STDIN``; an upsert COPYs into a temporary table
  (``ON COMMIT DROP``) and then runs ``INSERT ... SELECT ... ON CONFLICT DO UPDATE``.
  Both happen on the same connection and in the same transaction as the marker.
* SQLite: ``executemany`` of prepared tuples, converted column by column from Arrow into
  the storage SQLAlchemy itself uses (timestamps as UTC text ``YYYY-MM-DD HH:MM:SS.ffffff``,
  dates as ``YYYY-MM-DD``, decimals as REAL, booleans as 0/1), in chunks.
* Any other database (or driver): SQLAlchemy ``executemany`` of row dicts, in chunks.

Timestamps are instants: timezone-aware values are stored as that instant (SQLite keeps
the UTC wall clock without an offset), naive values are taken as UTC.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import logging
import re
from typing import Any, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from ..exceptions import ConnectorError, SchemaMismatch, ValidationError
from .spec import SqlTableSpec

__all__ = ["SqlSink", "SchemaMismatch", "engine_for", "sql_type", "type_family",
           "MARKER_TABLE"]

log = logging.getLogger(__name__)

MARKER_TABLE = "streamjob_sink_commits"
INSERT_CHUNK_ROWS = 5_000     # rows per executemany on the generic path
SQLITE_CHUNK_ROWS = 20_000    # rows converted and inserted at a time on SQLite
COPY_CHUNK_ROWS = 50_000      # rows rendered as CSV at a time for PostgreSQL's COPY
STAGE_TABLE = "streamjob_stage"

_ENGINES: dict[str, Engine] = {}


def engine_for(url: str) -> Engine:
    """One pooled engine per URL per process (SQLite: 30 s busy timeout).

    Raises:
        ConnectorError: the URL is malformed or names a driver that is not installed
            (the message shows the URL with its password masked).
    """
    eng = _ENGINES.get(url)
    if eng is None:
        kwargs: dict[str, Any] = {}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
        try:
            eng = sa.create_engine(url, **kwargs)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise ConnectorError(f"bad SQL table URL {_mask(url)}: {exc}") from None
        _ENGINES[url] = eng
    return eng


def _mask(url: str) -> str:
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - any unparsable URL is shown masked wholesale
        return re.sub(r":[^:@/]+@", ":***@", url)


def _norm(type_text: str) -> str:
    return re.sub(r"\s+", "", type_text).lower()


_DECIMAL = re.compile(r"^(?:decimal|numeric|dec)(?:\((\d+)(?:,(\d+))?\))?$")
_SIZED_STRING = re.compile(r"^(?:var)?char\((\d+)\)$")
_COMPLEX = re.compile(r"^(?:array|map|struct)<")


def sql_type(type_text: str) -> sa.types.TypeEngine:
    """The SQLAlchemy column type for a StreamSQL type (``decimal`` alone is
    ``decimal(10,0)`` as in Hive; complex types are stored as JSON text)."""
    t = _norm(type_text)
    simple = {
        "tinyint": sa.SmallInteger(), "byte": sa.SmallInteger(), "smallint": sa.SmallInteger(),
        "short": sa.SmallInteger(), "int": sa.Integer(), "integer": sa.Integer(),
        "bigint": sa.BigInteger(), "long": sa.BigInteger(),
        "float": sa.Float(), "real": sa.Float(), "double": sa.Double(),
        "boolean": sa.Boolean(), "bool": sa.Boolean(), "string": sa.Text(), "date": sa.Date(),
        "timestamp": sa.DateTime(timezone=True), "timestamp_ntz": sa.DateTime(timezone=False),
        "binary": sa.LargeBinary(),
    }
    if t in simple:
        return simple[t]
    m = _DECIMAL.match(t)
    if m:
        return sa.Numeric(int(m.group(1) or 10), int(m.group(2) or 0))
    m = _SIZED_STRING.match(t)
    if m:
        return sa.String(int(m.group(1)))
    return sa.Text()


# -- type families (the schema check) ------------------------------------------------

_DECLARED_FAMILY = {
    "tinyint": "integer", "byte": "integer", "smallint": "integer", "short": "integer",
    "int": "integer", "integer": "integer", "bigint": "integer", "long": "integer",
    "float": "floating", "real": "floating", "double": "floating",
    "boolean": "boolean", "bool": "boolean", "string": "string", "date": "date",
    "timestamp": "timestamp", "timestamp_ntz": "timestamp", "binary": "binary",
}


def type_family(type_text: str) -> str:
    """The family of a declared StreamSQL type: ``integer``, ``floating``, ``decimal``,
    ``string``, ``boolean``, ``date``, ``timestamp`` or ``binary`` (complex types and
    unknown names are ``string``: they are stored as text)."""
    t = _norm(type_text)
    if t in _DECLARED_FAMILY:
        return _DECLARED_FAMILY[t]
    if _DECIMAL.match(t):
        return "decimal"
    return "string"


def _column_family(col_type: sa.types.TypeEngine) -> str | None:
    """The family of a reflected column type; None when the database did not say
    (an untyped SQLite column, which stores anything); ``other`` for types outside
    the families (JSON, UUID, interval, time, ...)."""
    if isinstance(col_type, sa.types.NullType):
        return None
    for cls, family in ((sa.Boolean, "boolean"), (sa.Integer, "integer"),
                        (sa.Float, "floating"), (sa.Numeric, "decimal"),
                        (sa.DateTime, "timestamp"), (sa.Date, "date"),
                        (sa.Enum, "other"), (sa.String, "string"),
                        (sa.LargeBinary, "binary")):
        if isinstance(col_type, cls):
            return family
    return "other"


def _compatible(declared: str, actual: str | None) -> bool:
    """Same family, or an integer declared into a decimal (NUMERIC) column; a column of
    unknown type (untyped SQLite) takes anything."""
    return actual is None or actual == declared or (declared == "integer" and actual == "decimal")


def _type_text(col_type: sa.types.TypeEngine, dialect) -> str:
    try:
        return col_type.compile(dialect=dialect)
    except Exception:  # noqa: BLE001 - some reflected types cannot compile; show repr
        return repr(col_type)


class SqlSink:
    """Writes micro-batches of one job into one SQL table.

    Args:
        spec: the table's connector spec (URL, table name, primary key).
        columns: the declared columns ``[{"name", "type"}, ...]``, in order.
        job_uid: the job incarnation's uid (markers are keyed by it, so a recreated job
            with the same name starts afresh).
        exactly_once: write the commit marker and skip replays (else at-least-once).
        upsert: update rows whose primary key exists (aggregations in update mode);
            ignored without a primary key.

    Call :meth:`check` to refuse a mismatching table before a job starts,
    :meth:`prepare` when it starts, then :meth:`write_arrow` (or :meth:`write_batch`)
    once per micro-batch.
    """

    def __init__(self, spec: SqlTableSpec, columns: Sequence[dict], job_uid: str,
                 exactly_once: bool, upsert: bool) -> None:
        self.spec = spec
        self.columns = [dict(c) for c in columns]
        self.job_uid = job_uid
        self.exactly_once = exactly_once
        self.upsert = upsert and bool(spec.primary_key)
        self.metadata = sa.MetaData()
        self.table = sa.Table(
            spec.table, self.metadata,
            *[sa.Column(c["name"], sql_type(c["type"]), primary_key=c["name"].lower() in spec.primary_key)
              for c in self.columns],
        )
        self.marker = sa.Table(
            MARKER_TABLE, self.metadata,
            sa.Column("job_uid", sa.String(64), primary_key=True),
            sa.Column("table_name", sa.String(255), primary_key=True),
            sa.Column("batch_id", sa.BigInteger, nullable=False),
            sa.Column("committed_at", sa.DateTime(timezone=True), nullable=False),
        )
        self._by_lower = {c["name"].lower(): c["name"] for c in self.columns}

    @property
    def engine(self) -> Engine:
        return engine_for(self.spec.url)

    # -- schema -----------------------------------------------------------------------

    def check(self) -> None:
        """Check that the table, if it exists, fits the declaration; create nothing.

        A missing table is fine (:meth:`prepare` creates it). An existing one must have

        * every declared column (names compared case-insensitively);
        * for each, a type of the same family as the declared StreamSQL type
          (:func:`type_family`: integer, floating, decimal, string, boolean, date,
          timestamp, binary), except that an integer declared into a NUMERIC/DECIMAL
          column is fine (exact); lengths, precisions and widths are not compared;
          a column of unknown type (an untyped SQLite column) takes anything;
        * no undeclared column that is NOT NULL without a default (identity, generated
          and SQLite rowid columns fill themselves), since the sink never writes it;
        * for an upsert sink, a primary key or a unique constraint/index (not partial)
          on exactly the ``primary.key`` columns, as ``ON CONFLICT`` requires.

        Raises:
            SchemaMismatch: the table does not fit; the message names the masked URL,
                the table, every mismatching column (declared vs actual type) and what
                to do; ``.columns`` lists the column names.
            ConnectorError: the database cannot be reached (names the masked URL).
        """
        problems: list[tuple[str, str]] = []
        declared = {c["name"].lower(): c for c in self.columns}
        if self.upsert:
            for k in self.spec.primary_key:
                if k.lower() not in declared:
                    problems.append((k, f"primary.key column '{k}' is not a declared column"))
        try:
            with self.engine.connect() as conn:
                insp = sa.inspect(conn)
                if insp.has_table(self.spec.table):
                    problems += self._table_problems(insp, conn.dialect, declared)
        except SQLAlchemyError as exc:
            raise self._unreachable("check", exc) from None
        if problems:
            err = SchemaMismatch(
                f"SQL table '{self.spec.table}' at {_mask(self.spec.url)} does not match its "
                f"declaration: {'; '.join(p for _, p in problems)}. Alter the table to match "
                "(or drop it and let the job create it from the declaration), or change the "
                "table's declared columns or \"primary.key\"; then start the job again"
            )
            err.columns = tuple(dict.fromkeys(c for c, _ in problems))
            raise err

    def _table_problems(self, insp, dialect, declared: dict[str, dict]) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        table = self.spec.table
        actual = {c["name"].lower(): c for c in insp.get_columns(table)}
        for name, col in declared.items():
            have = actual.get(name)
            if have is None:
                problems.append((col["name"], f"column '{col['name']}' is missing "
                                              f"(declared {col['type']})"))
                continue
            want = type_family(col["type"])
            got = _column_family(have["type"])
            if not _compatible(want, got):
                problems.append((col["name"], (
                    f"column '{col['name']}' is declared {col['type']} ({want}) but the table has "
                    f"{_type_text(have['type'], dialect)} ({got})")))
        pk = insp.get_pk_constraint(table) or {}
        pk_cols = [c.lower() for c in pk.get("constrained_columns") or []]
        for name, have in actual.items():
            if name in declared or have.get("nullable", True):
                continue
            if have.get("default") is not None or have.get("identity") or have.get("computed"):
                continue
            if (dialect.name == "sqlite" and pk_cols == [name]
                    and _type_text(have["type"], dialect).upper() == "INTEGER"):
                continue  # the rowid alias: SQLite fills it
            problems.append((have["name"], (
                f"column '{have['name']}' ({_type_text(have['type'], dialect)} NOT NULL, no "
                "default) is not declared, so the sink cannot fill it")))
        if self.upsert:
            want_key = {k.lower() for k in self.spec.primary_key}
            keys = [pk_cols] if pk_cols else []
            keys += [[c.lower() for c in u["column_names"]]
                     for u in insp.get_unique_constraints(table)]
            for ix in insp.get_indexes(table):
                opts = ix.get("dialect_options") or {}
                if (ix.get("unique") and None not in ix["column_names"]
                        and not opts.get("postgresql_where") and not opts.get("sqlite_where")):
                    keys.append([c.lower() for c in ix["column_names"]])
            if not any(set(k) == want_key for k in keys):
                shown = ", ".join(self.spec.primary_key)
                found = "; ".join("(" + ", ".join(k) + ")" for k in keys) or "none"
                problems.append((shown, (
                    f"primary.key ({shown}) has no primary key or unique index on exactly "
                    f"those columns (the table has: {found}); an upsert's ON CONFLICT needs "
                    f"one, e.g. CREATE UNIQUE INDEX ON {table} ({shown})")))
        return problems

    def _unreachable(self, what: str, exc: SQLAlchemyError) -> ConnectorError:
        orig = getattr(exc, "orig", None) or exc
        first = (str(orig).strip().splitlines() or [""])[0]
        return ConnectorError(
            f"cannot {what} SQL table '{self.spec.table}' at {_mask(self.spec.url)}: "
            f"{type(orig).__name__}: {first}")

    def prepare(self) -> None:
        """:meth:`check` the table, then create it (from the declared schema, with the
        primary key) and the marker table if missing.

        Raises:
            SchemaMismatch: an existing table does not fit (see :meth:`check`).
            ConnectorError: database unreachable or refusing the DDL (names the masked URL).
        """
        self.check()
        try:
            self.metadata.create_all(self.engine, checkfirst=True)
        except SQLAlchemyError as exc:
            raise self._unreachable("prepare", exc) from None

    def last_committed(self) -> int | None:
        """The last batch id committed by this job to this table, or None.

        Raises:
            ConnectorError: the database cannot be reached.
        """
        try:
            with self.engine.connect() as conn:
                return conn.execute(
                    sa.select(self.marker.c.batch_id).where(
                        self.marker.c.job_uid == self.job_uid,
                        self.marker.c.table_name == self.spec.table)
                ).scalar()
        except SQLAlchemyError as exc:
            raise self._unreachable("read the commit marker of", exc) from None

    # -- writing ----------------------------------------------------------------------

    def write_batch(self, rows: Iterable[dict], batch_id: int) -> int:
        """Write one micro-batch given as row dicts (``{column: value}``, names in any
        case); returns rows written (0 for a skipped replay).

        Kept for callers holding Python rows: the rows are converted to Arrow with the
        declared types and written by :meth:`write_arrow`; rows Arrow cannot convert
        (e.g. a string for an integer column) go through SQLAlchemy as they are, so the
        database decides.

        Raises:
            ConnectorError: the database rejected the write (the batch is not committed,
                so Spark fails the query and failover replays it).
        """
        rows = [{k.lower(): v for k, v in r.items()} for r in rows]
        keys = list(dict.fromkeys(k for r in rows for k in r))
        fields = []
        for k in keys:
            typ = _arrow_type(self._declared_type(k)) if k in self._by_lower else None
            if typ is None:
                break
            fields.append(pa.field(k, typ))
        else:
            try:
                table = pa.Table.from_pylist(rows, schema=pa.schema(fields))
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                pass
            else:
                return self.write_arrow(table, batch_id)
        return self._transaction(batch_id, len(rows), lambda conn: self._write_dicts(conn, rows))

    def write_arrow(self, table: pa.Table | pa.RecordBatch, batch_id: int) -> int:
        """Write one micro-batch given as an Arrow table (``df.toArrow()``); returns rows
        written (0 for a skipped replay).

        Columns are matched to the declared ones by name, case-insensitively; a declared
        column missing from the batch is left to its default (NULL). The rows, the
        commit-marker check and the marker update form one transaction (exactly-once);
        PostgreSQL through psycopg uses COPY, SQLite a chunked executemany (module doc).

        Args:
            table: the batch; any number of rows (0 still advances the marker).
            batch_id: Spark's micro-batch id (monotonic per query).

        Raises:
            ConnectorError: the batch has a column the table does not declare, an upsert
                batch lacks a primary-key column, or the database rejected the write
                (nothing of the batch is committed; failover replays it).
        """
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        names = []
        for n in table.column_names:
            name = self._by_lower.get(n.lower())
            if name is None or name in names:
                raise ConnectorError(
                    f"batch {batch_id} for SQL table '{self.spec.table}' has "
                    f"{'a duplicate' if name else 'an undeclared'} column '{n}' "
                    f"(declared: {', '.join(self._by_lower.values())})")
            names.append(name)
        table = table.rename_columns(names)
        if self.upsert and table.num_rows:
            absent = [k for k in self.spec.primary_key if self._by_lower.get(k.lower()) not in names]
            if absent:
                raise ConnectorError(
                    f"batch {batch_id} for SQL table '{self.spec.table}' lacks primary-key "
                    f"column(s) {', '.join(absent)} needed to upsert")
        return self._transaction(batch_id, table.num_rows,
                                 lambda conn: self._write_arrow_rows(conn, table))

    def _declared_type(self, lower: str) -> str:
        name = self._by_lower[lower]
        return next(c["type"] for c in self.columns if c["name"] == name)

    def _transaction(self, batch_id: int, n: int, write) -> int:
        """Marker check, ``write(conn)``, marker update: one transaction."""
        eng = self.engine
        dbapi_error = getattr(eng.dialect.loaded_dbapi, "Error", SQLAlchemyError)
        try:
            with eng.begin() as conn:
                if self.exactly_once:
                    last = conn.execute(
                        sa.select(self.marker.c.batch_id).where(
                            self.marker.c.job_uid == self.job_uid,
                            self.marker.c.table_name == self.spec.table)
                        .with_for_update()
                    ).scalar()
                    if last is not None and batch_id <= last:
                        log.info("batch %s of job %s already committed to %s; skipped replay",
                                 batch_id, self.job_uid, self.spec.table)
                        return 0
                if n:
                    write(conn)
                if self.exactly_once:
                    self._set_marker(conn, batch_id)
            return n
        except (SQLAlchemyError, dbapi_error, pa.ArrowException) as exc:
            orig = getattr(exc, "orig", None) or exc
            first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
            raise ConnectorError(
                f"writing batch {batch_id} to SQL table '{self.spec.table}' at "
                f"{_mask(self.spec.url)} failed: {first}"
            ) from None

    def _write_arrow_rows(self, conn: Connection, table: pa.Table) -> None:
        dialect = conn.dialect
        if dialect.name == "postgresql" and dialect.driver == "psycopg":
            self._copy_postgres(conn, table)
        elif dialect.name == "sqlite":
            self._executemany_sqlite(conn, table)
        else:
            self._write_dicts(conn, _python_rows(table))

    def _write_dicts(self, conn: Connection, rows: list[dict]) -> None:
        stmt = self._insert(conn.dialect.name)
        for start in range(0, len(rows), INSERT_CHUNK_ROWS):
            conn.execute(stmt, rows[start:start + INSERT_CHUNK_ROWS])

    def _copy_postgres(self, conn: Connection, table: pa.Table) -> None:
        """COPY the rows (CSV rendered by Arrow) on the transaction's own connection."""
        quote = conn.dialect.identifier_preparer.quote
        cols = ", ".join(quote(n) for n in table.column_names)
        target = quote(self.spec.table)
        if self.upsert:
            table = _last_per_key(table, [self._by_lower[k.lower()] for k in self.spec.primary_key])
        raw = conn.connection.driver_connection
        with raw.cursor() as cur:
            # timestamps travel as UTC wall-clock text; SET LOCAL ends with the transaction
            cur.execute("SET LOCAL TimeZone = 'UTC'")
            into = target
            if self.upsert:
                into = quote(STAGE_TABLE)
                cur.execute(f"CREATE TEMP TABLE {into} ON COMMIT DROP AS "
                            f"SELECT {cols} FROM {target} WITH NO DATA")
            with cur.copy(f"COPY {into} ({cols}) FROM STDIN (FORMAT csv)") as copy:
                for batch in _pg_csv_ready(table).to_batches(max_chunksize=COPY_CHUNK_ROWS):
                    buf = io.BytesIO()
                    pacsv.write_csv(batch, buf, pacsv.WriteOptions(
                        include_header=False, quoting_style="needed"))
                    copy.write(buf.getbuffer())
            if self.upsert:
                cur.execute(f"INSERT INTO {target} ({cols}) SELECT {cols} FROM {into} "
                            + self._on_conflict(table.column_names, quote))
                cur.execute(f"DROP TABLE {into}")

    def _on_conflict(self, names: Sequence[str], quote) -> str:
        pk = [self._by_lower[k.lower()] for k in self.spec.primary_key]
        rest = [n for n in names if n not in pk]
        target = ", ".join(quote(k) for k in pk)
        if not rest:
            return f"ON CONFLICT ({target}) DO NOTHING"
        sets = ", ".join(f"{quote(n)} = excluded.{quote(n)}" for n in rest)
        return f"ON CONFLICT ({target}) DO UPDATE SET {sets}"

    def _executemany_sqlite(self, conn: Connection, table: pa.Table) -> None:
        quote = conn.dialect.identifier_preparer.quote
        sql = (f"INSERT INTO {quote(self.spec.table)} "
               f"({', '.join(quote(n) for n in table.column_names)}) "
               f"VALUES ({', '.join('?' * table.num_columns)})")
        if self.upsert:
            sql += " " + self._on_conflict(table.column_names, quote)
        for start in range(0, table.num_rows, SQLITE_CHUNK_ROWS):
            chunk = table.slice(start, SQLITE_CHUNK_ROWS)
            values = [_sqlite_values(col) for col in chunk.columns]
            conn.exec_driver_sql(sql, list(zip(*values)))

    def _insert(self, dialect: str):
        if not self.upsert:
            return self.table.insert()
        if dialect in ("sqlite", "postgresql"):
            mod = __import__(f"sqlalchemy.dialects.{dialect}", fromlist=["insert"])
            stmt = mod.insert(self.table)
            pk = [c for c in self.table.c if c.primary_key]
            rest = {c.name: stmt.excluded[c.name] for c in self.table.c if not c.primary_key}
            return stmt.on_conflict_do_update(index_elements=pk, set_=rest) if rest \
                else stmt.on_conflict_do_nothing(index_elements=pk)
        raise ConnectorError(f"upsert into a {dialect} database is not supported yet (SQLite, PostgreSQL)")

    def _set_marker(self, conn, batch_id: int) -> None:
        now = _dt.datetime.now(_dt.timezone.utc)
        updated = conn.execute(
            self.marker.update()
            .where(self.marker.c.job_uid == self.job_uid, self.marker.c.table_name == self.spec.table)
            .values(batch_id=batch_id, committed_at=now)
        ).rowcount
        if not updated:
            conn.execute(self.marker.insert().values(
                job_uid=self.job_uid, table_name=self.spec.table, batch_id=batch_id, committed_at=now))

    def purge_markers(self) -> None:
        """Delete this job's commit markers (DROP STREAMJOB); a missing table is fine."""
        try:
            with self.engine.begin() as conn:
                if sa.inspect(conn).has_table(MARKER_TABLE):
                    conn.execute(self.marker.delete().where(self.marker.c.job_uid == self.job_uid))
        except SQLAlchemyError as exc:
            log.warning("could not purge sink markers of job %s in %s: %s",
                        self.job_uid, _mask(self.spec.url), exc)


# -- Arrow conversions -----------------------------------------------------------------

def _arrow_type(type_text: str) -> pa.DataType | None:
    """The Arrow type of a declared column for :meth:`SqlSink.write_batch`; None when
    there is none (complex types)."""
    from .. import types as sjtypes

    t = _norm(type_text)
    if t == "timestamp_ntz":
        return pa.timestamp("us")
    try:
        return sjtypes.arrow_type(t)
    except ValidationError:
        return None


def _decoded(col: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_dictionary(col.type):
        return col.cast(col.type.value_type)
    return col


def _is_nested(typ: pa.DataType) -> bool:
    return pa.types.is_nested(typ)


def _json_texts(col: pa.ChunkedArray) -> pa.Array:
    return pa.array([None if v is None else json.dumps(v, default=str) for v in col.to_pylist()],
                    pa.string())


def _utc(col: pa.ChunkedArray, unit: str | None = None) -> pa.ChunkedArray:
    """A timestamp column as UTC instants (naive values taken as UTC)."""
    return col.cast(pa.timestamp(unit or col.type.unit, tz="UTC"), safe=False)


def _utc_wall_clock(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A timestamp column as naive microseconds holding the UTC wall clock (Arrow
    renders naive timestamps as text some 20 times faster than zoned ones)."""
    return _utc(col, "us").cast(pa.timestamp("us"))


def _pg_csv_ready(table: pa.Table) -> pa.Table:
    """The table with every column in a type whose Arrow CSV text PostgreSQL parses:
    timestamps as the UTC wall clock (the COPY runs under ``SET LOCAL TimeZone = 'UTC'``),
    binary as ``\\x`` hex, nested values as JSON."""
    cols = []
    for col in table.columns:
        col = _decoded(col)
        typ = col.type
        if pa.types.is_timestamp(typ):
            col = _utc_wall_clock(col)
        elif pa.types.is_binary(typ) or pa.types.is_large_binary(typ) \
                or pa.types.is_fixed_size_binary(typ):
            col = pa.array([None if v is None else "\\x" + v.hex() for v in col.to_pylist()],
                           pa.string())
        elif _is_nested(typ):
            col = _json_texts(col)
        elif not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
                  or pa.types.is_boolean(typ) or pa.types.is_string(typ)
                  or pa.types.is_large_string(typ) or pa.types.is_date(typ)
                  or pa.types.is_null(typ)):
            col = pa.array([None if v is None else str(v) for v in col.to_pylist()], pa.string())
        if pa.types.is_float16(col.type):
            col = col.cast(pa.float32())
        cols.append(col)
    return pa.table(cols, names=table.column_names)


def _sqlite_values(col: pa.ChunkedArray) -> list:
    """A column as Python values in SQLAlchemy's own SQLite storage: timestamps as UTC
    text ``YYYY-MM-DD HH:MM:SS.ffffff``, dates as ``YYYY-MM-DD``, decimals as floats."""
    col = _decoded(col)
    typ = col.type
    if pa.types.is_timestamp(typ):
        return _utc_wall_clock(col).cast(pa.string()).to_pylist()
    if pa.types.is_date(typ):
        return col.cast(pa.string()).to_pylist()
    if pa.types.is_decimal(typ):
        return col.cast(pa.float64()).to_pylist()
    if _is_nested(typ):
        return _json_texts(col).to_pylist()
    if pa.types.is_time(typ) or pa.types.is_duration(typ):
        return [None if v is None else str(v) for v in col.to_pylist()]
    return col.to_pylist()


def _python_rows(table: pa.Table) -> list[dict]:
    """Row dicts for the generic SQLAlchemy path (timestamps as UTC instants)."""
    cols = [_utc(c) if pa.types.is_timestamp(c.type) else _decoded(c) for c in table.columns]
    return pa.table(cols, names=table.column_names).to_pylist()


def _last_per_key(table: pa.Table, keys: list[str]) -> pa.Table:
    """The table with only the last row of each key (an upsert applies rows in order,
    so the last one wins; one INSERT ... ON CONFLICT may touch a row only once)."""
    if table.num_rows < 2:
        return table
    idx = "__streamjob_row"
    indexed = table.append_column(idx, pa.array(range(table.num_rows), pa.int64()))
    last = indexed.group_by(keys, use_threads=False).aggregate([(idx, "max")])
    if last.num_rows == table.num_rows:
        return table
    rows = last[f"{idx}_max"]
    return table.take(rows.take(pc.sort_indices(rows)))  # the kept rows, in batch order
