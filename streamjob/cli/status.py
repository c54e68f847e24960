"""``streamjob status [--watch] [--json]``: a table of jobs (state, desired state, rate,
batch, checkpoint age, lag, error) and the job manager holding the lease.

:func:`_status_snapshot` reads it from the catalog (JSON-ready), :func:`_status_view`
renders it, :func:`_watch_status` redraws it every ``--interval`` seconds.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .app import _Context, client_options
from ..session import NO_SERVER, lease_holder, server_label
from ..render import _console, _table
from streamjob.catalog.records import ACTIVE_STATUSES, JobStatus


@click.command()
@click.option("-w", "--watch", is_flag=True, help="Refresh until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              metavar="S", help="Seconds between refreshes with --watch.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (with --watch one document per refresh, one per line).")
@client_options
@click.pass_obj
def status(obj: _Context, watch: bool, interval: float, as_json: bool) -> None:
    """A table of jobs: state, desired state, rate (processed rows/s), batch, age of the
    last checkpoint, source lag (records), last error; and which job manager runs them.

    With --watch the table is redrawn every --interval seconds until Ctrl-C (exit 0);
    when stdout is not a terminal each refresh is printed after the previous one.
    """
    as_json = as_json or obj.json
    if not watch:
        snapshot = _status_snapshot(obj.catalog)
        if as_json:
            click.echo(json.dumps(snapshot, indent=2, default=str))
        else:
            _console().print(_status_view(snapshot))
        return
    try:
        _watch_status(obj.catalog, interval, as_json)
    except KeyboardInterrupt:  # the way to end --watch: quietly, exit 0
        pass


#: Statuses in which some job manager should be running the job's query.
_ACTIVE = ACTIVE_STATUSES


def _live_job_managers(catalog) -> set[str]:
    """Ids of the registered job managers (servers, `run`, shells) alive now: heartbeat
    younger than manager.liveness.LIVE_WITHIN_MS on the catalog's clock, and on this host a
    process that exists."""
    from ..manager.liveness import live_owner

    return {s.server_id for s in catalog.list_servers() if live_owner(catalog, s.server_id)}


def _parse_time(value):
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


def _status_snapshot(catalog) -> dict[str, Any]:
    """Every job's state now, JSON-ready: ``{"at", "server", "jobs": [...]}``.

    Per job: job, status, desired_state, owner, live, batch, input_rows_per_s,
    processed_rows_per_s, lag_records, last_checkpoint_at, last_checkpoint_age_s,
    attempts, error, last_error, progress_updated_at.

    * ``live``: for a job in an active status (STARTING ... STOPPING), whether a live job
      manager (its ``owner``, heartbeat on the catalog's clock) runs it; False means its
      job manager died and nothing runs it until a server takes it over; null otherwise.
    * rates and ``lag_records`` come from the job manager's progress report
      (``JobInfo.progress``) and are null unless a live job manager runs the job (a
      stopped, failed or orphaned job's last report is not its lag now).
    * ``batch`` and the checkpoint time fall back to the latest recorded checkpoint.
    * ``error`` is the job's error while it is FAILED or RECOVERING; ``last_error`` the
      latest error whatever the status (the runs' causes are in DESCRIBE).

    ``server`` is the job manager holding the lease (``{"label": "host:pid", ...}``) or
    null.
    """
    from dataclasses import asdict, is_dataclass
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    live_ids = _live_job_managers(catalog)
    server = lease_holder(catalog)
    if server is not None and getattr(server, "server_id", None) not in live_ids:
        server = None  # its lease has not expired yet, but its process is gone
    jobs = []
    for job in catalog.list_jobs():
        active = job.status in _ACTIVE
        live = (getattr(job, "owner", None) in live_ids) if active else None
        progress = getattr(job, "progress", None) or {}
        batch = progress.get("batch_id")
        at = _parse_time(progress.get("last_checkpoint_at"))
        if batch is None or at is None:
            latest = catalog.latest_checkpoint(job.uid)
            if latest is not None:
                batch = latest.checkpoint_id if batch is None else batch
                at = at or _parse_time(latest.ended_at or latest.started_at)
        updated = _parse_time(progress.get("updated_at"))
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


def _age(seconds: float | None) -> str:
    """``"3 s ago"``, ``"5 min ago"``, ``"2 h ago"``, ``"4 d ago"``; ``""`` for None."""
    if seconds is None:
        return ""
    s = int(max(0.0, seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s // size} {unit} ago"
    return f"{s} s ago"


def _status_view(snapshot: dict[str, Any], interval: float | None = None):
    """The rich renderable of a status snapshot: the jobs table and a job manager line."""
    from rich.console import Group
    from rich.text import Text

    from ..executor.result import Result

    rows = []
    for j in snapshot["jobs"]:
        rate = j["processed_rows_per_s"]
        error = (j["error"] or "").strip().splitlines()[0] if j["error"] else None
        state = j["status"] + (" (job manager gone)" if j.get("live") is False else "")
        rows.append((j["job"], state, j["desired_state"],
                     f"{rate:,.1f}" if rate is not None else None,
                     j["batch"], _age(j["last_checkpoint_age_s"]), j["lag_records"], error))
    table = _table(Result(columns=("job", "state", "desired", "rows/s", "batch",
                                   "last checkpoint", "lag", "error"),
                          rows=rows, title="streamjobs"))
    server = snapshot["server"]
    line = (f"job manager: server {server['label']}" if server else NO_SERVER)
    if interval is not None:
        line += f"  ·  {snapshot['at']}, every {interval:g} s; Ctrl-C quits"
    return Group(table, Text(line, style="dim"))


def _watch_status(catalog, interval: float, as_json: bool) -> None:
    """``status --watch``: redraw (a live table on a terminal; else print each refresh,
    or one JSON line per refresh) every ``interval`` seconds until KeyboardInterrupt."""
    import time

    console = _console()
    if as_json or not console.is_terminal:
        while True:
            snapshot = _status_snapshot(catalog)
            if as_json:
                click.echo(json.dumps(snapshot, default=str))
            else:
                console.print(_status_view(snapshot, interval))
            sys.stdout.flush()
            time.sleep(interval)
    from rich.live import Live

    with Live(console=console, auto_refresh=False) as live:
        while True:
            live.update(_status_view(_status_snapshot(catalog), interval), refresh=True)
            time.sleep(interval)
