"""The commands on a StreamSQL file: ``run`` (execute it and run the jobs it starts in
this process), ``submit`` (execute it against the catalog only) and ``check`` (a dry run
against a scratch copy of the catalog). ``${NAME}`` variables are substituted first
(``--var``, the environment, ``STREAMJOB_HOME``)."""

from __future__ import annotations

import re
import signal
import sys
import threading

import click

from ..exceptions import StreamJobError
from .app import client_options
from .context import Invocation, pairs
from .execute import execute_text


def _read_script(path: str, variables: dict[str, str], home) -> str:
    from ..script import read_script, substitute

    text = read_script(path)
    return substitute(text, {"STREAMJOB_HOME": str(home.root), **variables}, source=path)


def _execute_file(obj: Invocation, path: str, variables: dict[str, str], session) -> None:
    text = _read_script(path, variables, obj.home)
    execute_text(text, path, session)


def _interrupt(signum, frame) -> None:
    """SIGTERM stops the jobs like Ctrl-C does (checkpoints stay)."""
    raise KeyboardInterrupt


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--until-idle", is_flag=True,
              help="Exit 0 once every started job has committed all input available now.")
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE",
              help="Value of ${NAME} in the file (repeatable).")
@client_options
@click.pass_obj
def run(obj: Invocation, file: str, until_idle: bool, variables) -> None:
    """Execute FILE's statements and run the jobs it starts in this process.

    Runs until Ctrl-C (jobs stop after their current batch; checkpoints stay), or with
    --until-idle until every job has caught up with its input. Running the same file
    again resumes the jobs from their checkpoints.
    """
    from ..client.session import ClientSession

    session = ClientSession(obj.catalog, obj.home, debug=obj.debug)
    manager = session.host()  # registered as a host: STOP/DROP from other clients reach it
    manager.on_jvm_death = "exit"  # one sentence and exit 1; the next run resumes (issue 13)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        text = _read_script(file, pairs(variables, "--var"), obj.home)
        # Spark starts beside the statements once the whole file passed its check: a
        # file refused as a whole starts no JVM
        prestart = (lambda: _prestart_spark(manager)) if _STARTS_A_JOB.search(text) else None
        execute_text(text, file, session, on_checked=prestart)
        _supervise(manager, until_idle)
    finally:
        session.close()


#: A file that may start a job (``START STREAMJOB``, in any case and spacing): ``run``
#: starts Spark at once, beside the statements, rather than at the first START.
_STARTS_A_JOB = re.compile(r"\bstart\s+streamjob\b", re.IGNORECASE)


def _prestart_spark(manager) -> None:
    """Start the process's Spark on a thread while the file's statements execute (issue
    19: a cold ``run`` otherwise starts its JVM only when the first job starts, after the
    statements). An error is left to the first job start, which raises it again."""
    def start() -> None:
        try:
            manager.spark()
        except Exception:  # noqa: BLE001 - raised again by the job start that needs it
            pass

    threading.Thread(target=start, name="spark-prestart", daemon=True).start()


def _supervise(manager, until_idle: bool) -> None:
    """Wait on the jobs ``manager`` runs: until idle, or until they end or Ctrl-C."""
    if not manager.runners:
        click.echo("no streamjob was started")
        return
    if until_idle:
        try:
            manager.wait_until_idle()
        except StreamJobError:
            if manager.jvm_died:
                raise StreamJobError(f"{manager.jvm_died}; its jobs stopped after their last "
                                     "checkpoint: run the file again to resume them") from None
            raise
        click.echo(f"all {len(manager.runners)} job(s) caught up with their input")
        return
    click.echo(f"running {len(manager.runners)} job(s); Ctrl-C stops them")
    while manager.running():
        for r in manager.running():
            r.join(1.0)
    if manager.jvm_died:
        raise StreamJobError(f"{manager.jvm_died}; its jobs stopped after their last "
                             "checkpoint: run the file again to resume them")
    failed = [r for r in manager.runners.values() if r.error]
    if failed:
        raise StreamJobError(f"job {failed[0].job.qualified_name} failed: {failed[0].error}")


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE")
@client_options
@click.pass_obj
def submit(obj: Invocation, file: str, variables) -> None:
    """Execute FILE's statements against the catalog (a job manager runs started jobs)."""
    _execute_file(obj, file, pairs(variables, "--var"), obj.session)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE",
              help="Value of ${NAME} in the file (repeatable).")
@click.option("-v", "--verbose", is_flag=True, help="One line per statement.")
@click.option("--offline", is_flag=True,
              help="Skip Spark's streaming analysis of the jobs' queries (no JVM is started; "
                   "streamjob's own rules still run).")
@click.option("--compat", is_flag=True,
              help="For an old Slipstream script: list every statement, clause and property "
                   "with what streamjob does with it (runs, mapped, ignored, refused); "
                   "exits 1 if any is refused. Nothing is executed.")
@client_options
@click.pass_obj
def check(obj: Invocation, file: str, variables, verbose: bool, offline: bool,
          compat: bool) -> None:
    """Dry run: parse and validate FILE against a scratch copy of the catalog.

    Prints OK, or the first error as FILE:LINE:COL: error: ... with the line and a
    caret, and exits 1. Nothing runs and the catalog is not changed. Each job's query
    is also put to Spark's streaming analysis over empty inputs (a local Spark starts,
    in a few seconds, at the first CREATE STREAMJOB), unless --offline.
    """
    from ..client.check import check_script, scratch_catalog

    if compat:
        _compat(obj, file, pairs(variables, "--var"))
        return
    spark = None if offline else _local_spark(obj)
    try:
        text = _read_script(file, pairs(variables, "--var"), obj.home)
        report = check_script(text, file, scratch_catalog(obj.catalog), obj.home, spark)
    except StreamJobError as exc:
        if obj.debug:
            raise
        where = f"{exc.source or file}:{exc.line}:{exc.column}: " if exc.line else f"{file}: "
        click.secho(f"{where}error: {exc.message}", fg="red", err=True)
        if exc.snippet:
            click.echo(exc.snippet, err=True)
        sys.exit(1)
    for line in report.lines if verbose else report.notes:
        click.echo(line)
    click.echo(f"OK ({report.statements} statement{'s' if report.statements != 1 else ''})")


def _compat(obj: Invocation, file: str, variables: dict[str, str]) -> None:
    """``check --compat``: the report of :mod:`streamjob.client.compat`, one line per item."""
    from ..client.compat import compat_report, summary

    try:
        items = compat_report(_read_script(file, variables, obj.home), file)
    except StreamJobError as exc:  # unreadable file, undefined ${VAR}
        if obj.debug:
            raise
        click.secho(f"{file}: error: {exc.message}", fg="red", err=True)
        sys.exit(1)
    for item in items:
        click.echo(item.render(file))
    click.echo(summary(items))
    if any(i.verdict == "refused" for i in items):
        sys.exit(1)


def _local_spark(obj: Invocation):
    """``() -> SparkSession`` for ``check``: the home's Spark, started on first call. A
    Spark that cannot start (no Java) is reported once and the check goes on without it."""
    state: dict = {}

    def session():
        if "spark" not in state:
            from ..spark.session import spark_session

            try:
                state["spark"] = spark_session(obj.home, obj.debug)
            except Exception as exc:  # noqa: BLE001 - Spark is optional for check
                if obj.debug:
                    raise
                click.echo(f"note: Spark's streaming analysis skipped (Spark did not start: "
                           f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__})",
                           err=True)
                state["spark"] = None
        return state["spark"]

    return session
