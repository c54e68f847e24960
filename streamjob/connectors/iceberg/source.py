"""The Iceberg stream source: a Spark Python streaming data source (``streamjob_iceberg``)
that reads an Iceberg table's snapshots incrementally through pyiceberg, following the
rules of Iceberg's own Spark streaming source (appends read, compactions skipped,
overwrites and deletes refused: :mod:`.snapshots`).

Offsets: ``{"iceberg:<table dir>": {"snapshot": id, "sequence": n, "initial": 0|1}}``:
with ``initial`` 0, every snapshot up to ``id`` has been read (``id`` 0: none yet) and
``sequence`` is the next sequence number (the snapshot's plus one); with ``initial`` 1,
snapshot ``id``'s whole contents are still to be read (a first start from
``earliest``), then the appends after it. A micro-batch reads everything between two
positions: snapshots never change, so a restarted query reads exactly the same files
again (the source is replayable, which exactly-once needs, DESIGN §6).

Options (all strings; Spark lower-cases the keys): ``catalog`` (the catalog's URL, its
secrets resolved), ``namespace``, ``table``, ``path`` (the table's directory), ``key``
(the offsets' key), ``starting`` (``earliest`` or ``latest``), ``partitions`` (the most
read tasks of a micro-batch).
"""

from __future__ import annotations

import logging
from typing import Iterator
from urllib.parse import unquote, urlparse

import pyarrow as pa
from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    InputPartition)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit
from pyspark.sql.types import StructType

from streamjob.connectors import worker
from streamjob.connectors.iceberg import snapshots as isnap
from streamjob.connectors.iceberg.options import (CATALOG, KEY, NAMESPACE, PARTITIONS, PATH,
                                                  SNAPSHOT_ID, SOURCE_NAME, STARTING, TABLE,
                                                  offsets_key)
from streamjob.exceptions import ConnectorError

worker.install()

log = logging.getLogger(__name__)

BATCH_ROWS = 50_000
"""Rows per Arrow batch handed to Spark."""


class IcebergFiles(InputPartition):
    """One read task: the data files' paths."""

    def __init__(self, files: list[str]) -> None:
        self.files = files


