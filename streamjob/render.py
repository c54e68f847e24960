"""How a statement's result is shown, by the command line and the shell alike: rich
tables and its message, or JSON (indented, or one compact document per line)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click


def _console():
    """The rich console of every table (200 columns when stdout is not a terminal)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)


def render(result, as_json: bool, compact: bool = False) -> None:
    """Print a statement's :class:`~streamjob.executor.Result`: its tables (rich) and
    message, or with ``as_json`` its JSON (indented, or on one line when ``compact``)."""
    if result.records is not None:
        _records(result, as_json)
        return
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=None if compact else 2, default=str))
        return
    if result.text is not None:  # SHOW CREATE: the statement as it is, ready to copy
        click.echo(result.text)
        return
    console = _console()
    for part in result.sections or [result]:
        if part.columns and part.rows:
            console.print(_table(part))
        elif part.columns:  # no empty bordered table: say so in one line
            click.echo(f"{part.title or 'result'}: none")
    if result.message:
        click.echo(result.message)


def _records(result, as_json: bool) -> None:
    """PRINT: each record on its own line as it arrives (ksqlDB's form, with the offset;
    with ``as_json`` one compact JSON object per line), until the records end (LIMIT) or
    Ctrl-C; then how many were shown, on stderr."""
    if result.message and not as_json:
        click.echo(result.message, err=True)
    count = 0
    try:
        for record in result.records:
            count += 1
            if as_json:
                click.echo(json.dumps(record, default=str))
            else:
                click.echo(", ".join(f"{k}: {'null' if v is None else v}" for k, v in record.items()))
    except KeyboardInterrupt:
        close = getattr(result.records, "close", None)
        if close is not None:
            close()
        click.echo(f"stopped: {count} record{'s' if count != 1 else ''} shown", err=True)
        return
    click.echo(f"{count} record{'s' if count != 1 else ''} shown", err=True)


def _table(result):
    from rich.table import Table

    table = Table(title=result.title, title_justify="left")
    for c in result.columns:
        table.add_column(c, overflow="fold")
    for row in result.rows:
        table.add_row(*["" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else str(v))
                        for v in row])
    return table


def _age(seconds: float | None) -> str:
    """``"3 s ago"``, ``"5 min ago"``, ``"2 h ago"``, ``"4 d ago"``; ``""`` for None."""
    if seconds is None:
        return ""
    s = int(max(0.0, seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s // size} {unit} ago"
    return f"{s} s ago"


def status_view(snapshot: dict[str, Any], interval: float | None = None):
    """The rich renderable of a status snapshot: the jobs table and a job manager line."""
    from rich.console import Group
    from rich.text import Text

    from .executor.result import Result
    from .session import NO_SERVER

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
