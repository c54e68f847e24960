"""The Iceberg table sink: each micro-batch one Iceberg snapshot through pyiceberg.

Exactly-once (DESIGN §6): every snapshot a job commits carries, in its summary
properties, the job's marker key (job uid and checkpoint epoch,
:func:`streamjob.checkpoint.identity.marker_key`) as ``streamjob.app-id`` and Spark's
batch id as ``streamjob.batch-id`` (Arroyo and Flink's Iceberg sinks keep their
checkpoint ids the same way). Before a batch is written, the snapshots of the table's
main branch, newest first, say the last batch id committed under the app id; a batch at
or below it is a replay of a committed batch (Spark re-runs a batch whose commit it did
not log before a crash) and is skipped and counted. The data files and the snapshot
with its summary are one atomic catalog commit that asserts the snapshot the check read
is still the current one, so a batch is in the table entirely or not at all, and a
concurrent commit (another writer, a fenced attempt still running) fails this one
(``CommitFailedException``; pyiceberg's own retry of such a commit is turned off for
the job's commits) instead of doubling it; failover then replays it. The one
exception: when every snapshot committed since is a ``replace`` (OPTIMIZE's compaction,
:mod:`.compaction`: the same rows, no batch marker), the check still holds and the
batch is committed once more on top of them. A crash
between writing the data files and the commit leaves only files no snapshot references.
A new checkpoint epoch has a new app id, so its batch ids from 0 are never taken for
replays. An empty micro-batch commits nothing (there is nothing to double).

Schemas: the table is created at ``prepare`` (declared columns as optional fields,
identity partitions of PARTITIONED BY, at the spec's location); an existing table must
have the declared columns with the same Iceberg types, no other columns, the same
identity partition columns and the declared location, except that declared columns it
lacks are added as optional columns (the one evolution allowed), else
:class:`SchemaMismatch`.

Upserts: with ``"primary.key"`` and update mode, each micro-batch goes through
pyiceberg's upsert (matched rows overwritten, the others appended) in one transaction
carrying the same summary properties.
"""

from __future__ import annotations

import logging
from typing import Sequence

import pyarrow as pa

from streamjob.columntypes import table_arrow_type
from streamjob.connectors.iceberg.catalog import first_line, load_table, open_catalog, same_location
from streamjob.connectors.conform import conform_batch
from streamjob.exceptions import ConnectorError, SchemaMismatch

__all__ = ["IcebergSink", "APP_ID", "BATCH_ID", "iceberg_types", "last_batch"]

log = logging.getLogger(__name__)

APP_ID, BATCH_ID = "streamjob.app-id", "streamjob.batch-id"
"""The snapshot summary properties of a job's commits."""


def iceberg_types(schema: pa.Schema) -> dict[str, str]:
    """``{field name: Iceberg type as text}`` of an Arrow schema (``long``,
    ``timestamptz``, ``list<string>``...), nullability left out.

    Raises:
        ConnectorError: a type Iceberg has none for.
    """
    from pyiceberg.io.pyarrow import _ConvertToIcebergWithoutIDs, visit_pyarrow

    out = {}
    for f in schema:
        try:
            t = visit_pyarrow(f.type, _ConvertToIcebergWithoutIDs())
        except Exception as exc:
            raise ConnectorError(f"no Iceberg type for column {f.name} ({f.type}): "
                                 f"{first_line(exc)}") from None
        out[f.name] = _text(t)
    return out


def _text(t) -> str:
    """An Iceberg type as text without field ids or nullability."""
    from pyiceberg.types import ListType, MapType, StructType

    if isinstance(t, ListType):
        return f"list<{_text(t.element_type)}>"
    if isinstance(t, MapType):
        return f"map<{_text(t.key_type)},{_text(t.value_type)}>"
    if isinstance(t, StructType):
        return "struct<" + ",".join(f"{f.name}:{_text(f.field_type)}" for f in t.fields) + ">"
    return str(t)


