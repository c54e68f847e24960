"""The contract of a checkpoint backend: where a job's checkpoint *metadata* is recorded.

State always lives in the job's checkpoint directory (DESIGN §4); a backend holds one
record per retained checkpoint, a :class:`~streamjob.catalog.records.CheckpointInfo`:

==============  ===========================================================
checkpoint_id   Spark batch id (int >= 0); the record's identity per job uid
started_at      start of the micro-batch (timezone-aware UTC datetime)
ended_at        end, or None (an expired checkpoint)
duration_ms     batch duration in milliseconds, or None
source_offsets  JSON value: ``{topic: {partition: next offset}}`` for Kafka
input_rows      rows read by the batch
state_rows      rows in the state stores after it, or None (stateless job)
state_bytes     bytes the state stores held after it (Spark's memoryUsedBytes), or None
status          COMPLETED, LATE or EXPIRED
fingerprint     the job's query/schema fingerprint, or None
==============  ===========================================================

Records are addressed by job: ``<db>.<job>`` and the job's ``uid`` (a dropped and
recreated job gets a new uid, so it never sees the old incarnation's records). The
external backends serialize a record as JSON (:func:`to_json` / :func:`from_json`),
datetimes as ISO 8601 in UTC.

Errors every backend raises:

* :class:`~streamjob.exceptions.ConnectorError` — the store (ZooKeeper quorum, Kafka
  broker) cannot be reached; the message names its address.
* :class:`~streamjob.exceptions.CheckpointError` — the store refused a write or a
  delete, or holds a record it cannot read.
* :class:`ValueError` — a caller's mistake: ``retained`` < 1, an unknown status.
"""

from __future__ import annotations

import abc
import dataclasses
import json
from datetime import datetime, timezone
from typing import Any

from ...catalog.records import CHECKPOINT_STATUSES, CheckpointInfo, JobInfo
from ...exceptions import CheckpointError

#: Width of the zero-padded checkpoint id in znode names and Kafka keys (ZooKeeper's
#: own sequence width): lexical order is numeric order up to 9,999,999,999.
ID_WIDTH = 10


@dataclasses.dataclass(frozen=True)
class JobRef:
    """The part of a :class:`~streamjob.catalog.records.JobInfo` a backend uses: ``uid``,
    ``database``, ``name``. Backends accept either (a listener knows only uid and name)."""

    uid: str
    database: str
    name: str

    @property
    def qualified_name(self) -> str:
        """``database.name``."""
        return f"{self.database}.{self.name}"

    @classmethod
    def of(cls, uid: str, qualified_name: str) -> "JobRef":
        """From a uid and ``db.job``."""
        database, _, name = qualified_name.partition(".")
        return cls(uid, database, name)


