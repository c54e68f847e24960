"""``streamjob``: the command line (click).

One error boundary: a :class:`~streamjob.exceptions.StreamJobError` prints one red
``Error:`` line (a parse error also shows the line and a caret) and exits 1; any other
exception is a bug, printed the same way with a hint to rerun with ``--debug``, which
shows the full trace. pyspark is imported only by commands that run jobs, so
``streamjob --help`` is instant.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import click

from .exceptions import StreamJobError


class _Context:
    def __init__(self, home: str | None, catalog_url: str | None, conf: tuple[str, ...],
                 debug: bool) -> None:
        self.home_arg, self.catalog_url, self.debug = home, catalog_url, debug
        self.conf = _pairs(conf, "--conf")
        self._home = self._catalog = None

    @property
    def home(self):
        from .home import Home

        if self._home is None:
            self._home = Home.open(self.home_arg, self.conf, self.catalog_url)
        return self._home

    @property
    def catalog(self):
        from .catalog import Catalog

        if self._catalog is None:
            self._catalog = Catalog(self.home.catalog_url)
        return self._catalog


def _pairs(items: tuple[str, ...], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise click.BadParameter(f"expected KEY=VALUE, got '{item}'", param_hint=flag)
        k, v = item.split("=", 1)
        out[k.strip()] = v
    return out


class _Group(click.Group):
    """The error boundary (see the module docstring)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            click.secho("Interrupted.", fg="yellow", err=True)
            sys.exit(130)
        except StreamJobError as exc:
            if _debug(ctx):
                raise
            _print_error(exc)
            sys.exit(1)
        except Exception as exc:  # noqa: BLE001 - the boundary
            if _debug(ctx):
                raise
            click.secho(f"Error: internal error: {type(exc).__name__}: {exc}", fg="red", err=True)
            click.echo("(run with --debug for the full trace)", err=True)
            sys.exit(1)


def _debug(ctx: click.Context) -> bool:
    obj = ctx.obj
    return bool(obj and obj.debug) or "--debug" in sys.argv


def _print_error(exc: StreamJobError) -> None:
    click.secho(f"Error: {exc}", fg="red", err=True)
    if exc.snippet:
        click.echo(exc.snippet, err=True)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="STREAMJOB_HOME", type=click.Path(file_okay=False),
              help="streamjob home (catalog, checkpoints, warehouse); default ~/.streamjob.")
@click.option("--catalog", "catalog_url", metavar="URL", help="Catalog database URL (SQLAlchemy).")
@click.option("--conf", multiple=True, metavar="KEY=VALUE", help="Engine property (repeatable).")
@click.option("--debug", is_flag=True, help="Show Spark logs and full traces.")
@click.version_option(package_name="streamjob")
@click.pass_context
def main(ctx: click.Context, home, catalog_url, conf, debug) -> None:
    """streamjob: StreamSQL jobs as checkpointed Spark Structured Streaming queries."""
    ctx.obj = _Context(home, catalog_url, conf, debug)
    if debug:  # Spark's Python worker processes inherit it (connectors/worker.py)
        os.environ["STREAMJOB_DEBUG"] = "1"
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not debug:
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
        logging.getLogger("py4j").setLevel(logging.CRITICAL)


def _read_script(path: str, variables: dict[str, str], home) -> str:
    from .script import substitute

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise StreamJobError(f"cannot read {path}: {exc.strerror}") from None
    return substitute(text, {"STREAMJOB_HOME": str(home.root), **variables}, source=path)


def _execute_file(obj: _Context, path: str, variables: dict[str, str], manager=None) -> None:
    from .executor import Executor
    from .grammar import parse_script

    text = _read_script(path, variables, obj.home)
    statements = parse_script(text, source=path)
    executor = Executor(obj.catalog, obj.home, manager)
    for stmt in statements:
        try:
            result = executor.execute(stmt)
        except StreamJobError as exc:
            exc.locate(stmt.position.line, stmt.position.column, text, path)
            raise
        _render(result, as_json=False)


def _interrupt(signum, frame) -> None:
    """SIGTERM stops the jobs like Ctrl-C does (checkpoints stay)."""
    raise KeyboardInterrupt


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--until-idle", is_flag=True,
              help="Exit 0 once every started job has committed all input available now.")
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE",
              help="Value of ${NAME} in the file (repeatable).")
@click.pass_obj
def run(obj: _Context, file: str, until_idle: bool, variables) -> None:
    """Execute FILE's statements and run the jobs it starts in this process.

    Runs until Ctrl-C (jobs stop after their current batch; checkpoints stay), or with
    --until-idle until every job has caught up with its input. Running the same file
    again resumes the jobs from their checkpoints.
    """
    from .manager import JobManager

    manager = JobManager(obj.catalog, obj.home, debug=obj.debug)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        _execute_file(obj, file, _pairs(variables, "--var"), manager)
        _supervise(manager, until_idle)
    finally:
        manager.shutdown()


