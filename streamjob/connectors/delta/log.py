"""Reading a Delta table's transaction log version by version, for the Delta stream
source (:mod:`.source`): what each commit added and removed, when it was committed,
the data files of a snapshot, and the table's schema. Pure Python over the log's JSON
commits (``_delta_log/<version>.json``, Delta's protocol, "Delta Log Entries") plus
delta-rs for snapshots and schemas; local paths only (as the sink).

A version's *data files* are its ``add`` actions with ``dataChange`` true, in the order
the commit lists them (a commit file never changes, so the order is a stable index: the
offsets of :mod:`.source` point into it). Actions with ``dataChange`` false (OPTIMIZE's
compaction rewrites the same rows) change no data and are not read, as in Delta's own
streaming source (``DeltaSource``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from typing import TYPE_CHECKING

from streamjob.exceptions import ConnectorError

if TYPE_CHECKING:  # pyarrow loads when a Delta table is read, not when statements are checked
    import pyarrow as pa

__all__ = ["DataFile", "Commit", "latest_version", "read_commit", "version_at",
           "version_as_of", "version_before", "transaction_commit", "last_operation",
           "snapshot_files",
           "table_types", "file_path"]

_COMMIT = re.compile(r"^(\d{20})\.json$")


def _first_line(exc: BaseException) -> str:
    """delta-rs errors carry a Rust backtrace after their first line."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@dataclass(frozen=True)
class DataFile:
    """One data file a version added: ``path`` as the log writes it (relative to the
    table and URL-encoded, or an absolute URI), its partition values (``{column: text
    or None}``) and its row count when the log has statistics (else None)."""

    path: str
    partition_values: tuple[tuple[str, str | None], ...] = ()
    rows: int | None = None


@dataclass
class Commit:
    """What version ``version`` of a table did: the data files it added (``adds``,
    log order), how many data files it removed with ``dataChange`` (``removes``: a
    DELETE, UPDATE, MERGE or overwrite), its commit time (ms since the epoch:
    ``commitInfo.timestamp``, else the commit file's modification time), the table
    schema it set (``schema``: Delta's schema JSON text, None when the commit left it)
    and its operation name (``commitInfo.operation``, None when absent)."""

    version: int
    adds: list[DataFile] = field(default_factory=list)
    removes: int = 0
    timestamp: int = 0
    schema: str | None = None
    operation: str | None = None
    deletion_vectors: bool = False


def log_dir(path: str) -> Path:
    """The ``_delta_log`` directory of the table at local ``path``."""
    return Path(path) / "_delta_log"


def latest_version(path: str) -> int | None:
    """The newest version whose commit is in the log of the table at ``path``, or None
    when there is no Delta table there (no ``_delta_log`` or no commit in it). A log
    whose JSON commits were cleaned up up to a checkpoint still names its newest
    version in a JSON commit (Delta keeps commits after the latest checkpoint).

    Raises:
        ConnectorError: the log directory cannot be listed.
    """
    d = log_dir(path)
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConnectorError(f"cannot list the Delta log {d}: {exc.strerror or exc}") from None
    versions = [int(m.group(1)) for m in map(_COMMIT.match, names) if m]
    return max(versions) if versions else None


