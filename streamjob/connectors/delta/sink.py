"""The Delta Lake table sink: each micro-batch one Delta commit through delta-rs.

Exactly-once (DESIGN §6) the way Spark's own Delta sink keeps it (``DeltaSink``, its
``txnAppId``/``txnVersion``): every commit carries a Delta *app transaction*
(``SetTransaction`` action) whose app id is the job's marker key (job uid and checkpoint
epoch, :func:`streamjob.checkpoint.identity.marker_key`) and whose version is Spark's
batch id. Before a batch is written, the table's log says the last version committed for
that app id; a batch at or below it is a replay of a committed batch (Spark re-runs a
batch whose commit it did not log before a crash) and is skipped and counted. The data
files and the app transaction are one atomic commit of the log, so a batch is in the
table entirely or not at all; a crash between writing the files and the commit leaves
only files no commit references (VACUUM removes them). Two writers with the same app id
(a fenced attempt still running) conflict in Delta's optimistic concurrency: delta-rs
refuses the second commit (``CommitFailedError``), and the batch fails instead of
doubling. A new checkpoint epoch has a new app id, so its batch ids from 0 are never taken
for replays.

Schemas: the table is created at ``prepare`` from the declared columns (Arrow types of
:func:`streamjob.columntypes.table_arrow_type`, partitioned by PARTITIONED BY, with the
table's Delta configuration); an existing table must have the declared columns with the
same Delta types and the same partition columns, except that declared columns it lacks
are added, nullable (the one evolution allowed); each micro-batch must carry exactly
the declared columns with those types (Delta's types: a timestamp's time zone and the
names Arrow gives list items do not count), else :class:`SchemaMismatch`.
"""

from __future__ import annotations

import logging
from typing import Sequence

import pyarrow as pa

from streamjob.columntypes import table_arrow_type
from streamjob.connectors.delta.spec import DeltaTableSpec
from streamjob.connectors.conform import conform_batch
from streamjob.exceptions import ConnectorError, SchemaMismatch

__all__ = ["DeltaSink", "delta_types"]

log = logging.getLogger(__name__)


