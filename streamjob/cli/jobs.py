"""The verbs that set a job's desired state: ``start`` (optionally from a retained
checkpoint), ``stop`` and ``drop``. A job manager acts on them; the printed message says
whether one holds the catalog's lease (:meth:`streamjob.session.ClientSession.execute`)."""

from __future__ import annotations

import click

from .app import _Context, client_options
from .execute import _qualified, _statement


@click.command()
@click.argument("job")
@click.option("--from-checkpoint", "checkpoint", type=click.IntRange(min=0), metavar="N",
              help="Resume from retained checkpoint N (later ones are removed).")
@client_options
@click.pass_obj
def start(obj: _Context, job: str, checkpoint: int | None) -> None:
    """Set JOB's desired state to RUNNING: the job manager starts it."""
    _qualified(job)
    restore = "" if checkpoint is None else f" FROM CHECKPOINT {checkpoint}"
    _statement(obj, f"START STREAMJOB {job}{restore}", obj.json)


@click.command()
@click.argument("job")
@client_options
@click.pass_obj
def stop(obj: _Context, job: str) -> None:
    """Set JOB's desired state to STOPPED: the job manager stops it after its current
    batch (its checkpoints stay)."""
    _qualified(job)
    _statement(obj, f"STOP STREAMJOB {job}", obj.json)


@click.command()
@click.argument("job")
@click.option("--if-exists", is_flag=True, help="No error if JOB does not exist.")
@client_options
@click.pass_obj
def drop(obj: _Context, job: str, if_exists: bool) -> None:
    """Drop JOB: stop it, purge its checkpoints and its catalog rows."""
    _qualified(job)
    _statement(obj, f"DROP STREAMJOB {'IF EXISTS ' if if_exists else ''}{job}", obj.json)