def last_batch(tbl, app_id: str, stop_snapshot: int | None = None) -> tuple[int | None, bool]:
    """``(batch id, found)``: the batch id of the newest snapshot of ``tbl``'s main branch
    committed under ``app_id``, walking back from the current snapshot; the walk stops
    (found False) at snapshot id ``stop_snapshot`` (one already looked at)."""
    from pyiceberg.table.snapshots import ancestors_of

    for snap in ancestors_of(tbl.current_snapshot(), tbl.metadata):
        if stop_snapshot is not None and snap.snapshot_id == stop_snapshot:
            return None, False
        props = snap.summary.additional_properties if snap.summary else {}
        if props.get(APP_ID) == app_id:
            try:
                return int(props[BATCH_ID]), True
            except (KeyError, ValueError):
                continue
    return None, stop_snapshot is None


class IcebergSink:
    """Writes micro-batches of one job into one Iceberg table.

    Args:
        spec: the table's spec (:class:`.spec.IcebergTableSpec`).
        columns: the declared columns ``[{"name", "type"}, ...]``, in order.
        table: ``db.table``, for messages.
        app_id: the job's marker key (uid and epoch).
        exactly_once: commit the summary properties and skip replays (else plain
            appends, at-least-once).
        upsert: upsert each micro-batch on the spec's primary key (update mode).

    :meth:`check` refuses a mismatching table before a job starts, :meth:`prepare`
    creates or evolves it when the job starts, :meth:`write_arrow` writes one
    micro-batch. ``skipped`` counts the replayed batches skipped by this instance.
    """

    def __init__(self, spec, columns: Sequence[dict], table: str, app_id: str,
                 exactly_once: bool, upsert: bool = False) -> None:
        self.spec, self.table, self.app_id = spec, table, app_id
        self.exactly_once = exactly_once
        self.upsert = upsert and bool(spec.primary_key)
        self.schema = pa.schema([pa.field(c["name"], table_arrow_type(c["type"]))
                                 for c in columns])
        self._by_lower = {c["name"].lower(): c["name"] for c in columns}
        self.skipped = 0
        self._last: int | None = None      # last batch id committed under app_id
        self._seen: int | None = None      # snapshot id up to which _last is known
        self._tbl = None  # the table's handle between batches, current after our commit

    def _where(self) -> str:
        ref = self.spec.ref
        return ref.where() if ref.identifier == self.table else f"{ref.where()} (table {self.table})"

    def check(self) -> None:
        """Refuse an existing table that does not fit the declaration; a missing table is
        fine (``prepare`` creates it), and so are declared columns the table lacks.

        Raises:
            SchemaMismatch: names each differing column, the partitioning, the location.
            ConnectorError: the catalog cannot be reached.
        """
        tbl = load_table(self.spec.ref, missing_ok=True)
        if tbl is not None:
            self._fits(tbl)

    def _fits(self, tbl) -> list[str]:
        """The declared columns table ``tbl`` lacks, in declared order.

        Raises:
            SchemaMismatch: see :meth:`check`.
        """
        have = iceberg_types(tbl.schema().as_arrow())
        want = iceberg_types(self.schema)
        have_low = {k.lower(): (k, v) for k, v in have.items()}
        problems, names, added = [], [], []
        for name, typ in want.items():
            got = have_low.get(name.lower())
            if got is None:
                added.append(name)
            elif got[1] != typ:
                problems.append(f"column {name} is {got[1]}, declared {typ}")
                names.append(name)
        for low, (name, typ) in have_low.items():
            if low not in self._by_lower:
                problems.append(f"column {name} ({typ}) is not declared")
                names.append(name)
        parts = []
        schema = tbl.schema()
        for pf in tbl.spec().fields:
            col = schema.find_column_name(pf.source_id) or str(pf.source_id)
            t = str(pf.transform)
            parts.append(col.lower() if t == "identity" else f"{t}({col})")
        if tuple(parts) != self.spec.partitioned_by:
            problems.append(f"partitioned by ({', '.join(parts) or 'nothing'}), declared "
                            f"({', '.join(self.spec.partitioned_by) or 'nothing'})")
        if not same_location(tbl.location(), self.spec.location):
            problems.append(f"its location is {tbl.location()}, declared "
                            f"{self.spec.location}")
        if problems:
            raise SchemaMismatch(
                f"{self._where()} does not fit its declaration: {'; '.join(problems)}. "
                "Declare the table as it is (a declared column the table lacks is added), "
                "or write to a new table", columns=tuple(names))
        return added

    def prepare(self) -> None:
        """Create the namespace and the table (declared columns, identity partitions, at
        the declared location) if there is none; else :meth:`check` it and add the
        declared columns it lacks, optional (rows written before read them as NULL).

        Raises:
            SchemaMismatch: an existing table does not fit.
            ConnectorError: the table cannot be created or altered.
        """
        from pyiceberg.exceptions import NamespaceAlreadyExistsError, TableAlreadyExistsError

        ref = self.spec.ref
        tbl = load_table(ref, missing_ok=True)
        if tbl is None:
            cat = open_catalog(ref.catalog_uri)
            try:
                try:
                    cat.create_namespace(ref.namespace)
                except NamespaceAlreadyExistsError:
                    pass
                with cat.create_table_transaction((ref.namespace, ref.name), self.schema,
                                                  location=_uri(ref.location)) as tx:
                    if self.spec.partitioned_by:
                        with tx.update_spec() as upd:
                            for col in self.spec.partitioned_by:
                                upd.add_identity(self._by_lower[col])
            except TableAlreadyExistsError:
                pass  # another writer created it first; checked below
            except Exception as exc:
                raise ConnectorError(f"cannot create {self._where()}: {first_line(exc)}") \
                    from None
            tbl = load_table(ref)
        added = self._fits(tbl)
        if added:
            try:
                with tbl.update_schema() as upd:
                    upd.union_by_name(pa.schema([self.schema.field(n) for n in added]))
            except Exception as exc:
                raise ConnectorError(f"cannot add column(s) {', '.join(added)} to "
                                     f"{self._where()}: {first_line(exc)}") from None
            log.info("added column(s) %s to %s", ", ".join(added), self._where())

    def last_committed(self) -> int | None:
        """The last batch id this job (its app id) committed to the table, or None.

        Raises:
            ConnectorError: the table cannot be loaded.
        """
        return last_batch(load_table(self.spec.ref), self.app_id)[0]

    def conform(self, table: pa.Table | pa.RecordBatch, batch_id: int) -> pa.Table:
        """``table`` with the declared names and Arrow types, in declared order
        (:func:`..conform.conform_batch`, types compared in Iceberg's names).

        Raises:
            SchemaMismatch: a column undeclared, missing or twice, or not castable.
        """
        return conform_batch(table, self.schema, self._where(), batch_id, iceberg_types)
    def _last_for(self, tbl) -> int | None:
        """The last batch id under the app id, walking only snapshots not seen before."""
        current = tbl.current_snapshot()
        if current is None:
            return None
        if self._seen != current.snapshot_id:
            found, complete = last_batch(tbl, self.app_id, self._seen)
            if found is not None:
                self._last = found
            elif complete:
                self._last = None
            self._seen = current.snapshot_id
        return self._last

    def write_arrow(self, table: pa.Table | pa.RecordBatch, batch_id: int) -> int:
        """Write one micro-batch (``df.toArrow()``) as one Iceberg commit; returns the
        rows written, 0 for a skipped replay or an empty batch.

        Raises:
            SchemaMismatch: the batch does not fit the table (:meth:`conform`).
            ConnectorError: the table is gone or the commit failed (a concurrent commit
                included); nothing of the batch is committed, and failover replays it.
        """
        if not table.num_rows:
            return 0
        data = self.conform(table, batch_id)
        # the handle of the previous batch is current unless another writer committed
        # since; then this batch's commit fails its snapshot assertion, and the replay
        # loads the table anew (so the check below never trusts a stale handle twice)
        tbl = self._tbl = self._tbl or load_table(self.spec.ref)
        props = {}
        if self.exactly_once:
            last = self._last_for(tbl)
            if last is not None and batch_id <= last:
                self.skipped += 1
                log.info("batch %s of %s already committed to %s (snapshot summary); "
                         "skipped replay", batch_id, self.app_id, self._where())
                return 0
            props = {APP_ID: self.app_id, BATCH_ID: str(batch_id)}
        try:
            try:
                self._commit(tbl, data, props)
            except Exception as exc:
                fresh = self._only_replaced(tbl, exc)
                if fresh is None:
                    raise
                log.info("%s was compacted since batch %s's exactly-once check (a replace "
                         "snapshot); committing on top of it", self._where(), batch_id)
                tbl = self._tbl = fresh
                self._commit(tbl, data, props)
        except Exception as exc:
            self._seen, self._tbl = None, None
            raise ConnectorError(f"writing batch {batch_id} to {self._where()} failed: "
                                 f"{first_line(exc)}") from None
        if self.exactly_once:
            self._last, self._seen = batch_id, _current_id(tbl)
        return data.num_rows

    def _commit(self, tbl, data: pa.Table, props: dict) -> None:
        """One catalog commit of ``data`` (append, or upsert) on handle ``tbl``, failing
        (not retried) when ``tbl``'s current snapshot is no longer the table's."""
        _no_retry(tbl)
        with tbl.transaction() as tx:
            if self.upsert:
                keys = [self._by_lower[k] for k in self.spec.primary_key]
                tx.upsert(_last_per_key(data, keys), join_cols=keys, snapshot_properties=props)
            else:
                tx.append(data, snapshot_properties=props)

    def _only_replaced(self, tbl, exc: Exception):
        """After commit failure ``exc`` on handle ``tbl``: the table loaded anew when
        every snapshot committed since ``tbl``'s current one is a ``replace`` (a
        compaction: the same rows, no batch marker, so the exactly-once check made on
        ``tbl`` still holds), else None (another writer's commit: the replay checks
        again)."""
        from pyiceberg.exceptions import CommitFailedException
        from pyiceberg.table.snapshots import ancestors_of

        base = _current_id(tbl)
        if not isinstance(exc, CommitFailedException) or base is None:
            return None
        try:
            fresh = load_table(self.spec.ref)
        except ConnectorError:
            return None
        current = fresh.current_snapshot()
        for snap in ancestors_of(current, fresh.metadata) if current else ():
            if snap.snapshot_id == base:
                return fresh if snap is not current else None
            summary = snap.summary
            op = getattr(summary.operation, "value", None) if summary else None
            if op != "replace" or summary.additional_properties.get(APP_ID):
                return None
        return None


