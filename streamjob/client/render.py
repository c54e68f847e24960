"""How a statement's result is shown, by the command line and the shell alike: rich
tables and its message, or JSON (indented, or one compact document per line).

A table wider than the terminal is shown expanded, one field per line under a
``-[ RECORD n ]---`` header, as psql's and pgcli's ``\\x auto`` do: ``LIST STREAMJOBS``
at 100 columns otherwise folds its SQL column to a few characters and each job over
dozens of lines. :data:`EXPANDED_MODES` are the choices (the shell's ``\\x``); output
that is no terminal and has no ``COLUMNS`` keeps its tables (a 200-column console)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click


#: The expanded display's modes (the shell's ``\\x on|off|auto``): ``auto`` expands a
#: table only when it is wider than the terminal.
EXPANDED_MODES = ("auto", "on", "off")


def terminal_console():
    """The rich console of every table: the terminal's width, else ``COLUMNS``, else
    200 columns when stdout is not a terminal."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
                   else 200)


def render(result, as_json: bool, compact: bool = False, expanded: str = "auto") -> None:
    """Print a statement's :class:`~streamjob.executor.Result`: its tables (rich) and
    message, or with ``as_json`` its JSON (indented, or on one line when ``compact``).

    ``expanded`` (one of :data:`EXPANDED_MODES`): ``on`` prints every table one field
    per line (:func:`expanded_text`), ``off`` never, ``auto`` when the table is wider
    than the terminal (stdout a terminal, or ``COLUMNS`` set: see :func:`terminal_console`)."""
    if result.records is not None:
        _records(result, as_json)
        return
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=None if compact else 2, default=str))
        return
    if result.text is not None:  # SHOW CREATE: the statement as it is, ready to copy
        click.echo(result.text)
        return
    console = terminal_console()
    for part in result.sections or [result]:
        if part.columns and part.rows:
            table = _table(part)
            if _expand(table, console, expanded):
                click.echo(expanded_text(part, console.width))
            else:
                console.print(table)
        elif part.columns:  # no empty bordered table: say so in one line
            click.echo(f"{part.title or 'result'}: none")
        elif part.text is not None and part is not result:  # EXPLAIN EXTENDED's plan
            click.echo(f"{part.title or 'result'}:\n{part.text}")
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
        table.add_row(*[_cell(v) for v in row])
    return table


def _expand(table, console, mode: str) -> bool:
    """Whether ``table`` is shown expanded on ``console`` in ``mode`` (see :func:`render`)."""
    if mode == "on":
        return True
    if mode != "auto" or not (sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()):
        return False
    from rich.measure import Measurement

    measuring = console.__class__(width=10_000)  # the table's natural width, unfolded
    return Measurement.get(measuring, measuring.options, table).maximum > console.width


def _cell(value) -> str:
    return "" if value is None else (json.dumps(value) if isinstance(value, (dict, list)) else str(value))


