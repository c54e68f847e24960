"""Every job's state now, read from the catalog and JSON-ready: the one answer to "how
are the jobs doing" under ``streamjob status``, the HTTP API (``GET /v1/status``,
``/v1/jobs``), the web console and ``/metrics`` (DESIGN §8)."""

from __future__ import annotations

import logging
from typing import Any

from .catalog.records import ACTIVE_STATUSES
from .exceptions import StreamJobError
from .shapes import parse_time  # noqa: F401  (alerts and others import it from here)

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


def live_now(catalog) -> tuple:
    """``(now, ids of the live job managers)``: an aware UTC datetime and a set of str,
    what :func:`streamjob.shapes.job_state` needs (the catalog's view)."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc), live_job_managers(catalog)


def status_snapshot(catalog) -> dict[str, Any]:
    """Every job's state now, JSON-ready: ``{"at", "server", "jobs": [...]}``.

    Per job the job shape of :func:`streamjob.shapes.job_state` (docs/json.md): job,
    status, desired_state, guarantee, owner, live, batch, last_checkpoint,
    last_checkpoint_at, last_checkpoint_age_s, input_rows_per_s, processed_rows_per_s,
    lag_records, attempts, error, last_error, progress_updated_at.

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
    * ``batch`` and the checkpoint time fall back to the latest recorded checkpoint;
      ``last_checkpoint`` is its id (the catalog's record).
    * ``error`` is the job's error while it is FAILED or RECOVERING; ``last_error`` the
      latest error whatever the status (the runs' causes are in DESCRIBE).

    ``server`` is the job manager holding the lease (``{"label": "host:pid", ...}``, its
    times as ISO-8601 text to the second like every time of docs/json.md) or null.
    ``servers``: the live sharing servers (``streamjob server --share``, issue 33), each
    ``{"label", "server_id", "max_jobs", "labels", "jobs", "heartbeat_age_ms",
    "refused", "cores", "cores_used", "memory_mb", "memory_used_mb", "spark_master"}``
    with the jobs whose lease it holds (qualified names), the jobs it refused to take
    (``{job: reason}``: their checkpoints are not reachable from it), its declared
    capacity (None: not declared) and what its jobs need of it; empty when no server
    shares. ``placement``: ``{"waiting": {job: reason}, "moves", "lease_losses"}``, the
    RUNNING jobs no sharing server can take and why, and the hand-overs and lost leases
    counted over every job (null when no job has a lease).
    """
    from dataclasses import asdict, is_dataclass

    from .shapes import job_state, ts

    now, live_ids = live_now(catalog)
    server = lease_holder(catalog)
    if server is not None and getattr(server, "server_id", None) not in live_ids:
        server = None  # its lease has not expired yet, but its process is gone
    jobs = [job_state(job, now, live_ids, catalog.latest_checkpoint(job.uid))
            for job in catalog.list_jobs()]
    described = None
    if server is not None:
        fields = asdict(server) if is_dataclass(server) else {}
        described = {"label": server_label(server),
                     **{k: ts(v) if k.endswith("_at") else v for k, v in fields.items()}}
    return {"at": now.isoformat(timespec="seconds"), "server": described,
            "servers": sharing_servers(catalog), "placement": placement(catalog), "jobs": jobs}


def placement(catalog) -> dict[str, Any] | None:
    """status_snapshot's ``placement``: ``{"waiting": {job: reason}, "moves",
    "lease_losses"}``; None when no job has a lease (no server shares) or the catalog
    cannot tell (a warning is logged)."""
    leases = getattr(catalog, "job_leases", None)
    if not callable(leases):
        return None
    try:
        rows = leases()
        if not rows:
            return None
        jobs = {j.uid: j for j in catalog.list_jobs()}
    except StreamJobError as exc:
        log.warning("cannot read the job leases: %s", exc)
        return None
    from .catalog.records import DesiredState

    waiting = {jobs[r.job_uid].qualified_name: r.waiting for r in rows
               if r.waiting and not r.live and r.job_uid in jobs
               and jobs[r.job_uid].desired_state == DesiredState.RUNNING}
    return {"waiting": dict(sorted(waiting.items())), "moves": sum(r.moves for r in rows),
            "lease_losses": sum(r.losses for r in rows)}


def sharing_servers(catalog) -> list[dict[str, Any]]:
    """The live sharing servers with the jobs each runs (status_snapshot's ``servers``),
    ordered by id; [] when none shares or the catalog cannot tell (a warning is logged)."""
    from .manager.liveness import LIVE_WITHIN_MS

    listed = getattr(catalog, "share_servers", None)
    if not callable(listed):
        return []
    try:
        servers = listed(LIVE_WITHIN_MS)
        if not servers:
            return []
        listed_jobs = catalog.list_jobs()
        names = {j.uid: j.qualified_name for j in listed_jobs}
        from .manager.placement import job_need

        needs = {j.uid: job_need(j) for j in listed_jobs}
        hosts = {s.server_id: s for s in catalog.list_servers()}
        refused: dict[str, dict[str, str]] = {}  # server id -> {job: why it refused it}
        for lease in catalog.job_leases():
            for sid, why in lease.refusals.items():
                if lease.job_uid in names:
                    refused.setdefault(sid, {})[names[lease.job_uid]] = why
    except StreamJobError as exc:
        log.warning("cannot read the sharing servers: %s", exc)
        return []
    return [{"label": server_label(hosts.get(s.server_id, s.server_id)),
             "server_id": s.server_id, "max_jobs": s.max_jobs, "labels": sorted(s.labels),
             "jobs": sorted(names[u] for u in s.jobs if u in names),
             "heartbeat_age_ms": s.heartbeat_age_ms,
             "refused": refused.get(s.server_id, {}), "cores": s.cores,
             "cores_used": sum(needs[u].cores for u in s.jobs if u in needs),
             "memory_mb": s.memory_mb,
             "memory_used_mb": sum(needs[u].memory_mb for u in s.jobs if u in needs),
             "spark_master": s.spark_master} for s in servers]