def read_commit(path: str, version: int) -> Commit:
    """The actions of ``version`` of the table at ``path``.

    Raises:
        ConnectorError: the commit is not in the log (log retention removed it, or the
            version does not exist yet) or cannot be parsed (names the file).
    """
    f = log_dir(path) / f"{version:020d}.json"
    try:
        text = f.read_text(encoding="utf-8")
        mtime = int(f.stat().st_mtime * 1000)
    except FileNotFoundError:
        raise ConnectorError(
            f"version {version} of the Delta table at {path} is not in its log (the log's "
            "retention removed it, or it was never committed)") from None
    except OSError as exc:
        raise ConnectorError(f"cannot read Delta commit {f}: {exc.strerror or exc}") from None
    commit = Commit(version, timestamp=mtime)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            action = json.loads(line)
        except ValueError:
            raise ConnectorError(f"Delta commit {f} line {n} is not JSON") from None
        if "add" in action:
            add = action["add"]
            if not add.get("dataChange", True):
                continue
            if add.get("deletionVector"):
                commit.deletion_vectors = True
            stats = add.get("stats")
            rows = None
            if isinstance(stats, str) and stats:
                try:
                    rows = json.loads(stats).get("numRecords")
                except ValueError:
                    rows = None
            commit.adds.append(DataFile(add["path"], tuple(sorted(
                (add.get("partitionValues") or {}).items())), rows))
        elif "remove" in action:
            if action["remove"].get("dataChange", True):
                commit.removes += 1
        elif "commitInfo" in action:
            info = action["commitInfo"] or {}
            if isinstance(info.get("timestamp"), int):
                commit.timestamp = info["timestamp"]
            commit.operation = info.get("operation")
        elif "metaData" in action:
            commit.schema = (action["metaData"] or {}).get("schemaString")
    return commit


def version_at(path: str, ms: int, latest: int) -> int:
    """The first version of the table at ``path`` committed at or after ``ms`` (ms
    since the epoch), looked up among the versions still in the log up to ``latest``;
    ``latest + 1`` when every commit is older (a stream then starts with the next
    commit, as Delta's ``startingTimestamp`` past the last commit does).

    Raises:
        ConnectorError: the log cannot be read.
    """
    d = log_dir(path)
    try:
        present = sorted(int(m.group(1)) for m in map(_COMMIT.match, os.listdir(d)) if m)
    except OSError as exc:
        raise ConnectorError(f"cannot list the Delta log {d}: {exc.strerror or exc}") from None
    for v in present:
        if v <= latest and read_commit(path, v).timestamp >= ms:
            return v
    return latest + 1


def _present(path: str) -> list[int]:
    """The versions whose JSON commits are in the log of the table at ``path``, sorted."""
    d = log_dir(path)
    try:
        return sorted(int(m.group(1)) for m in map(_COMMIT.match, os.listdir(d)) if m)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConnectorError(f"cannot list the Delta log {d}: {exc.strerror or exc}") from None


def version_as_of(path: str, version: int) -> int:
    """``version`` checked against the table at ``path`` for time travel (``VERSION AS
    OF n``, Delta's ``versionAsOf``): a version the table has and whose snapshot can
    still be loaded.

    Raises:
        ConnectorError: no Delta table there; a version after the latest one; a version
            whose commits the log's retention removed (names the oldest one left).
    """
    latest = latest_version(path)
    if latest is None:
        raise ConnectorError(f"there is no Delta table at {path} (no commit in its _delta_log)")
    if version > latest:
        raise ConnectorError(f"the Delta table at {path} has no version {version}: its "
                             f"latest version is {latest}")
    present = _present(path)
    if version not in present and not any((log_dir(path)).glob(
            f"{version:020d}.checkpoint*.parquet")):
        oldest = present[0] if present else latest
        raise ConnectorError(f"version {version} of the Delta table at {path} is no longer "
                             f"in its log (the log's retention removed it); the oldest "
                             f"version left is {oldest}")
    return version


def version_before(path: str, ms: int) -> int:
    """The version of the table at ``path`` at time ``ms`` (ms since the epoch) for time
    travel (``TIMESTAMP AS OF``, Delta's ``timestampAsOf``): the latest version committed
    at or before ``ms``, among the commits still in the log.

    Raises:
        ConnectorError: no Delta table there; ``ms`` before the oldest commit left or
            after the latest commit (Delta refuses both; names the commits' times).
    """
    import datetime as _dt

    def iso(t: int) -> str:
        return _dt.datetime.fromtimestamp(t / 1000, _dt.timezone.utc).strftime(
            "%Y-%m-%d %H:%M:%S.%f")[:-3]

    present = _present(path)
    if not present:
        raise ConnectorError(f"there is no Delta table at {path} (no commit in its _delta_log)")
    times = [(v, read_commit(path, v).timestamp) for v in present]
    if ms > times[-1][1]:
        raise ConnectorError(
            f"{iso(ms)} is after the latest commit of the Delta table at {path} (version "
            f"{times[-1][0]}, {iso(times[-1][1])} UTC); use that time or VERSION AS OF "
            f"{times[-1][0]} (Delta's rule)")
    best = None
    for v, t in times:
        if t <= ms:
            best = v
    if best is None:
        raise ConnectorError(
            f"{iso(ms)} is before the oldest commit left in the log of the Delta table at "
            f"{path} (version {times[0][0]}, {iso(times[0][1])} UTC)")
    return best