class CheckpointBackend(abc.ABC):
    """Where the retained checkpoints of jobs are recorded. ``job`` arguments are a
    :class:`~streamjob.catalog.records.JobInfo` or a :class:`JobRef`. One object may serve many
    jobs; it is used from one thread at a time per job (the job's listener, or a
    statement). Usable as a context manager (closes on exit)."""

    #: ``catalog``, ``zookeeper`` or ``kafka`` (the value of ``morphling.checkpoint.backend``).
    name: str = ""

    @abc.abstractmethod
    def record(self, job: JobInfo, checkpoint: CheckpointInfo, retained: int) -> None:
        """Upsert ``checkpoint`` by its id (re-recording an id replaces that record), then
        delete the job's records beyond the ``retained`` highest ids.

        Raises:
            ValueError: ``retained`` < 1 or an unknown status.
            ConnectorError: the store is unreachable (names the address).
            CheckpointError: the store refused the write.
        """

    @abc.abstractmethod
    def list(self, job: JobInfo) -> list[CheckpointInfo]:
        """The job's retained checkpoints (of ``job.uid``), ascending by id; ``[]`` if none.

        Raises:
            ConnectorError: the store is unreachable.
            CheckpointError: a record cannot be read.
        """

    def latest(self, job: JobInfo) -> CheckpointInfo | None:
        """The job's checkpoint with the highest id, or None. Same errors as :meth:`list`."""
        cps = self.list(job)
        return cps[-1] if cps else None

    @abc.abstractmethod
    def truncate(self, job: JobInfo, after: int) -> int:
        """Delete the job's records with id > ``after`` (``-1``: all of this uid); returns
        how many were deleted (``START ... FROM CHECKPOINT n``). Errors as :meth:`record`."""

    @abc.abstractmethod
    def purge(self, job: JobInfo) -> int:
        """Delete every record of this incarnation of the job (``job.uid``; DROP
        STREAMJOB, START ... FROM) and nothing else: neither another job's nor another
        incarnation's of the same name (a job dropped and created again gets a new uid;
        the old one's late DROP must not touch the new one's records, nor the reverse).
        Returns how many checkpoint records were deleted. Errors as :meth:`record`."""

    def mark_running(self, job: JobInfo) -> None:
        """Announce that this process runs ``job`` (zookeeper: an ephemeral znode that
        disappears with this process's session). No-op elsewhere."""

    def clear_running(self, job: JobInfo) -> None:
        """Withdraw :meth:`mark_running`. No-op elsewhere; never raises for a missing mark."""

    def close(self) -> None:
        """Release connections. Idempotent. The object must not be used afterwards."""

    def __enter__(self) -> "CheckpointBackend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def check_record(checkpoint: CheckpointInfo, retained: int) -> None:
    """Validate a record before writing it.

    Raises:
        ValueError: ``retained`` < 1, a negative id, or a status outside
            :data:`~streamjob.catalog.records.CHECKPOINT_STATUSES`.
    """
    if retained < 1:
        raise ValueError(f"retained must be at least 1, got {retained}")
    if checkpoint.checkpoint_id < 0:
        raise ValueError(f"checkpoint id must be >= 0, got {checkpoint.checkpoint_id}")
    if checkpoint.status not in CHECKPOINT_STATUSES:
        raise ValueError(f"checkpoint status must be one of {', '.join(CHECKPOINT_STATUSES)}, "
                         f"got {checkpoint.status!r}")


def job_key(job: JobInfo) -> str:
    """``<db>.<job>``: the job's name in znode paths and Kafka keys (names are validated
    identifiers, so it holds no ``/`` and exactly one ``.``)."""
    from ...home import validate_name

    validate_name(job.database, "database name")
    validate_name(job.name, "job name")
    return f"{job.database}.{job.name}"


def uid_segment(job: JobInfo) -> str:
    """The job's uid as one path/key segment.

    Raises:
        CheckpointError: the uid is empty or holds ``/`` (it never should)."""
    uid = str(job.uid)
    if not uid or "/" in uid or uid in (".", ".."):
        raise CheckpointError(f"job {job.qualified_name} has an unusable uid {uid!r}")
    return uid


def padded(checkpoint_id: int) -> str:
    """A checkpoint id zero-padded to :data:`ID_WIDTH` digits: ``7`` -> ``0000000007``."""
    return f"{int(checkpoint_id):0{ID_WIDTH}d}"


def retention_victims(ids: set[int] | list[int], retained: int) -> list[int]:
    """The ids beyond the ``retained`` highest, ascending."""
    ordered = sorted(set(ids))
    return ordered[:-retained] if len(ordered) > retained else []


def _utc_iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat()


def to_json(checkpoint: CheckpointInfo) -> bytes:
    """The record as UTF-8 JSON: every field of CheckpointInfo by name, datetimes as ISO
    8601 UTC (naive ones taken as UTC). ``source_offsets`` must be JSON-serializable."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(checkpoint):
        value = getattr(checkpoint, f.name)
        out[f.name] = _utc_iso(value) if isinstance(value, datetime) else value
    return json.dumps(out, sort_keys=True, separators=(",", ":")).encode()


def from_json(data: bytes, job: JobInfo, where: str) -> CheckpointInfo:
    """Decode :func:`to_json` output for ``job`` (its uid wins over the stored one).

    Raises:
        CheckpointError: not a record (names ``where``, the znode or Kafka key).
    """
    try:
        raw = json.loads(data.decode())
        values: dict[str, Any] = {}
        for f in dataclasses.fields(CheckpointInfo):
            if f.name not in raw:
                if f.default is dataclasses.MISSING and f.name != "job_uid":
                    raise KeyError(f.name)
                continue
            value = raw[f.name]
            if f.name.endswith("_at") and value is not None:
                value = datetime.fromisoformat(value).astimezone(timezone.utc)
            values[f.name] = value
        values["job_uid"] = job.uid
        values["checkpoint_id"] = int(values["checkpoint_id"])
        return CheckpointInfo(**values)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"checkpoint record {where} of job {job.qualified_name} "
                              f"cannot be read: {exc!r}") from None
