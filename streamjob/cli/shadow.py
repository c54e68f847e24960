"""``streamjob shadow run|show|promote|discard`` (issue 30 point 4; docs/upgrades.md
"Shadow runs"): thin verbs over the shadow statements, executed like any statement
through the client session (here, or through ``--server``'s HTTP API, with its roles).
A shadow runs where the job runs: through ``--server``, the server runs it beside the
job."""

from __future__ import annotations

import click

from .app import client_options
from .context import Invocation
from .execute import execute_statement, resolve_name


def _string(text: str) -> str:
    """``text`` as a StreamSQL single-quoted string (a quote doubled)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


@click.group("shadow")
def shadow() -> None:
    """Shadow runs: a new query beside the live job, compared before the switch
    (docs/upgrades.md, "Shadow runs")."""


@shadow.command("run")
@click.argument("job")
@click.argument("query")
@click.option("--batches", type=int, default=None,
              help="Micro-batches with input the shadow runs (shadow.batches; default 5).")
@click.option("--duration", default=None,
              help="How long the shadow runs, e.g. 30s (shadow.duration).")
@client_options
@click.pass_obj
def run(obj: Invocation, job: str, query: str, batches: int | None, duration: str | None) -> None:
    """Run QUERY ("insert into ... select ...") as JOB's shadow and compare it with the
    live query over the same input (ALTER STREAMJOB ... WITH SHADOW)."""
    resolve_name(job)
    props = []
    if batches is not None:
        props.append(f"'shadow.batches'='{batches}'")
    if duration is not None:
        props.append(f"'shadow.duration'={_string(duration)}")
    tail = f" JOBPROPERTIES({', '.join(props)})" if props else ""
    execute_statement(obj, f"ALTER STREAMJOB {job} AS ({_string(query)}) WITH SHADOW{tail}",
                      obj.json)


@shadow.command("show")
@click.argument("job")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (the shadow's record and comparison, docs/json.md).")
@client_options
@click.pass_obj
def show(obj: Invocation, job: str, as_json: bool) -> None:
    """Show JOB's shadow comparison: rows only in the old output, only in the new, and
    changed values, with samples (SHOW SHADOW)."""
    resolve_name(job)
    execute_statement(obj, f"SHOW SHADOW FOR STREAMJOB {job}", as_json or obj.json)


@shadow.command("promote")
@click.argument("job")
@client_options
@click.pass_obj
def promote(obj: Invocation, job: str) -> None:
    """Switch JOB to its shadow's query at a checkpoint boundary (PROMOTE SHADOW)."""
    resolve_name(job)
    execute_statement(obj, f"PROMOTE SHADOW FOR STREAMJOB {job}", obj.json)


@shadow.command("discard")
@click.argument("job")
@client_options
@click.pass_obj
def discard(obj: Invocation, job: str) -> None:
    """Drop JOB's shadow and its scratch tables (DISCARD SHADOW)."""
    resolve_name(job)
    execute_statement(obj, f"DISCARD SHADOW FOR STREAMJOB {job}", obj.json)
