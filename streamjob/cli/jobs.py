"""The verbs that set a job's desired state: ``start`` (optionally from a retained
checkpoint), ``stop`` and ``drop``. A job manager acts on them; the printed message says
whether one holds the catalog's lease (:meth:`streamjob.client.session.ClientSession.execute`)."""

from __future__ import annotations

import sys

import click

from .app import client_options
from .context import Invocation
from .execute import execute_statement, resolve_name


@click.command()
@click.argument("job")
@click.option("--from-checkpoint", "checkpoint", type=click.IntRange(min=0), metavar="N",
              help="Resume from retained checkpoint N (later ones are removed).")
@click.option("--from-savepoint", "from_savepoint", metavar="NAME",
              help="Restore savepoint NAME (offsets and state, a new checkpoint epoch).")
@client_options
@click.pass_obj
def start(obj: Invocation, job: str, checkpoint: int | None, from_savepoint: str | None) -> None:
    """Set JOB's desired state to RUNNING: the job manager starts it."""
    from .savepoints import savepoint_name

    resolve_name(job)
    if checkpoint is not None and from_savepoint is not None:
        raise click.UsageError("give --from-checkpoint or --from-savepoint, not both")
    restore = "" if checkpoint is None else f" FROM CHECKPOINT {checkpoint}"
    if from_savepoint is not None:
        restore = f" FROM SAVEPOINT {savepoint_name(from_savepoint)}"
    execute_statement(obj, f"START STREAMJOB {job}{restore}", obj.json)


@click.command()
@click.argument("job")
@click.option("--savepoint", "keep", metavar="NAME",
              help="Keep the checkpoint the stop ends on as savepoint NAME.")
@client_options
@click.pass_obj
def stop(obj: Invocation, job: str, keep: str | None) -> None:
    """Set JOB's desired state to STOPPED: the job manager stops it after its current
    batch (its checkpoints stay)."""
    from .savepoints import savepoint_name

    resolve_name(job)
    tail = "" if keep is None else f" WITH SAVEPOINT {savepoint_name(keep)}"
    execute_statement(obj, f"STOP STREAMJOB {job}{tail}", obj.json)


@click.command()
@click.argument("job")
@click.option("--if-exists", is_flag=True, help="No error if JOB does not exist.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask on a terminal.")
@client_options
@click.pass_obj
def drop(obj: Invocation, job: str, if_exists: bool, yes: bool) -> None:
    """Drop JOB: stop it, purge its checkpoints and its catalog rows.

    On a terminal it says what goes (checkpoint directory, backend records, sink
    markers) and asks first, as pgcli does for destructive statements; --yes skips it.
    """
    db, name = resolve_name(job)
    if not yes and sys.stdin.isatty() and not obj.server:
        from ..executor.jobs import what_drop_deletes

        info = obj.catalog.get_job(db, name)
        if info is not None:
            click.echo(f"Dropping streamjob {db}.{name} deletes "
                       + "; ".join(what_drop_deletes(obj.home, info,
                                                  len(obj.catalog.list_savepoints(info.uid)))) + ".")
            if not click.confirm("Drop it?", default=False):
                click.echo(f"streamjob {db}.{name} not dropped")
                return
    execute_statement(obj, f"DROP STREAMJOB {'IF EXISTS ' if if_exists else ''}{job}", obj.json)
