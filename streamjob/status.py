"""Every job's state now, read from the catalog and JSON-ready: the one answer to "how
are the jobs doing" under ``streamjob status``, the HTTP API (``GET /v1/status``,
``/v1/jobs``), the web console and ``/metrics`` (DESIGN §8)."""

from __future__ import annotations

import logging
from typing import Any

from .catalog.records import ACTIVE_STATUSES, JobStatus
from .exceptions import StreamJobError

log = logging.getLogger(__name__)


def lease_holder(catalog):
    """The job manager holding ``catalog``'s lease (a ServerInfo, or its id as a str), or
    None: none runs, or this catalog cannot tell (a warning is logged; the statement
    that asked has already succeeded)."""
    holder_of = getattr(catalog, "lease_holder", None)
    if not callable(holder_of):
        return None
    try:
        return holder_of()
    except StreamJobError as exc:
        log.warning("cannot read the job manager lease: %s", exc)
        return None


def server_label(info) -> str:
    """``host:pid`` of a job manager's ServerInfo, as ``streamjob status`` names it (else
    its id, or the value itself)."""
    if isinstance(info, str):
        return info
    host, pid = getattr(info, "host", None), getattr(info, "pid", None)
    if host is not None and pid is not None:
        return f"{host}:{pid}"
    return str(getattr(info, "server_id", None) or getattr(info, "id", None) or info)


#: Statuses in which some job manager should be running the job's query.
ACTIVE = ACTIVE_STATUSES


def live_job_managers(catalog) -> set[str]:
    """Ids of the registered job managers (servers, `run`, shells) alive now: heartbeat
    younger than manager.liveness.LIVE_WITHIN_MS on the catalog's clock, and on this host a
    process that exists."""
    from .manager.liveness import live_owner

    return {s.server_id for s in catalog.list_servers() if live_owner(catalog, s.server_id)}


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


def status_snapshot(catalog) -> dict[str, Any]:
    """Every job's state now, JSON-ready: ``{"at", "server", "jobs": [...]}``.

    Per job: job, status, desired_state, owner, live, batch, input_rows_per_s,
    processed_rows_per_s, lag_records, last_checkpoint_at, last_checkpoint_age_s,
    attempts, error, last_error, progress_updated_at.

    * ``live``: for a job in an active status (STARTING ... STOPPING), whether a live job
      manager (its ``owner``, heartbeat on the catalog's clock) runs it; False means its
      job manager died and nothing runs it until a server takes it over; null otherwise.
    * rates and ``lag_records`` come from the job manager's progress report
      (``JobInfo.progress``) and are null unless a live job manager runs the job (a
      stopped, failed or orphaned job's last report is not its lag now), and null while
      unknown: the report is the current run's only (issue 16; cleared when a run
      starts), so a restarted job has no rates until its run's first batch ends, and no
      lag until its run has read the broker's end offsets. ``lag_records`` is the records
      the Kafka sources hold that the job has not committed (end offsets on the broker
      minus the run's committed offsets, :mod:`streamjob.manager.lag`).
    * ``batch`` and the checkpoint time fall back to the latest recorded checkpoint.
    * ``error`` is the job's error while it is FAILED or RECOVERING; ``last_error`` the
      latest error whatever the status (the runs' causes are in DESCRIBE).

    ``server`` is the job manager holding the lease (``{"label": "host:pid", ...}``) or
    null.
    """
    from dataclasses import asdict, is_dataclass
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    live_ids = live_job_managers(catalog)
    server = lease_holder(catalog)
    if server is not None and getattr(server, "server_id", None) not in live_ids:
        server = None  # its lease has not expired yet, but its process is gone
    jobs = []
    for job in catalog.list_jobs():
        active = job.status in ACTIVE
        live = (getattr(job, "owner", None) in live_ids) if active else None
        progress = getattr(job, "progress", None) or {}
        batch = progress.get("batch_id")
        at = parse_time(progress.get("last_checkpoint_at"))
        if batch is None or at is None:
            latest = catalog.latest_checkpoint(job.uid)
            if latest is not None:
                batch = latest.checkpoint_id if batch is None else batch
                at = at or parse_time(latest.ended_at or latest.started_at)
        updated = parse_time(progress.get("updated_at"))
        current = live and job.status == JobStatus.RUNNING  # rates and lag describe now
        jobs.append({
            "job": job.qualified_name, "status": job.status,
            "desired_state": job.desired_state, "owner": getattr(job, "owner", None),
            "live": live, "batch": batch,
            "input_rows_per_s": progress.get("input_rows_per_s") if current else None,
            "processed_rows_per_s": progress.get("processed_rows_per_s") if current else None,
            "lag_records": progress.get("lag_records") if current else None,
            "last_checkpoint_at": at.isoformat(timespec="seconds") if at else None,
            "last_checkpoint_age_s": (round(max(0.0, (now - at).total_seconds()), 1)
                                      if at else None),  # clocks of two hosts may differ
            "attempts": job.attempts,
            "error": job.last_error if job.status in (JobStatus.FAILED, JobStatus.RECOVERING) else None,
            "last_error": job.last_error,
            "progress_updated_at": updated.isoformat(timespec="seconds") if updated else None,
        })
    described = None
    if server is not None:
        described = {"label": server_label(server),
                     **(asdict(server) if is_dataclass(server) else {})}
    return {"at": now.isoformat(timespec="seconds"), "server": described, "jobs": jobs}
