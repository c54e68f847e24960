"""The read verbs: ``list``, ``describe`` and ``checkpoints`` (each also ``--json``)."""

from __future__ import annotations

import click

from .app import client_options
from .context import Invocation
from .execute import execute_statement, resolve_name


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a list of job objects).")
@client_options
@click.pass_obj
def list_jobs(obj: Invocation, as_json: bool) -> None:
    """List streamjobs: status, guarantee, last checkpoint, failures, last error."""
    execute_statement(obj, "LIST STREAMJOBS", as_json or obj.json)


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (an object by section).")
@client_options
@click.pass_obj
def describe(obj: Invocation, name: str, as_json: bool) -> None:
    """Describe a streamjob (SQL, effective properties and their origin, runs,
    checkpoints), else a stream or table of that name."""
    from ..exceptions import ObjectNotFoundError

    db, obj_name = resolve_name(name)
    try:
        execute_statement(obj, f"DESCRIBE STREAMJOB {name}", as_json or obj.json)
        return
    except ObjectNotFoundError:
        pass  # a stream or table, then
    try:
        execute_statement(obj, f"DESCRIBE {name}", as_json or obj.json)
    except ObjectNotFoundError:
        raise ObjectNotFoundError(f"streamjob, stream or table {db}.{obj_name} "
                                  "does not exist") from None


@click.command()
@click.argument("job")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a list of checkpoints).")
@client_options
@click.pass_obj
def checkpoints(obj: Invocation, job: str, as_json: bool) -> None:
    """Show the retained checkpoints of JOB."""
    resolve_name(job)
    execute_statement(obj, f"SHOW CHECKPOINTS FOR STREAMJOB {job}", as_json or obj.json)
