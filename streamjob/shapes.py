"""The JSON shape of each object (docs/json.md): one function per object, used by every
``--json`` of the command line and the shell (through
:attr:`streamjob.executor.result.Result.data`) and by the HTTP API alike, so a job
reads the same in ``streamjob status --json``, ``streamjob list --json``,
``streamjob describe JOB --json``, ``GET /v1/status`` and ``GET /v1/jobs/{name}``.

Rules of every shape: keys are snake_case and stable (a key is added, never renamed);
a missing value is ``null``, never an absent key; times are ISO-8601 text in UTC (to
the second); durations carry their unit in the key (``_ms``, ``_s``); an object's
qualified name ``db.name`` is under its kind (``job``, ``stream``, ``table``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

#: Keys of a job's state (``status --json`` ``.jobs[]``, ``list --json`` ``[]``).
JOB_KEYS = ("job", "status", "desired_state", "guarantee", "query", "owner", "live", "batch",
            "last_checkpoint", "last_checkpoint_at", "last_checkpoint_age_s",
            "input_rows_per_s", "processed_rows_per_s", "lag_records", "attempts",
            "error", "last_error", "progress_updated_at")
#: Keys ``describe JOB --json`` adds to :data:`JOB_KEYS`.
JOB_DETAIL_KEYS = ("uid", "output_mode", "checkpoint_directory", "created_at",
                   "updated_at", "run_count", "failed_runs", "expired_checkpoints",
                   "output", "checkpointing", "rows_visible", "cannot_run_now",
                   "properties", "dependencies", "runs", "checkpoints",
                   "checkpoints_unavailable", "malformed_records",
                   "missing_columns", "versions", "sink_table_version")
#: Keys of a version of a job's query (a job's ``versions``; issue 30, docs/upgrades.md).
VERSION_KEYS = ("version", "query", "created_at", "principal", "change")
#: Keys of a checkpoint (``checkpoints JOB --json`` ``[]``, a job's ``checkpoints``).
CHECKPOINT_KEYS = ("checkpoint_id", "status", "started_at", "ended_at", "duration_ms",
                   "input_rows", "state_rows", "state_bytes", "source_offsets",
                   "fingerprint", "job_uid")
#: Keys of a savepoint (``SHOW SAVEPOINTS``, ``streamjob savepoint list --json``; issue 30).
SAVEPOINT_KEYS = ("job", "savepoint", "checkpoint_id", "job_uid", "epoch", "fingerprint",
                  "source_offsets", "taken_at", "created_at", "owner", "location")
#: Keys of an OPTIMIZE result (issue 32; ``--json``, ``POST /v1/statements``).
OPTIMIZE_KEYS = ("table", "location", "operation", "zorder_by", "version", "files_added",
                 "files_removed", "bytes_added", "bytes_removed", "partitions_optimized")
#: Keys of a VACUUM result (issue 32; ``--json``, ``POST /v1/statements``).
VACUUM_KEYS = ("table", "location", "retention_hours", "dry_run", "files_deleted",
               "bytes_deleted", "files", "snapshots_expired", "snapshots_kept", "kept_for")
#: Keys of a run (a job's ``runs``, ``GET /v1/jobs/{name}/runs``).
RUN_KEYS = ("run", "attempt", "status", "started_at", "ended_at", "cause", "job_uid")
#: Keys of a stream (``describe STREAM --json``, ``GET /v1/streams/{name}``).
STREAM_KEYS = ("stream", "kind", "source", "query", "row_format", "used_by", "columns",
               "properties")
#: Keys of a table (``describe TABLE --json``, ``GET /v1/tables/{name}``).
TABLE_KEYS = ("table", "kind", "connector", "location", "partitioned_by", "row_format",
              "used_by", "columns", "properties")
#: Keys of EXPLAIN's result (``-e "EXPLAIN j" --json``, ``POST /v1/statements``), built by
#: :func:`streamjob.planner.explain.explain`.
EXPLAIN_KEYS = ("job", "exists", "status", "query", "output_mode", "guarantee",
                "guarantee_reason", "sources", "derived_streams", "static_tables", "sink",
                "state", "trigger_interval_ms", "event_mode", "checkpoint_interval_ms",
                "checkpoints_retained", "checkpoint_backend", "max_records_per_batch",
                "physical_plan")
#: Keys of one of EXPLAIN's ``sources``.
EXPLAIN_SOURCE_KEYS = ("stream", "connector", "location", "format", "reset", "consumer_group",
               "starts_from", "starting_offsets", "partitions", "watermark_column",
               "watermark_delay", "malformed_policy")
#: Keys of one of EXPLAIN's ``state`` (a stateful operator).
EXPLAIN_STATE_KEYS = ("operator", "keys", "watermark", "retention")
#: Keys of the status document (``status --json``, ``GET /v1/status``).
STATUS_KEYS = ("at", "server", "servers", "placement", "jobs")


def ts(value: datetime | str | None) -> str | None:
    """ISO-8601 text to the second of a datetime (text passes as it is), or None."""
    if value is None or isinstance(value, str):
        return value
    return value.isoformat(timespec="seconds")


def checkpoint_json(c) -> dict[str, Any]:
    """A :class:`~streamjob.catalog.records.CheckpointInfo` as :data:`CHECKPOINT_KEYS`:
    ``checkpoint_id`` = the micro-batch id; ``source_offsets`` as the source reported
    them (Kafka: ``{topic: {partition: next offset}}``); ``state_bytes`` null when
    stateless or recorded before it was measured."""
    return {"checkpoint_id": c.checkpoint_id, "status": c.status,
            "started_at": ts(c.started_at), "ended_at": ts(c.ended_at),
            "duration_ms": c.duration_ms, "input_rows": c.input_rows,
            "state_rows": c.state_rows, "state_bytes": getattr(c, "state_bytes", None),
            "source_offsets": c.source_offsets, "fingerprint": c.fingerprint,
            "job_uid": c.job_uid}


def savepoint_json(sp) -> dict[str, Any]:
    """A :class:`~streamjob.catalog.records.SavepointInfo` as :data:`SAVEPOINT_KEYS`:
    ``checkpoint_id`` the batch it keeps; ``epoch`` the checkpoint epoch it was taken in;
    ``fingerprint`` the query version; ``taken_at`` when its batch completed,
    ``created_at`` when it was made; ``owner`` the principal; ``location`` its folder."""
    return {"job": sp.job, "savepoint": sp.name, "checkpoint_id": sp.checkpoint_id,
            "job_uid": sp.job_uid, "epoch": sp.epoch, "fingerprint": sp.fingerprint,
            "source_offsets": sp.source_offsets, "taken_at": ts(sp.taken_at),
            "created_at": ts(sp.created_at), "owner": sp.owner, "location": sp.location}


def optimize_json(table: str, location: str, zorder_by, done) -> dict[str, Any]:
    """What OPTIMIZE did to Delta or Iceberg table ``table`` at ``location`` (a
    :class:`~streamjob.connectors.delta.maintenance.Optimized` or
    :class:`~streamjob.connectors.iceberg.compaction.Compacted`) as :data:`OPTIMIZE_KEYS`:
    ``operation`` ``compact`` or ``zorder``; ``version`` the Delta table version or the
    Iceberg ``replace`` snapshot's id it committed (null: nothing to rewrite); files and
    bytes added and removed."""
    return {"table": table, "location": location,
            "operation": "zorder" if zorder_by else "compact", "zorder_by": list(zorder_by),
            "version": done.version, "files_added": done.files_added,
            "files_removed": done.files_removed, "bytes_added": done.bytes_added,
            "bytes_removed": done.bytes_removed,
            "partitions_optimized": done.partitions_optimized}


def vacuum_json(table: str, location: str, hours: int, done,
                kept_for: Iterable[str] = ()) -> dict[str, Any]:
    """What VACUUM deleted from Delta or Iceberg table ``table`` (a
    :class:`~streamjob.connectors.delta.maintenance.Vacuumed` or
    :class:`~streamjob.connectors.iceberg.maintenance.Vacuumed`) as :data:`VACUUM_KEYS`:
    with ``dry_run`` what it would delete; ``files`` ``[{"path", "bytes"}]``, paths
    relative to ``location``; ``snapshots_expired`` and ``snapshots_kept`` the snapshot
    ids it expired and those past the retention it kept for the jobs ``kept_for``
    (sorted; an Iceberg table's; null for a Delta table, whose VACUUM expires no
    versions)."""
    return {"table": table, "location": location, "retention_hours": hours,
            "dry_run": done.dry_run, "files_deleted": len(done.files),
            "bytes_deleted": done.bytes,
            "files": [{"path": p, "bytes": b} for p, b in done.files],
            "snapshots_expired": None if done.expired is None else sorted(done.expired),
            "snapshots_kept": None if done.kept is None else sorted(done.kept),
            "kept_for": sorted(kept_for) if done.kept else []}


def version_json(v) -> dict[str, Any]:
    """A :class:`~streamjob.catalog.records.JobVersionInfo` as :data:`VERSION_KEYS`:
    ``version`` from 1 (CREATE); ``created_at`` and ``principal`` when and by whom
    (``principal`` null when unknown); ``change`` the upgrade class it was applied under
    (``stateless``, ``compatible``, ``incompatible``; null for version 1)."""
    return {"version": v.version, "query": v.query, "created_at": ts(v.created_at),
            "principal": v.principal, "change": v.change}


def run_json(number: int, r) -> dict[str, Any]:
    """A :class:`~streamjob.catalog.records.RunInfo` as :data:`RUN_KEYS`: ``run`` its
    number over the job's life (from 1, never reused); ``attempt`` 1 at each start or
    takeover, +1 per failover restart; ``ended_at`` null while it lasts."""
    return {"run": number, "attempt": r.attempt, "status": r.status,
            "started_at": ts(r.started_at), "ended_at": ts(r.ended_at), "cause": r.cause,
            "job_uid": r.job_uid}


def runs_json(runs: list) -> list[dict[str, Any]]:
    """Every run of a job (oldest first) as :func:`run_json`, numbered from 1."""
    return [run_json(i + 1, r) for i, r in enumerate(runs)]


def job_state(job, now: datetime, live_ids: set[str], latest=None,
              guarantee: str | None = None) -> dict[str, Any]:
    """A job's state now as :data:`JOB_KEYS` (see :func:`streamjob.status.status_snapshot`
    for what each means).

    Args:
        job: its :class:`~streamjob.catalog.records.JobInfo`.
        now: the aware UTC time ``last_checkpoint_age_s`` counts to.
        live_ids: ids of the live job managers.
        latest: its latest checkpoint (a CheckpointInfo, or its :func:`checkpoint_json`)
            or None.
        guarantee: its delivery guarantee; None: computed from its properties.
    """
    from . import properties as jp
    from .catalog.records import ACTIVE_STATUSES, JobStatus

    active = job.status in ACTIVE_STATUSES
    live = (getattr(job, "owner", None) in live_ids) if active else None
    progress = getattr(job, "progress", None) or {}
    batch = progress.get("batch_id")
    at = parse_time(progress.get("last_checkpoint_at"))
    latest_id = None
    if latest is not None:
        c = latest if isinstance(latest, dict) else checkpoint_json(latest)
        latest_id = c["checkpoint_id"]
        batch = latest_id if batch is None else batch
        at = at or parse_time(c["ended_at"] or c["started_at"])
    updated = parse_time(progress.get("updated_at"))
    current = live and job.status == JobStatus.RUNNING  # rates and lag describe now
    if guarantee is None:
        guarantee = jp.guarantee(jp.values(job.properties, job.session_properties))
    return {
        "job": job.qualified_name, "status": str(job.status),
        "desired_state": str(job.desired_state), "guarantee": str(guarantee),
        "query": job.query,
        "owner": getattr(job, "owner", None), "live": live, "batch": batch,
        "last_checkpoint": latest_id,
        "last_checkpoint_at": at.isoformat(timespec="seconds") if at else None,
        "last_checkpoint_age_s": (round(max(0.0, (now - at).total_seconds()), 1)
                                  if at else None),  # clocks of two hosts may differ
        "input_rows_per_s": progress.get("input_rows_per_s") if current else None,
        "processed_rows_per_s": progress.get("processed_rows_per_s") if current else None,
        "lag_records": progress.get("lag_records") if current else None,
        "attempts": job.attempts,
        "error": job.last_error if job.status in (JobStatus.FAILED, JobStatus.RECOVERING) else None,
        "last_error": job.last_error,
        "progress_updated_at": updated.isoformat(timespec="seconds") if updated else None,
    }


def parse_time(value):
    """An aware UTC datetime from a datetime or an ISO-8601 string (naive = UTC), or None."""
    from datetime import datetime, timezone

    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