def _no_retry(tbl) -> None:
    """Make this handle's commits fail on a concurrent commit instead of being applied
    again on top of it: pyiceberg retries a failed commit by default
    (``commit.retry.num-retries``, read from the table's properties), which would commit
    a batch whose exactly-once check read an older snapshot. Only the handle's copy of
    the properties changes; the table's stay as they are."""
    props = dict(tbl.metadata.properties)
    props["commit.retry.num-retries"] = "0"
    tbl.metadata = tbl.metadata.model_copy(update={"properties": props})


def _current_id(tbl) -> int | None:
    """The current snapshot id of ``tbl`` (updated in place by its last commit)."""
    snap = tbl.current_snapshot()
    return None if snap is None else snap.snapshot_id


def _last_per_key(data: pa.Table, keys: list[str]) -> pa.Table:
    """Of rows with the same key within a batch the last (pyiceberg refuses duplicate
    keys in one upsert)."""
    if data.num_rows <= 1:
        return data
    last = (data.append_column("__row", pa.array(range(data.num_rows), pa.int64()))
            .group_by(keys, use_threads=False).aggregate([("__row", "max")]))
    return data if last.num_rows == data.num_rows else data.take(last["__row_max"])


def _uri(location: str) -> str:
    """A location as the ``file://`` URI pyiceberg writes to."""
    import os

    if "://" in location:
        return location
    if location.startswith("file:"):
        return "file://" + location[5:]
    return "file://" + os.path.abspath(location)