class IcebergStreamReader(DataSourceStreamReader):
    """Plans micro-batches over an Iceberg table's snapshots; see the module docstring."""

    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        options = {k.lower(): v for k, v in options.items()}
        self.schema = schema
        self.catalog = options[CATALOG]
        self.namespace, self.name = options[NAMESPACE], options[TABLE]
        self.key = options.get(KEY) or offsets_key(options[PATH])
        self.starting = (options.get(STARTING) or "earliest").strip().lower()
        self.partitions_max = max(1, int(options.get(PARTITIONS) or 1))

    def _where(self) -> str:
        return f"the Iceberg table {self.namespace}.{self.name}"

    def _table(self):
        return _load(self.catalog, self.namespace, self.name, self._where())

    def _offset(self, snap, initial: int) -> dict:
        if snap is None:
            return {self.key: {"snapshot": 0, "sequence": 0, "initial": 0}}
        seq = snap.sequence_number or 0
        return {self.key: {"snapshot": snap.snapshot_id,
                           "sequence": seq if initial else seq + 1, "initial": initial}}

    def _position(self, offset: dict) -> tuple[int | None, int]:
        at = (offset or {}).get(self.key)
        if not isinstance(at, dict):
            raise ConnectorError(f"the checkpoint's offsets hold no position in {self._where()}")
        return int(at["snapshot"]) or None, int(at.get("initial", 0))

    def initialOffset(self) -> dict:
        """A first start: ``earliest`` the current snapshot whole (nothing when the table
        has no snapshot yet), ``latest`` only later appends."""
        current = self._table().current_snapshot()
        if current is None:
            return self._offset(None, 0)
        return self._offset(current, 0 if self.starting == "latest" else 1)

    def getDefaultReadLimit(self) -> ReadLimit:
        """Every new snapshot in one micro-batch."""
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The position after the current snapshot (the snapshots after ``start``
        checked: :func:`.snapshots.read_between`); ``start`` when nothing is new.

        Raises:
            NotAppendOnly: a snapshot that overwrote or deleted rows (names it).
            ConnectorError: the table is gone or was rolled back.
        """
        s_id, initial = self._position(start)
        tbl = self._table()
        current = tbl.current_snapshot()
        if current is None or (s_id == current.snapshot_id and not initial):
            return start
        isnap.read_between(tbl, s_id, current.snapshot_id, self._where())
        return self._offset(current, 0)

    def reportLatestOffset(self) -> None:
        """None: snapshots are no records, and lag subtracts offsets per key."""
        return None

    def partitions(self, start: dict, end: dict) -> list[IcebergFiles]:
        """The data files between ``start`` and ``end`` over at most ``partitions``
        read tasks.

        Raises:
            NotAppendOnly, ConnectorError: see :mod:`.snapshots`.
        """
        s_id, initial = self._position(start)
        e_id, _ = self._position(end)
        if e_id is None or (s_id == e_id and not initial):
            return []
        tbl = self._table()
        files: list[str] = []
        if initial and s_id is not None:
            files += isnap.snapshot_files(tbl, s_id, self._where())
        for snap in isnap.read_between(tbl, s_id, e_id, self._where()):
            files += isnap.added_files(tbl, snap)
        if not files:
            return []
        n = min(len(files), self.partitions_max)
        tasks: list[list[str]] = [[] for _ in range(n)]
        for k, f in enumerate(files):
            tasks[k % n].append(f)
        return [IcebergFiles(t) for t in tasks]

    def commit(self, end: dict) -> None:
        """Spark finished every file before ``end``; nothing to release."""

    def read(self, partition: IcebergFiles) -> Iterator[pa.RecordBatch]:
        """The rows of the task's files as Arrow batches of the declared columns,
        matched by name (case-insensitively); a declared column a file lacks (added to
        the table later) is NULL.

        Raises:
            ConnectorError: a file is gone or unreadable, or a value does not fit.
        """
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.schema, timezone="UTC")
        for path in partition.files:
            yield from _read_file(path, target)


def _load(catalog: str, namespace: str, name: str, where: str):
    """The pyiceberg table ``namespace.name`` of the catalog at URL ``catalog``.

    Raises:
        ConnectorError: no such table, or the catalog unreachable.
    """
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    from streamjob.connectors.iceberg.catalog import first_line, open_catalog

    try:
        return open_catalog(catalog).load_table((namespace, name))
    except (NoSuchTableError, NoSuchNamespaceError):
        raise ConnectorError(f"there is no {where} (a job reads an existing table; one "
                             "writing it creates it when it first starts)") from None
    except ConnectorError:
        raise
    except Exception as exc:
        raise ConnectorError(f"cannot load {where}: {first_line(exc)}") from None


class IcebergStaticReader(DataSourceReader):
    """An Iceberg table read whole as static data (a stream-static join, DESIGN §7): one
    read task that loads the table's current snapshot when it runs (Spark runs ``read``
    at every micro-batch that scans it, :mod:`streamjob.connectors.static`), through
    pyiceberg's scan, which applies delete files. Options: ``catalog``, ``namespace``,
    ``table``; ``snapshotId`` (time travel of a preview: that snapshot instead)."""

    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        options = {k.lower(): v for k, v in options.items()}
        self.schema = schema
        self.catalog = options[CATALOG]
        self.namespace, self.name = options[NAMESPACE], options[TABLE]
        at = options.get(SNAPSHOT_ID)
        self.snapshot_id = int(at) if at else None

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        """The rows of the table's current snapshot (or ``snapshotId``), the declared
        columns matched by name ignoring case (a column the table lacks is NULL).

        Raises:
            ConnectorError: no such table or snapshot, a file unreadable, a value that
                does not fit its declared type.
        """
        from pyspark.sql.pandas.types import to_arrow_schema

        where = f"the Iceberg table {self.namespace}.{self.name}"
        tbl = _load(self.catalog, self.namespace, self.name, where)
        if self.snapshot_id is None and tbl.current_snapshot() is None:
            return
        if self.snapshot_id is not None and tbl.snapshot_by_id(self.snapshot_id) is None:
            raise ConnectorError(f"{where} has no snapshot {self.snapshot_id} (expired?)")
        try:
            table = tbl.scan(snapshot_id=self.snapshot_id).to_arrow()
        except (OSError, pa.ArrowException) as exc:
            raise ConnectorError(f"cannot read {where}: {exc}") from None
        yield from _conformed(table, to_arrow_schema(self.schema, timezone="UTC"), where)


def _local(path: str) -> str:
    return unquote(urlparse(path).path) if path.startswith("file:") else path


def _read_file(path: str, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(_local(path))
    except FileNotFoundError:
        raise ConnectorError(f"Iceberg data file {path} is gone (its snapshot expired?)") \
            from None
    except (OSError, pa.ArrowException) as exc:
        raise ConnectorError(f"cannot read Iceberg data file {path}: {exc}") from None
    yield from _conformed(table, target, f"Iceberg data file {path}")


def _conformed(table: pa.Table, target: pa.Schema, where: str) -> Iterator[pa.RecordBatch]:
    """``table`` as Arrow batches of ``target``: columns by name ignoring case, cast to
    the declared types, NULL when absent.

    Raises:
        ConnectorError: a column whose values do not fit (names ``where``).
    """
    have = {n.lower(): n for n in table.column_names}
    columns = []
    for f in target:
        low = f.name.lower()
        try:
            if low in have:
                col = table.column(have[low])
                col = col if col.type.equals(f.type) else col.cast(f.type)
            else:
                col = pa.nulls(table.num_rows, f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise ConnectorError(f"{where}: column {f.name} does not fit "
                                 f"{f.type}: {exc}") from None
        columns.append(col)
    yield from pa.Table.from_arrays(columns, schema=target).to_batches(max_chunksize=BATCH_ROWS)


class IcebergDataSource(DataSource):
    """``spark.readStream.format("streamjob_iceberg")``: see the module docstring;
    ``spark.read.format("streamjob_iceberg")``: the table as static data
    (:class:`IcebergStaticReader`)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        raise ConnectorError("the streamjob Iceberg source needs the stream's declared columns")

    def streamReader(self, schema: StructType) -> IcebergStreamReader:
        return IcebergStreamReader(schema, dict(self.options))

    def reader(self, schema: StructType) -> IcebergStaticReader:
        """``spark.read.format("streamjob_iceberg")``: the table as static data."""
        return IcebergStaticReader(schema, dict(self.options))
