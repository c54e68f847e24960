"""``streamjob status [--watch] [--json]``: a table of jobs (state, desired state, rate,
batch, checkpoint age, lag, error) and the job manager holding the lease.

:func:`streamjob.status.status_snapshot` reads it (through the session: from the catalog,
or ``GET /v1/status`` with ``--server``),
:func:`_status_view` renders it, :func:`_watch_status` redraws it every ``--interval`` seconds.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .app import _Context, client_options
from ..session import NO_SERVER
from ..render import _console, _table


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
        snapshot = obj.session.status()
        if as_json:
            click.echo(json.dumps(snapshot, indent=2, default=str))
        else:
            _console().print(_status_view(snapshot))
        return
    try:
        _watch_status(obj.session.status, interval, as_json)
    except KeyboardInterrupt:  # the way to end --watch: quietly, exit 0
        pass


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


def _watch_status(snapshot_now, interval: float, as_json: bool) -> None:
    """``status --watch``: redraw (a live table on a terminal; else print each refresh,
    or one JSON line per refresh) every ``interval`` seconds until KeyboardInterrupt."""
    import time

    console = _console()
    if as_json or not console.is_terminal:
        while True:
            snapshot = snapshot_now()
            if as_json:
                click.echo(json.dumps(snapshot, default=str))
            else:
                console.print(_status_view(snapshot, interval))
            sys.stdout.flush()
            time.sleep(interval)
    from rich.live import Live

    with Live(console=console, auto_refresh=False) as live:
        while True:
            live.update(_status_view(snapshot_now(), interval), refresh=True)
            time.sleep(interval)
