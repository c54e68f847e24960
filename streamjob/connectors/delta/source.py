"""The Delta stream source: a Spark Python streaming data source (``streamjob_delta``)
that reads a Delta table's commits incrementally, on delta-rs and the table's log
(:mod:`.log`), following the rules of Delta's own streaming source (Delta Lake's
``DeltaSource``; docs "Table streaming reads and writes").

Offsets: ``{"delta:<table path>": {"version": v, "index": i, "snapshot": s}}``, the
position of the next data file to read: file ``i`` (0-based) of version ``v``'s added
data files in log order, or, with ``s`` = 1, of the sorted data files of the table's
snapshot at ``v`` (the first start without a starting version reads the snapshot, then
the commits after it, as Delta's ``isStartingVersion``). A finished version moves the
position to ``(v + 1, 0, 0)``. Spark writes each micro-batch's end offset to the
checkpoint's offset log before the batch runs, and the files between two positions
never change (a commit file is immutable), so a restarted query reads exactly the same
files again: the source is replayable, which exactly-once needs (DESIGN §6).

Which commits are read (Delta's rules): a commit that only adds data files is read; an
OPTIMIZE or other rewrite with ``dataChange`` false is not read (same rows); a commit
that removes data (DELETE, UPDATE, MERGE, an overwrite) fails the job naming its version
unless ``ignoreDeletes`` (a commit that only removes is skipped), ``ignoreChanges`` (a
commit that removes is skipped when it adds nothing, else its added files are read again:
rows it rewrote come twice, downstream must cope) or ``skipChangeCommits`` (every
commit that removes data is skipped whole). A commit that changes the schema so that a
declared column is gone or of another type fails the job; tables with deletion vectors
are refused (delta-rs writes none).

Options (all strings; Spark lower-cases the keys):

- ``path``: the table's local directory; ``key``: the offsets' key;
- ``startingVersion``: a version (its commit and the later ones are read; not the
  snapshot) or ``latest`` (only commits after the current version);
- ``startingTimestamp``: ms since the epoch: from the first version committed at or
  after it (the next commit when all are older);
- neither: the snapshot of the current version, then the commits after it;
- ``maxFilesPerTrigger``: the most data files per micro-batch (Delta's default 1000;
  0: no cap); Spark's ``ReadMaxFiles`` limit, ignored under ``Trigger.AvailableNow``
  style reads that ask for everything;
- ``ignoreDeletes``, ``ignoreChanges``, ``skipChangeCommits``: ``true``/``false``;
- ``partitions``: the most read tasks of a micro-batch (the session's parallelism).
"""

from __future__ import annotations

import logging
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    InputPartition)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles
from pyspark.sql.types import StructType

from streamjob.connectors import worker
from streamjob.connectors.delta import log as dlog
from streamjob.connectors.delta.options import (  # noqa: F401 - the names, also exported
    IGNORE_CHANGES, IGNORE_DELETES, KEY, MAX_FILES, PARTITIONS, PATH, SKIP_CHANGE_COMMITS,
    SOURCE_NAME, STARTING_TIMESTAMP, STARTING_VERSION, VERSION_AS_OF, offsets_key)
from streamjob.exceptions import ConnectorError, InvalidConfiguration, NotAppendOnly

worker.install()

log = logging.getLogger(__name__)

BATCH_ROWS = 50_000
"""Rows per Arrow batch handed to Spark."""

Position = tuple[int, int, int]  # (version, index, snapshot 0/1)


class DeltaFiles(InputPartition):
    """One read task: ``files``, ``(local path, ((partition column, text), ...))``."""

    def __init__(self, files: list[tuple[str, tuple]]) -> None:
        self.files = files


def _flag(options: dict, name: str) -> bool:
    value = str(options.get(name.lower(), "false")).strip().lower()
    if value not in ("true", "false"):
        raise InvalidConfiguration(f"option {name} must be true or false, got '{value}'")
    return value == "true"