def _first_line(exc: BaseException) -> str:
    """delta-rs errors carry a Rust backtrace after their first line."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def delta_types(schema: pa.Schema) -> dict[str, str]:
    """``{field name: Delta type as JSON text}`` of an Arrow schema, nullability left
    out (Delta's type system: ``timestamp`` for any time zone, ``timestamp_ntz`` without
    one, lists without their item names).

    Raises:
        ConnectorError: a type Delta has none for (e.g. unsigned integers).
    """
    import json

    from deltalake import Schema

    fields = []
    for f in schema:
        t = f.type
        if pa.types.is_timestamp(t) and t.tz is not None:  # Delta stores instants in UTC
            t = pa.timestamp("us", "UTC")
        elif pa.types.is_dictionary(t):
            t = t.value_type
        fields.append(pa.field(f.name, t))
    try:
        data = json.loads(Schema.from_arrow(pa.schema(fields)).to_json())
    except Exception as exc:  # delta-rs raises plain Exception for unmappable types
        raise ConnectorError(f"no Delta type for {schema}: {_first_line(exc)}") from None

    def strip(t):
        if isinstance(t, dict):
            return {k: strip(v) for k, v in t.items()
                    if k not in ("nullable", "containsNull", "valueContainsNull", "metadata")}
        if isinstance(t, list):
            return [strip(x) for x in t]
        return t

    return {f["name"]: json.dumps(strip(f["type"]), sort_keys=True) for f in data["fields"]}


class DeltaSink:
    """Writes micro-batches of one job into one Delta table.

    Args:
        spec: the table's spec (location, partition columns, configuration).
        columns: the declared columns ``[{"name", "type"}, ...]``, in order.
        table: ``db.table``, for messages and the Delta table's name.
        app_id: the job's marker key (uid and epoch): the app id of its Delta app
            transactions.
        exactly_once: commit the app transaction and skip replays (else at-least-once:
            plain appends).
        upsert: merge each micro-batch on the spec's primary key (update mode; Delta's
            MERGE: matched rows updated, others inserted); ignored without a primary key.

    Call :meth:`check` to refuse a mismatching table before a job starts, :meth:`prepare`
    when it starts, then :meth:`write_arrow` once per micro-batch. ``skipped`` counts
    the replayed batches skipped by this instance.
    """

    def __init__(self, spec: DeltaTableSpec, columns: Sequence[dict], table: str,
                 app_id: str, exactly_once: bool, upsert: bool = False) -> None:
        self.spec, self.table, self.app_id = spec, table, app_id
        self.exactly_once = exactly_once
        self.upsert = upsert and bool(spec.primary_key)
        self.schema = pa.schema([pa.field(c["name"], table_arrow_type(c["type"]))
                                 for c in columns])
        self._by_lower = {c["name"].lower(): c["name"] for c in columns}
        self.skipped = 0
        self._table = None  # the table's handle between batches (:meth:`_snapshot`)

    def _where(self) -> str:
        return f"Delta table {self.table} at {self.spec.location}"

    def _open(self):
        """The table's current snapshot, or None when there is no Delta table there.

        Raises:
            ConnectorError: the location cannot be read (names it).
        """
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.spec.path, storage_options=self.spec.storage_options())
        except TableNotFoundError:
            return None
        except Exception as exc:  # DeltaError, OSError
            raise ConnectorError(f"cannot open {self._where()}: {_first_line(exc)}") from None

    def _snapshot(self):
        """The table brought up to its latest version, or None when there is none: the
        handle of the previous batch read forward from its version (delta-rs'
        ``update_incremental``; a commit then costs about half of opening the table
        anew), else opened.

        Raises:
            ConnectorError: the location cannot be read.
        """
        if self._table is not None:
            try:
                self._table.update_incremental()
                return self._table
            except Exception:  # the table was replaced or removed: open it again
                self._table = None
        self._table = self._open()
        return self._table

    def check(self) -> None:
        """Refuse an existing table whose columns or partitioning differ from the
        declaration; a missing table is fine (``prepare`` creates it), and so are declared
        columns the table lacks (``prepare`` adds them: the one evolution allowed).

        Raises:
            SchemaMismatch: names each differing column and the partition columns.
            ConnectorError: the location cannot be read.
        """
        dt = self._open()
        if dt is not None:
            self._fits(dt)

    def _fits(self, dt) -> list[str]:
        """The declared columns table ``dt`` lacks (to be added, nullable), in declared
        order.

        Raises:
            SchemaMismatch: a column of another Delta type, a column of the table not
                declared, or other partition columns.
        """
        have = delta_types(pa.schema(dt.schema().to_arrow()))
        want = delta_types(self.schema)
        have_low = {k.lower(): (k, v) for k, v in have.items()}
        problems, names, added = [], [], []
        for name, typ in want.items():
            got = have_low.get(name.lower())
            if got is None:
                added.append(name)
            elif got[1] != typ:
                problems.append(f"column {name} is {_short(got[1])}, declared {_short(typ)}")
                names.append(name)
        for low, (name, typ) in have_low.items():
            if low not in self._by_lower:
                problems.append(f"column {name} ({_short(typ)}) is not declared")
                names.append(name)
        parts = tuple(c.lower() for c in dt.metadata().partition_columns)
        if parts != self.spec.partitioned_by:
            problems.append(f"partitioned by ({', '.join(parts) or 'nothing'}), declared "
                            f"({', '.join(self.spec.partitioned_by) or 'nothing'})")
        if problems:
            raise SchemaMismatch(
                f"{self._where()} does not fit its declaration: {'; '.join(problems)}. "
                "Declare the table as it is (a declared column the table lacks is added), "
                "or write to a new LOCATION", columns=tuple(names))
        return added

    def prepare(self) -> None:
        """Create the table (declared columns, partition columns, configuration; the
        table's name is ``db.table``) if there is none; else :meth:`check` it and add
        the declared columns it lacks, nullable (rows written before read them as NULL;
        Delta's schema evolution, one commit).

        Raises:
            SchemaMismatch: an existing table does not fit.
            ConnectorError: the table cannot be created or altered (names the location).
        """
        from deltalake import DeltaTable, Schema

        dt = self._open()
        if dt is None:
            try:
                dt = DeltaTable.create(self.spec.path, self.schema, mode="ignore",
                                       partition_by=list(self.spec.partitioned_by) or None,
                                       name=self.table,
                                       configuration=dict(self.spec.configuration),
                                       storage_options=self.spec.storage_options())
            except Exception as exc:
                raise ConnectorError(f"cannot create {self._where()}: {_first_line(exc)}") \
                    from None
        added = self._fits(dt)  # another writer may have created it first
        if added:
            fields = Schema.from_arrow(pa.schema([self.schema.field(n) for n in added])).fields
            try:
                dt.alter.add_columns(fields)
            except Exception as exc:
                raise ConnectorError(f"cannot add column(s) {', '.join(added)} to "
                                     f"{self._where()}: {_first_line(exc)}") from None
            log.info("added column(s) %s to %s", ", ".join(added), self._where())

    def last_committed(self) -> int | None:
        """The last batch id this job (its app id) committed to the table, or None.

        Raises:
            ConnectorError: the table cannot be read.
        """
        dt = self._open()
        return None if dt is None else dt.transaction_version(self.app_id)

    def conform(self, table: pa.Table | pa.RecordBatch, batch_id: int) -> pa.Table:
        """``table`` with the declared names and the table's Arrow types, in the declared
        order (:func:`..conform.conform_batch`, types compared in Delta's names).

        Raises:
            SchemaMismatch: a column undeclared, missing or twice, or of another Delta
                type (names them).
        """
        return conform_batch(table, self.schema, self._where(), batch_id, lambda schema: {n: _short(t) for n, t in delta_types(schema).items()})
    def write_arrow(self, table: pa.Table | pa.RecordBatch, batch_id: int) -> int:
        """Write one micro-batch (``df.toArrow()``) as one Delta commit; returns the rows
        written, 0 for a skipped replay.

        Exactly-once: the commit carries the app transaction ``(app id, batch_id)``; a
        ``batch_id`` at or below the table's version for the app id is skipped (logged,
        counted in ``skipped``). An empty batch still commits its app transaction, as
        Spark's Delta sink does.

        Raises:
            SchemaMismatch: the batch does not fit the table (:meth:`conform`).
            ConnectorError: the table is gone or the commit failed (a concurrent commit
                with the same app id included); nothing of the batch is committed, and
                failover replays it.
        """
        from deltalake import CommitProperties, Transaction, write_deltalake

        data = self.conform(table, batch_id)
        dt = self._snapshot()
        if dt is None:
            raise ConnectorError(f"{self._where()} is gone (no _delta_log there); the job "
                                 "creates it when it starts")
        props = None
        if self.exactly_once:
            last = dt.transaction_version(self.app_id)
            if last is not None and batch_id <= last:
                self.skipped += 1
                log.info("batch %s of %s already committed to %s (app transaction version "
                         "%s); skipped replay", batch_id, self.app_id, self._where(), last)
                return 0
            props = CommitProperties(app_transactions=[Transaction(self.app_id, batch_id)])
        elif not data.num_rows:
            return 0
        try:
            if self.upsert:
                self._merge(dt, data, props)
            else:
                write_deltalake(dt, data, mode="append", commit_properties=props,
                                partition_by=list(self.spec.partitioned_by) or None)
        except Exception as exc:
            self._table = None
            raise ConnectorError(f"writing batch {batch_id} to {self._where()} failed: "
                                 f"{_first_line(exc)}") from None
        return data.num_rows

    def _merge(self, dt, data: pa.Table, props) -> None:
        """One Delta MERGE of ``data`` on the primary key (NULL keys equal, ``<=>``):
        matched rows updated, the others inserted, in one commit with ``props``. Of rows
        of one key within the batch the last counts (Delta refuses a MERGE in which two
        source rows match one target row)."""
        keys = [self._by_lower[k] for k in self.spec.primary_key]
        if data.num_rows > 1:
            last = (data.append_column("__row", pa.array(range(data.num_rows), pa.int64()))
                    .group_by(keys, use_threads=False).aggregate([("__row", "max")]))
            if last.num_rows < data.num_rows:
                data = data.take(last["__row_max"])
        predicate = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)
        (dt.merge(data, predicate, source_alias="s", target_alias="t", commit_properties=props)
         .when_matched_update_all().when_not_matched_insert_all().execute())


def _short(delta_json: str) -> str:
    """A Delta type's JSON text as a word (``"long"``) or compact JSON."""
    import json

    t = json.loads(delta_json)
    return t if isinstance(t, str) else json.dumps(t, separators=(",", ":"))
