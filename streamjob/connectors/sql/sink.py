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

The modules of the sink: this one holds :class:`SqlSink` (the transaction and its
marker); :mod:`.schema` the schema check (:meth:`SqlSink.check`, type families);
:mod:`.write` how rows travel (COPY on PostgreSQL, ``executemany`` on SQLite, Arrow
conversions); :mod:`.engine` the engines per URL and the declared column types.
"""

from __future__ import annotations

import datetime as _dt
import logging
from typing import Iterable, Sequence

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from streamjob.exceptions import ConnectorError, SchemaMismatch
from streamjob.connectors.spec import SqlTableSpec
from streamjob.connectors.sql.engine import _ENGINES, _mask, engine_for, sql_type
from streamjob.connectors.sql.schema import SchemaCheck, _column_family, type_family
from streamjob.connectors.sql.write import (COPY_CHUNK_ROWS, INSERT_CHUNK_ROWS, SQLITE_CHUNK_ROWS, STAGE_TABLE,
                        ArrowWrite, _arrow_type)

__all__ = ["SqlSink", "SchemaMismatch", "engine_for", "sql_type", "type_family",
           "MARKER_TABLE"]
# importable from here as before the sink was split into modules: the write path's
# sizes, the engine cache and URL masking (connectors/sql/static.py), column families
__all__ += ["INSERT_CHUNK_ROWS", "SQLITE_CHUNK_ROWS", "COPY_CHUNK_ROWS", "STAGE_TABLE",
            "_ENGINES", "_mask", "_column_family"]

log = logging.getLogger(__name__)

MARKER_TABLE = "streamjob_sink_commits"


class SqlSink(SchemaCheck, ArrowWrite):
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

    # -- schema (:meth:`check` itself: sql_schema.SchemaCheck) -------------------------

    def _unreachable(self, what: str, exc: SQLAlchemyError) -> ConnectorError:
        orig = getattr(exc, "orig", None) or exc
        first = (str(orig).strip().splitlines() or [""])[0]
        return ConnectorError(
            f"cannot {what} SQL table '{self.spec.table}' at {_mask(self.spec.url)}: {first}")

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
        PostgreSQL through psycopg uses COPY, SQLite a chunked executemany
        (:mod:`.write`).

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
