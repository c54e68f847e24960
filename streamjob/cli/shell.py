"""``streamjob shell``: the interactive StreamSQL shell (:mod:`streamjob.shell`)."""

from __future__ import annotations

import sys

import click

from .app import client_options
from .context import Invocation


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Start with JSON output (\\json toggles).")
@click.option("-f", "--file", "file", type=click.Path(dir_okay=False, exists=True),
              help="Run the statements and meta commands of FILE, then exit (as psql -f): "
                   "exit status 1 if any failed.")
@client_options
@click.pass_obj
def shell(obj: Invocation, as_json: bool, file: str | None) -> None:
    """Interactive StreamSQL shell: history, multi-line statements ended by ';',
    completion, highlighting, \\help.

    SELECT ... FROM stream [LIMIT n] prints rows as they arrive. Without a job manager
    (`streamjob server`) the shell runs the jobs it starts until it exits. When stdin is
    not a terminal (`streamjob shell < file.sql`) the statements run without prompts or
    questions, and errors make the exit status 1. With --server the statements go
    through the HTTP API (SELECT previews need the catalog and are refused).
    """
    from ..shell import run_shell

    if obj.server:  # statements through the HTTP API; history and logs in the local home
        code = run_shell(None, obj.home, debug=obj.debug, as_json=as_json or obj.json,
                         session=obj.session, file=file)
    else:
        code = run_shell(obj.catalog, obj.home, debug=obj.debug, as_json=as_json or obj.json,
                         file=file)
    if code:
        sys.exit(code)