def transaction_commit(path: str, app_id: str, txn_version: int,
                       scan: int = 1000) -> int | None:
    """The table version whose commit carries the app transaction ``(app_id,
    txn_version)`` (the Delta sink's marker of one micro-batch: :mod:`.sink`), looked up
    in the newest ``scan`` JSON commits of the table at ``path``; None when none does
    (the batch was not committed, or its commit is older than those or folded into a
    log checkpoint).

    Raises:
        ConnectorError: the log cannot be read.
    """
    for v in reversed(_present(path)[-scan:]):
        f = log_dir(path) / f"{v:020d}.json"
        try:
            text = f.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ConnectorError(f"cannot read Delta commit {f}: {exc.strerror or exc}") from None
        if '"txn"' not in text:
            continue
        for line in text.splitlines():
            try:
                txn = json.loads(line).get("txn") if line.strip() else None
            except ValueError:
                continue
            if isinstance(txn, dict) and txn.get("appId") == app_id:
                if txn.get("version") == txn_version:
                    return v
                if isinstance(txn.get("version"), int) and txn["version"] < txn_version:
                    return None  # newer commits come first: the batch is not in
    return None


def last_operation(path: str, operations: tuple[str, ...], scan: int = 1000) -> int | None:
    """The commit time (ms since the epoch) of the newest of the last ``scan`` JSON
    commits of the table at ``path`` whose ``commitInfo.operation`` is one of
    ``operations`` (``OPTIMIZE``; delta-rs' VACUUM commits ``VACUUM END``), or None.

    Raises:
        ConnectorError: the log cannot be read.
    """
    for v in reversed(_present(path)[-scan:]):
        c = read_commit(path, v)
        if c.operation in operations:
            return c.timestamp
    return None


def snapshot_files(path: str, version: int) -> list[DataFile]:
    """The data files of the table at ``path`` as of ``version`` (its snapshot, through
    delta-rs), sorted by path (a stable index for :mod:`.source`'s offsets).

    Raises:
        ConnectorError: the version cannot be loaded (log retention removed it).
    """
    from deltalake import DeltaTable

    try:
        dt = DeltaTable(path, version=version)
        import pyarrow as pa

        actions = pa.table(dt.get_add_actions(flatten=False)).to_pylist()
    except Exception as exc:  # DeltaError, OSError
        raise ConnectorError(f"cannot load version {version} of the Delta table at {path}: "
                             f"{_first_line(exc)}") from None
    files = [DataFile(a["path"], tuple(sorted((a.get("partition") or {}).items())),
                      a.get("num_records")) for a in actions]
    return sorted(files, key=lambda f: f.path)


def table_types(schema_json: str) -> pa.Schema:
    """The Arrow schema of a Delta schema's JSON text (a ``metaData.schemaString``).

    Raises:
        ConnectorError: the text is not a Delta schema.
    """
    import pyarrow as pa
    from deltalake import Schema

    try:
        return pa.schema(Schema.from_json(schema_json).to_arrow())
    except Exception as exc:
        raise ConnectorError(f"cannot read a Delta schema: {_first_line(exc)}") from None


def file_path(table_path: str, data_file: str) -> str:
    """The local path of a data file the log names (relative to the table, URL-encoded
    as Delta's protocol says, or an absolute ``file:`` URI)."""
    if "://" in data_file or data_file.startswith("file:"):
        return unquote(urlparse(data_file).path)
    return os.path.join(table_path, unquote(data_file))