@main.command()
@click.option("--until-idle", is_flag=True,
              help="Exit 0 once every job has committed all input available now.")
@click.pass_obj
def server(obj: _Context, until_idle: bool) -> None:
    """Run every job whose desired state is RUNNING (the job manager).

    After a crash of the process that ran them (even SIGKILL), this resumes each job
    from its last checkpoint. Runs until Ctrl-C/SIGTERM (jobs stop after their current
    batch; checkpoints stay), or with --until-idle until every job has caught up.
    """
    from .manager import JobManager

    manager = JobManager(obj.catalog, obj.home, debug=obj.debug)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        for job in obj.catalog.list_jobs():
            if job.desired_state == "RUNNING":
                manager.start(job)
                click.echo(f"streamjob {job.qualified_name} started")
        _supervise(manager, until_idle)
    finally:
        manager.shutdown()


def _supervise(manager, until_idle: bool) -> None:
    """Wait on the jobs ``manager`` runs: until idle, or until they end or Ctrl-C."""
    if not manager.runners:
        click.echo("no streamjob was started")
        return
    if until_idle:
        manager.wait_until_idle()
        click.echo(f"all {len(manager.runners)} job(s) caught up with their input")
        return
    click.echo(f"running {len(manager.runners)} job(s); Ctrl-C stops them")
    while manager.running():
        for r in manager.running():
            r.join(1.0)
    failed = [r for r in manager.runners.values() if r.error]
    if failed:
        raise StreamJobError(f"job {failed[0].job.qualified_name} failed: {failed[0].error}")


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE")
@click.pass_obj
def submit(obj: _Context, file: str, variables) -> None:
    """Execute FILE's statements against the catalog (a job manager runs started jobs)."""
    _execute_file(obj, file, _pairs(variables, "--var"))


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE",
              help="Value of ${NAME} in the file (repeatable).")
@click.option("-v", "--verbose", is_flag=True, help="One line per statement.")
@click.pass_obj
def check(obj: _Context, file: str, variables, verbose: bool) -> None:
    """Dry run: parse and validate FILE against a scratch copy of the catalog.

    Prints OK, or the first error as FILE:LINE:COL: error: ... with the line and a
    caret, and exits 1. Nothing runs and the catalog is not changed.
    """
    from .check import check_script, scratch_catalog

    try:
        text = _read_script(file, _pairs(variables, "--var"), obj.home)
        report = check_script(text, file, scratch_catalog(obj.catalog), obj.home)
    except StreamJobError as exc:
        if obj.debug:
            raise
        where = f"{exc.source or file}:{exc.line}:{exc.column}: " if exc.line else f"{file}: "
        click.secho(f"{where}error: {exc.message}", fg="red", err=True)
        if exc.snippet:
            click.echo(exc.snippet, err=True)
        sys.exit(1)
    if verbose:
        for line in report.lines:
            click.echo(line)
    click.echo(f"OK ({report.statements} statement{'s' if report.statements != 1 else ''})")


@main.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def list_jobs(obj: _Context, as_json: bool) -> None:
    """List streamjobs: status, guarantee, last checkpoint, failures, last error."""
    _statement(obj, "LIST STREAMJOBS", as_json)


@main.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def describe(obj: _Context, name: str, as_json: bool) -> None:
    """Describe a streamjob (SQL, effective properties and their origin, runs,
    checkpoints), else a stream or table of that name."""
    from .grammar import parse_statement

    db, _, obj_name = name.rpartition(".")
    if obj.catalog.get_job(db or "default", obj_name) is not None:
        _statement(obj, f"DESCRIBE STREAMJOB {name}", as_json)
    else:
        parse_statement(f"DESCRIBE {name}")  # a bad name is a parse error here
        _statement(obj, f"DESCRIBE {name}", as_json)


@main.command()
@click.argument("job")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def checkpoints(obj: _Context, job: str, as_json: bool) -> None:
    """Show the retained checkpoints of JOB."""
    _statement(obj, f"SHOW CHECKPOINTS FOR STREAMJOB {job}", as_json)


@main.command()
@click.argument("job")
@click.option("--if-exists", is_flag=True)
@click.pass_obj
def drop(obj: _Context, job: str, if_exists: bool) -> None:
    """Drop JOB: stop it, purge its checkpoints and its catalog rows."""
    _statement(obj, f"DROP STREAMJOB {'IF EXISTS ' if if_exists else ''}{job}", False)


def _statement(obj: _Context, sql: str, as_json: bool) -> None:
    from .executor import Executor
    from .grammar import parse_statement

    result = Executor(obj.catalog, obj.home).execute(parse_statement(sql))
    _render(result, as_json)


def _render(result, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, default=str))
        return
    from rich.console import Console

    console = Console(width=None if sys.stdout.isatty() else 200)
    for part in result.sections or [result]:
        if part.columns and (part.rows or not result.sections):
            console.print(_table(part))
        elif part.columns:
            click.echo(f"{part.title}: none")
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


if __name__ == "__main__":  # pragma: no cover
    main()
