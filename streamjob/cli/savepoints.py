"""``streamjob savepoint create|list|drop`` (issue 30; docs/checkpoints.md): thin verbs
over the savepoint statements, executed like any statement through the client session
(here, or through ``--server``'s HTTP API, with its roles)."""

from __future__ import annotations

import re

import click

from ..exceptions import StreamJobError
from .app import client_options
from .context import Invocation
from .execute import execute_statement, resolve_name

_SAVEPOINT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def savepoint_name(name: str) -> str:
    """``name`` if it is a savepoint name (letters, digits, ``_``; the grammar's rule).

    Raises:
        StreamJobError: it is not.
    """
    if not _SAVEPOINT.fullmatch(name):
        raise StreamJobError(f"invalid savepoint name '{name}': letters, digits and '_', "
                             "not starting with a digit")
    return name


@click.group("savepoint")
def savepoint() -> None:
    """Savepoints: checkpoints you keep, outside retention (docs/checkpoints.md).

    `streamjob start JOB --from-savepoint NAME` restores one; `streamjob stop JOB
    --savepoint NAME` stops a job and keeps its last checkpoint."""


@savepoint.command("create")
@click.argument("job")
@click.argument("name")
@client_options
@click.pass_obj
def create(obj: Invocation, job: str, name: str) -> None:
    """Keep JOB's newest retained checkpoint as savepoint NAME (CREATE SAVEPOINT)."""
    resolve_name(job)
    execute_statement(obj, f"CREATE SAVEPOINT {savepoint_name(name)} FOR STREAMJOB {job}",
                      obj.json)


@savepoint.command("list")
@click.argument("job", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a list of savepoints).")
@client_options
@click.pass_obj
def list_savepoints(obj: Invocation, job: str | None, as_json: bool) -> None:
    """List the savepoints of JOB, or of every job (SHOW SAVEPOINTS)."""
    if job is not None:
        resolve_name(job)
    execute_statement(obj, "SHOW SAVEPOINTS" + (f" FOR STREAMJOB {job}" if job else ""),
                      as_json or obj.json)


@savepoint.command("drop")
@click.argument("job")
@click.argument("name")
@client_options
@click.pass_obj
def drop(obj: Invocation, job: str, name: str) -> None:
    """Delete savepoint NAME of JOB, its files and its record (DROP SAVEPOINT)."""
    resolve_name(job)
    execute_statement(obj, f"DROP SAVEPOINT {savepoint_name(name)} FOR STREAMJOB {job}",
                      obj.json)
