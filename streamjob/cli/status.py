"""``streamjob status [--watch] [--json]``: a table of jobs (state, desired state, rate,
batch, checkpoint age, lag, error) and the job manager holding the lease.

:func:`streamjob.status.status_snapshot` reads it (through the session: from the catalog,
or ``GET /v1/status`` with ``--server``),
:func:`streamjob.client.render.status_view` renders it, :func:`_watch_status` redraws it every ``--interval`` seconds.
"""

from __future__ import annotations

import json
import sys

import click

from .app import client_options
from .context import Invocation
from ..client.render import status_view, terminal_console


@click.command()
@click.option("-w", "--watch", is_flag=True, help="Refresh until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              metavar="S", help="Seconds between refreshes with --watch.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (with --watch one document per refresh, one per line).")
@client_options
@click.pass_obj
def status(obj: Invocation, watch: bool, interval: float, as_json: bool) -> None:
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
            terminal_console().print(status_view(snapshot))
        return
    try:
        _watch_status(obj.session.status, interval, as_json)
    except KeyboardInterrupt:  # the way to end --watch: quietly, exit 0
        pass


def _watch_status(snapshot_now, interval: float, as_json: bool) -> None:
    """``status --watch``: redraw (a live table on a terminal; else print each refresh,
    or one JSON line per refresh) every ``interval`` seconds until KeyboardInterrupt."""
    import time

    console = terminal_console()
    if as_json or not console.is_terminal:
        while True:
            snapshot = snapshot_now()
            if as_json:
                click.echo(json.dumps(snapshot, default=str))
            else:
                console.print(status_view(snapshot, interval))
            sys.stdout.flush()
            time.sleep(interval)
    from rich.live import Live

    with Live(console=console, auto_refresh=False) as live:
        while True:
            live.update(status_view(snapshot_now(), interval), refresh=True)
            time.sleep(interval)
