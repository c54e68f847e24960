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
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
from typing import Any, Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from ..exceptions import ConnectorError
from .spec import SqlTableSpec

log = logging.getLogger(__name__)

MARKER_TABLE = "streamjob_sink_commits"
INSERT_CHUNK_ROWS = 5_000

_ENGINES: dict[str, Engine] = {}


def engine_for(url: str) -> Engine:
    """One pooled engine per URL per process (SQLite: 30 s busy timeout)."""
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


def sql_type(type_text: str) -> sa.types.TypeEngine:
    """The SQLAlchemy column type for a StreamSQL type."""
    t = re.sub(r"\s+", "", type_text).lower()
    simple = {
        "tinyint": sa.SmallInteger(), "smallint": sa.SmallInteger(), "int": sa.Integer(),
        "integer": sa.Integer(), "bigint": sa.BigInteger(), "long": sa.BigInteger(),
        "float": sa.Float(), "double": sa.Double(), "boolean": sa.Boolean(),
        "string": sa.Text(), "date": sa.Date(), "timestamp": sa.DateTime(timezone=True),
        "binary": sa.LargeBinary(),
    }
    if t in simple:
        return simple[t]
    m = re.match(r"^(?:decimal|numeric)\((\d+),(\d+)\)$", t)
    if m:
        return sa.Numeric(int(m.group(1)), int(m.group(2)))
    if re.match(r"^(?:var)?char\(\d+\)$", t):
        return sa.String(int(re.search(r"\d+", t).group()))
    return sa.Text()


class SqlSink:
    """Writes micro-batches of one job into one SQL table.

    Args:
        spec: the table's connector spec (URL, table name, primary key).
        columns: the declared columns ``[{"name", "type"}, ...]``, in order.
        job_uid: the job incarnation's uid (markers are keyed by it, so a recreated job
            with the same name starts afresh).
        exactly_once: write the commit marker and skip replays (else at-least-once).
        upsert: update rows whose primary key exists (aggregations in update mode).
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

    @property
    def engine(self) -> Engine:
        return engine_for(self.spec.url)

    def prepare(self) -> None:
        """Create the table (from the declared schema) and the marker table if missing;
        check an existing table has the declared columns.

        Raises:
            ConnectorError: database unreachable (names the URL) or schema mismatch.
        """
        try:
            insp = sa.inspect(self.engine)
            if insp.has_table(self.spec.table):
                have = {c["name"].lower() for c in insp.get_columns(self.spec.table)}
                missing = [c["name"] for c in self.columns if c["name"].lower() not in have]
                if missing:
                    raise ConnectorError(
                        f"table '{self.spec.table}' in {_mask(self.spec.url)} lacks declared "
                        f"column(s) {', '.join(missing)}; alter it or declare the table to match"
                    )
            self.metadata.create_all(self.engine, checkfirst=True)
        except SQLAlchemyError as exc:
            raise ConnectorError(
                f"cannot prepare SQL table '{self.spec.table}' at {_mask(self.spec.url)}: "
                f"{type(exc.orig or exc).__name__}: {str(exc.orig or exc).splitlines()[0]}"
            ) from None

    def last_committed(self) -> int | None:
        """The last batch id committed by this job to this table, or None."""
        with self.engine.connect() as conn:
            return conn.execute(
                sa.select(self.marker.c.batch_id).where(
                    self.marker.c.job_uid == self.job_uid,
                    self.marker.c.table_name == self.spec.table)
            ).scalar()

    def write_batch(self, rows: Iterable[dict], batch_id: int) -> int:
        """Write one micro-batch's rows; returns rows written (0 for a skipped replay).

        Raises:
            ConnectorError: the database rejected the write (the batch is not committed,
                so Spark fails the query and failover replays it).
        """
        rows = [{k.lower(): v for k, v in r.items()} for r in rows]
        try:
            with self.engine.begin() as conn:
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
                for start in range(0, len(rows), INSERT_CHUNK_ROWS):
                    chunk = rows[start:start + INSERT_CHUNK_ROWS]
                    conn.execute(self._insert(conn.dialect.name), chunk)
                if self.exactly_once:
                    self._set_marker(conn, batch_id)
            return len(rows)
        except SQLAlchemyError as exc:
            raise ConnectorError(
                f"writing batch {batch_id} to SQL table '{self.spec.table}' at "
                f"{_mask(self.spec.url)} failed: {str(exc.orig or exc).splitlines()[0]}"
            ) from None

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