class DeltaStreamReader(DataSourceStreamReader):
    """Plans micro-batches over a Delta table's commits; see the module docstring."""

    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        options = {k.lower(): v for k, v in options.items()}
        self.schema = schema
        self.path = options[PATH.lower()]
        self.key = options.get(KEY.lower()) or offsets_key(self.path)
        self.starting_version = (options.get(STARTING_VERSION.lower()) or "").strip().lower() or None
        ts = (options.get(STARTING_TIMESTAMP.lower()) or "").strip()
        self.starting_timestamp = int(ts) if ts else None
        self.max_files = int(options.get(MAX_FILES.lower()) or 0)
        self.ignore_deletes = _flag(options, IGNORE_DELETES)
        self.ignore_changes = _flag(options, IGNORE_CHANGES)
        self.skip_change_commits = _flag(options, SKIP_CHANGE_COMMITS)
        self.partitions_max = max(1, int(options.get(PARTITIONS.lower()) or 1))
        self._commits: dict[int, list] = {}   # version -> its files as read (policies applied)
        self._snapshots: dict[int, list] = {}  # version -> its snapshot's files

    # -- driver side ---------------------------------------------------------------

    def _where(self) -> str:
        return f"the Delta table at {self.path}"

    def _latest(self) -> int:
        latest = dlog.latest_version(self.path)
        if latest is None:
            raise ConnectorError(f"there is no Delta table at {self.path} (no commit in its "
                                 "_delta_log); a stream reads an existing table")
        return latest

    def _files(self, version: int) -> list:
        """The files version ``version`` contributes to the stream, Delta's rules applied
        (module docstring).

        Raises:
            NotAppendOnly: a commit that removes data without a policy that allows it.
            ConnectorError: a schema change that drops or retypes a declared column,
                deletion vectors.
        """
        if version in self._commits:
            return self._commits[version]
        commit = dlog.read_commit(self.path, version)
        if commit.schema is not None:
            self._check_schema(commit.schema, version)
        if commit.deletion_vectors:
            raise ConnectorError(
                f"version {version} of {self._where()} uses deletion vectors, which the Delta "
                "stream source does not read")
        files = commit.adds
        if commit.removes:
            what = commit.operation or "a commit that removes data"
            if self.skip_change_commits:
                files = []
            elif commit.adds:
                if not self.ignore_changes:
                    raise NotAppendOnly(
                        f"{self._where()} changed existing rows at version {version} ({what}: "
                        f"{commit.removes} data file(s) removed, {len(commit.adds)} added); a "
                        "Delta stream reads appends only. Set \"skipChangeCommits\"=\"true\" to "
                        "skip such commits, or \"ignoreChanges\"=\"true\" to read their added "
                        "files (rewritten rows come again)")
            elif not (self.ignore_deletes or self.ignore_changes):
                raise NotAppendOnly(
                    f"{self._where()} deleted rows at version {version} ({what}: "
                    f"{commit.removes} data file(s) removed); a Delta stream reads appends "
                    "only. Set \"ignoreDeletes\"=\"true\" (or \"skipChangeCommits\"=\"true\") "
                    "to skip commits that delete")
            if not files:
                log.info("skipped version %s of %s (%s)", version, self._where(), what)
        self._commits[version] = files
        return files

    def _snapshot(self, version: int) -> list:
        if version not in self._snapshots:
            self._snapshots = {version: dlog.snapshot_files(self.path, version)}
        return self._snapshots[version]

    def _check_schema(self, schema_json: str, version: int) -> None:
        """A commit's new schema must still have the declared columns with their types.

        Raises:
            ConnectorError: names the columns gone or retyped and the version.
        """
        from pyspark.sql.pandas.types import to_arrow_schema

        from streamjob.connectors.delta.sink import delta_types

        have = {k.lower(): v for k, v in delta_types(dlog.table_types(schema_json)).items()}
        want = delta_types(to_arrow_schema(self.schema, timezone="UTC"))
        bad = [n for n, t in want.items() if have.get(n.lower()) != t]
        if bad:
            raise ConnectorError(
                f"{self._where()} changed its schema at version {version}: declared "
                f"column(s) {', '.join(bad)} gone or of another type")

    def _position(self, offset: dict) -> Position:
        at = (offset or {}).get(self.key)
        if not isinstance(at, dict):  # the table moved? only our own key is ours
            raise ConnectorError(f"the checkpoint's offsets hold no position in {self._where()}")
        return int(at["version"]), int(at.get("index", 0)), int(at.get("snapshot", 0))

    def _offset(self, pos: Position) -> dict:
        return {self.key: {"version": pos[0], "index": pos[1], "snapshot": pos[2]}}

    def initialOffset(self) -> dict:
        """Where a first start (no checkpoint) reads from: ``startingVersion``,
        ``startingTimestamp``, else the current snapshot (module docstring).

        Raises:
            ConnectorError: no table there; a starting version beyond the latest.
        """
        latest = self._latest()
        if self.starting_version == "latest":
            return self._offset((latest + 1, 0, 0))
        if self.starting_version is not None:
            v = int(self.starting_version)
            if v > latest:
                raise ConnectorError(f"startingVersion {v} of {self._where()} is beyond its "
                                     f"latest version {latest}")
            return self._offset((v, 0, 0))
        if self.starting_timestamp is not None:
            return self._offset((dlog.version_at(self.path, self.starting_timestamp, latest), 0, 0))
        return self._offset((latest, 0, 1))

    def getDefaultReadLimit(self) -> ReadLimit:
        """``ReadMaxFiles(maxFilesPerTrigger)`` when a cap is set, else read everything."""
        return ReadMaxFiles(self.max_files) if self.max_files > 0 else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The position after the files up to the latest version, at most
        ``limit.max_files`` of them (a version may be split between micro-batches).

        Raises:
            ConnectorError: no table there any more, or one whose latest version lies
                before ``start`` (replaced); a commit the stream may not read
                (:meth:`_files`).
        """
        v, i, snap = self._position(start)
        latest = self._latest()
        if v > latest + 1 or (snap and v > latest):
            raise ConnectorError(
                f"{self._where()} is at version {latest}, before the job's position (version "
                f"{v}): the table was replaced or its log rewritten. Start the job on a new "
                "checkpoint (DROP and CREATE STREAMJOB) to read it again")
        budget = limit.max_files if isinstance(limit, ReadMaxFiles) else None
        while snap or v <= latest:
            files = self._snapshot(v) if snap else self._files(v)
            left = len(files) - i
            if budget is not None and left > budget:
                i += budget
                break
            if budget is not None:
                budget -= max(0, left)
            v, i, snap = v + 1, 0, 0
            if budget == 0:
                break
        for old in [k for k in self._commits if k < v - 1]:  # read again only on replay
            del self._commits[old]
        return self._offset((v, i, snap))

    def reportLatestOffset(self) -> None:
        """None: Spark's progress shows no latest offset for a Delta stream. A position
        after the latest version would read as records of lag in the job's Kafka lag
        (``manager/lag.py`` subtracts offsets per key), and versions are no records."""
        return None

    def partitions(self, start: dict, end: dict) -> list[DeltaFiles]:
        """The data files between ``start`` and ``end``, spread over at most
        ``partitions`` read tasks.

        Raises:
            ConnectorError: a version is no longer in the log.
        """
        v, i, snap = self._position(start)
        ev, ei, _ = self._position(end)
        chosen = []
        while (v, i) < (ev, ei):
            files = self._snapshot(v) if snap else self._files(v)
            stop = ei if v == ev else len(files)
            chosen.extend(files[i:stop])
            v, i, snap = v + 1, 0, 0
        if not chosen:
            return []
        n = min(len(chosen), self.partitions_max)
        tasks: list[list] = [[] for _ in range(n)]
        for k, f in enumerate(chosen):
            tasks[k % n].append((dlog.file_path(self.path, f.path), f.partition_values))
        return [DeltaFiles(t) for t in tasks]

    def commit(self, end: dict) -> None:
        """Spark finished every file before ``end``; nothing to release."""

    # -- executor side -------------------------------------------------------------

    def read(self, partition: DeltaFiles) -> Iterator[pa.RecordBatch]:
        """Yield the rows of the task's files as Arrow record batches of the declared
        columns: columns matched by name (case-insensitively), partition columns from
        the log's partition values, a declared column a file lacks (added to the table
        after the file was written) NULL.

        Raises:
            ConnectorError: a file is gone (VACUUM removed it) or unreadable, or a value
                does not fit its declared type (names the file and column).
        """
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.schema, timezone="UTC")
        for path, partition_values in partition.files:
            yield from _read_file(path, dict(partition_values), target)


def _read_file(path: str, partition_values: dict, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise ConnectorError(f"Delta data file {path} is gone (VACUUM removed it before the "
                             "stream read it?)") from None
    except (OSError, pa.ArrowException) as exc:
        raise ConnectorError(f"cannot read Delta data file {path}: {exc}") from None
    have = {n.lower(): n for n in table.column_names}
    parts = {k.lower(): v for k, v in partition_values.items()}
    columns = []
    for f in target:
        low = f.name.lower()
        try:
            if low in parts:
                # the log's JSON gives partition values as text (Delta protocol,
                # "Partition Value Serialization"); delta-rs' add actions give them typed
                value = parts[low]
                if value is None:
                    col = pa.nulls(table.num_rows, f.type)
                else:
                    col = pa.array([value] * table.num_rows)
                    col = col.cast(f.type) if not col.type.equals(f.type) else col
            elif low in have:
                col = table.column(have[low])
                if not col.type.equals(f.type):
                    col = col.cast(f.type)
            else:
                col = pa.nulls(table.num_rows, f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise ConnectorError(f"Delta data file {path}: column {f.name} does not fit "
                                 f"{f.type}: {exc}") from None
        columns.append(col)
    out = pa.Table.from_arrays(columns, schema=target)
    yield from out.to_batches(max_chunksize=BATCH_ROWS)


class DeltaStaticReader(DataSourceReader):
    """A Delta table read whole as static data (a stream-static join, DESIGN §7): one
    read task that loads the table's latest version when it runs. Spark plans a batch
    data source's partitions once per query but runs ``read`` at every micro-batch that
    scans it (:mod:`streamjob.connectors.static`), so each micro-batch joins the
    snapshot committed when it runs. Options: ``path``; ``versionAsOf`` (time travel:
    that version instead of the latest)."""

    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        options = {k.lower(): v for k, v in options.items()}
        self.schema = schema
        self.path = options[PATH.lower()]
        at = options.get(VERSION_AS_OF.lower())
        self.version = int(at) if at is not None else None

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        """The rows of the table's latest snapshot, as :meth:`DeltaStreamReader.read`.

        Raises:
            ConnectorError: no Delta table there, or a file unreadable.
        """
        from pyspark.sql.pandas.types import to_arrow_schema

        latest = dlog.latest_version(self.path) if self.version is None else self.version
        if latest is None:
            raise ConnectorError(f"there is no Delta table at {self.path}")
        target = to_arrow_schema(self.schema, timezone="UTC")
        empty = True
        for f in dlog.snapshot_files(self.path, latest):
            for batch in _read_file(dlog.file_path(self.path, f.path),
                                    dict(f.partition_values), target):
                empty = False
                yield batch
        if empty:  # Spark takes no batches as no rows
            return


class DeltaDataSource(DataSource):
    """``spark.readStream.format("streamjob_delta")``: see the module docstring;
    ``spark.read.format("streamjob_delta")``: the table's latest snapshot as static
    data (:class:`DeltaStaticReader`)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        raise ConnectorError("the streamjob Delta source needs the stream's declared columns")

    def streamReader(self, schema: StructType) -> DeltaStreamReader:
        return DeltaStreamReader(schema, dict(self.options))

    def reader(self, schema: StructType) -> DeltaStaticReader:
        return DeltaStaticReader(schema, dict(self.options))
