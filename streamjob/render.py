"""How a statement's result is shown, by the command line and the shell alike: rich
tables and its message, or JSON (indented, or one compact document per line)."""

from __future__ import annotations

import json
import sys

import click


def _console():
    """The rich console of every table (200 columns when stdout is not a terminal)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)


def render(result, as_json: bool, compact: bool = False) -> None:
    """Print a statement's :class:`~streamjob.executor.Result`: its tables (rich) and
    message, or with ``as_json`` its JSON (indented, or on one line when ``compact``)."""
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=None if compact else 2, default=str))
        return
    console = _console()
    for part in result.sections or [result]:
        if part.columns and part.rows:
            console.print(_table(part))
        elif part.columns:  # no empty bordered table: say so in one line
            click.echo(f"{part.title or 'result'}: none")
    if result.message:
        click.echo(result.message)


def _table(result):
    from rich.table import Table

    table = Table(title=result.title, title_justify="left")
    for c in result.columns:
        table.add_column(c, overflow="fold")
    for row in result.rows:
        table.add_row(*["" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else str(v))
                        for v in row])
    return table
