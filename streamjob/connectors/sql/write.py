"""The write path of the SQL sink: how the rows of a micro-batch reach the database,
inside the transaction :class:`~streamjob.connectors.sql.sink.SqlSink` opens for them.

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

:class:`ArrowWrite` (a base of ``SqlSink``) writes the rows; the functions below it
convert Arrow columns for each path.
"""

from __future__ import annotations

import io
import json
from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from sqlalchemy.engine import Connection

from streamjob.exceptions import ConnectorError, ValidationError
from streamjob.connectors.sql.engine import _norm

INSERT_CHUNK_ROWS = 5_000     # rows per executemany on the generic path
SQLITE_CHUNK_ROWS = 20_000    # rows converted and inserted at a time on SQLite
COPY_CHUNK_ROWS = 50_000      # rows rendered as CSV at a time for PostgreSQL's COPY
STAGE_TABLE = "streamjob_stage"


class ArrowWrite:
    """The rows of one batch into the table, on the transaction's connection: a base
    class of :class:`~streamjob.connectors.sql.sink.SqlSink` (uses its ``spec``,
    ``table``, ``upsert`` and ``_by_lower``)."""

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


# -- Arrow conversions -----------------------------------------------------------------

def _arrow_type(type_text: str) -> pa.DataType | None:
    """The Arrow type of a declared column for :meth:`SqlSink.write_batch`; None when
    there is none (complex types)."""
    from streamjob import columntypes as sjtypes

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