def expanded_text(result, width: int) -> str:
    """The rows of ``result`` one field per line, psql's expanded display, no line wider
    than ``width`` columns (at least 20): the title, then per row a
    ``-[ RECORD n ]---`` line and ``name | value`` lines; a long value is wrapped at
    blanks (a word longer than the line is cut) and a value's own lines are kept, each
    continuation under the value's column (``      | ...``)."""
    import textwrap

    from rich.cells import cell_len

    width = max(width, 20)
    names = [str(c) for c in result.columns]
    key = min(max(cell_len(n) for n in names), width // 3)
    room = max(width - key - 3, 8)
    records = []
    for row in result.rows:
        body = []
        for name, value in zip(names, row):
            parts = [piece for line in (_cell(value).splitlines() or [""])
                     for piece in (textwrap.wrap(line, room, break_on_hyphens=False,
                                                 replace_whitespace=False) or [""])]
            label = textwrap.wrap(name, key) or [""]
            for i in range(max(len(parts), len(label))):
                left = label[i] if i < len(label) else ""
                right = parts[i] if i < len(parts) else ""
                body.append(f"{left}{' ' * (key - cell_len(left))} | {right}".rstrip())
        records.append(body)
    rule = min(width, max((cell_len(line) for body in records for line in body), default=0))
    lines = [result.title] if result.title else []
    for n, body in enumerate(records, 1):
        head = f"-[ RECORD {n} ]"
        lines.append(head + "-" * max(0, rule - len(head)))
        lines.extend(body)
    return "\n".join(lines)


def _age(seconds: float | None) -> str:
    """``"3 s ago"``, ``"5 min ago"``, ``"2 h ago"``, ``"4 d ago"``; ``""`` for None."""
    if seconds is None:
        return ""
    s = int(max(0.0, seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s // size} {unit} ago"
    return f"{s} s ago"


#: The status table's columns in display order: (header, priority). The
#: priority decides which fit a narrow terminal: 1 (job, state) always shows; the others
#: go from the highest number down until the table fits on one line per job: desired
#: state first, then batch, error, last checkpoint, lag, rows/s. What still does not
#: fit is cut with "…" (the whole of it: ``status --json``, ``describe``).
STATUS_COLUMNS = (("job", 1), ("state", 1), ("desired", 8), ("rows/s", 3), ("batch", 7),
                  ("last checkpoint", 5), ("lag", 4), ("error", 6))
#: Widths the job and error columns count with when deciding what fits (wider ones are
#: cut with "…" where the line is short; they take what is left). The state is never
#: cut: ``RUNNING (job manager gone)`` read ``RUNNING (job mana…`` at 100 columns while
#: empty lower-priority columns stayed; they give way first (the guide's section 7).
FLEXIBLE_WIDTHS = {"job": 20, "error": 24}


def _status_rows(snapshot: dict[str, Any]) -> list[tuple]:
    """One row per job of a status snapshot, in :data:`STATUS_COLUMNS`' order."""
    rows = []
    for j in snapshot["jobs"]:
        rate = j["processed_rows_per_s"]
        error = (j["error"] or "").strip().splitlines()[0] if j["error"] else None
        state = j["status"] + (" (job manager gone)" if j.get("live") is False else "")
        rows.append((j["job"], state, j["desired_state"],
                     f"{rate:,.1f}" if rate is not None else None,
                     j["batch"], _age(j["last_checkpoint_age_s"]), j["lag_records"], error))
    return rows


def _status_table(rows: list[tuple], shown: set[str], capped: bool = False):
    """A rich table of the ``shown`` columns, one line per row (cells cut with "…");
    ``capped``: the columns of :data:`FLEXIBLE_WIDTHS` at most that wide."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="streamjobs", title_justify="left")
    keep = [i for i, (name, _) in enumerate(STATUS_COLUMNS) if name in shown]
    for i in keep:
        name = STATUS_COLUMNS[i][0]
        # job and error give way (rich collapses wrappable columns first; each cell is
        # one line, cut with "…"); the others, the state too, keep their width
        table.add_column(name, no_wrap=name not in FLEXIBLE_WIDTHS,
                         justify="right" if name in ("rows/s", "batch", "lag") else "left",
                         max_width=FLEXIBLE_WIDTHS.get(name) if capped else None,
                         min_width=len(name) if name in FLEXIBLE_WIDTHS else None)
    for row in rows:
        table.add_row(*[Text("" if row[i] is None else str(row[i]), no_wrap=True,
                             overflow="ellipsis") for i in keep])
    return table


def status_table(snapshot: dict[str, Any], width: int):
    """The jobs table of a status snapshot for a ``width``-column console: the columns
    of :data:`STATUS_COLUMNS` that fit (rich measures the table), one line per job."""
    from rich.console import Console
    from rich.measure import Measurement

    rows = _status_rows(snapshot)
    shown = {name for name, _ in STATUS_COLUMNS}
    measuring = Console(width=10_000)  # the table's natural width, not capped at width
    for name, priority in sorted(STATUS_COLUMNS, key=lambda c: -c[1]):
        table = _status_table(rows, shown, capped=True)
        if Measurement.get(measuring, measuring.options, table).maximum <= width or priority == 1:
            break
        shown.discard(name)
    return _status_table(rows, shown)


def _capacity(server: dict[str, Any]) -> str:
    """``, cores 2/4, memory 256/1024 MiB`` for a sharing server's declared capacity
    (used/declared; nothing for what it did not declare), ``, master URL`` when not local."""
    out = ""
    if server.get("cores") is not None:
        out += f", cores {server.get('cores_used', 0)}/{server['cores']}"
    if server.get("memory_mb") is not None:
        out += f", memory {server.get('memory_used_mb', 0)}/{server['memory_mb']} MiB"
    master = server.get("spark_master") or ""
    if master and not master.startswith("local"):
        out += f", master {master}"
    return out


def status_view(snapshot: dict[str, Any], interval: float | None = None,
                width: int | None = None):
    """The rich renderable of a status snapshot: the jobs table (:func:`status_table`,
    for ``width`` columns, default the console's) and a job manager line."""
    from rich.console import Group
    from rich.text import Text

    from .session import NO_SERVER

    table = (status_table(snapshot, width or terminal_console().width) if snapshot.get("jobs")
             else Text("no streamjobs"))  # one line, not an empty bordered table
    server = snapshot["server"]
    line = (f"job manager: server {server['label']}" if server else NO_SERVER)
    sharing = snapshot.get("servers") or []
    if sharing:  # sharing servers (issue 33): each with the jobs it runs
        line = "servers: " + "; ".join(
            f"{s['label']} ({len(s['jobs'])} job{'s' * (len(s['jobs']) != 1)}"
            + (f" of {s['max_jobs']}" if s.get("max_jobs") is not None else "")
            + _capacity(s)
            + (f": {', '.join(s['jobs'])}" if s["jobs"] else "") + ")" for s in sharing)
        refusals = [f"{s['label']} refuses {job}: {why}" for s in sharing
                    for job, why in sorted((s.get("refused") or {}).items())]
        if refusals:  # jobs a server will not take: their checkpoints are not reachable
            line += "\n" + "\n".join(refusals)
    placed = snapshot.get("placement") or {}
    for job, why in (placed.get("waiting") or {}).items():  # no server can take it
        line += f"\n{job} waits: {why}"
    if placed.get("moves") or placed.get("lease_losses"):
        line += f"\nmoves {placed.get('moves', 0)}, lease losses {placed.get('lease_losses', 0)}"
    if interval is not None:
        line += f"  ·  {snapshot['at']}, every {interval:g} s; Ctrl-C quits"
    return Group(table, Text(line, style="dim"))
