"""``streamjob``: the command line (click).

One error boundary: a :class:`~streamjob.exceptions.StreamJobError` prints one red
``Error:`` line (a parse error also shows the line and a caret) and exits 1; any other
exception is a bug, printed the same way with a hint to rerun with ``--debug``, which
shows the full trace. pyspark is imported only by commands that run jobs, so
``streamjob --help`` is instant.

Clients (DESIGN §8) change the catalog and read it: ``-e "STATEMENTS"``, ``submit``, and
the verbs ``start``/``stop``/``drop`` (which set the desired state and say whether a job
manager holds the lease to act on it), ``list``, ``describe``, ``checkpoints``,
``status [--watch]``. Every read verb takes ``--json`` (indented; ``status --watch
--json`` prints one compact document per refresh, one per line). The group's ``--json``
is the default of the verbs' and applies to ``-e``, which prints one compact document
per statement, one per line (so one statement gives exactly one JSON document).
``--home`` and ``--catalog`` are accepted before the verb and after it
(:func:`client_options`; after it wins).
"""

from __future__ import annotations

import json
import logging
import os
import re
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
        self.json = False  # the group's --json: output of -e, default of the verbs' --json
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


@click.group(cls=_Group, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="STREAMJOB_HOME", type=click.Path(file_okay=False),
              help="streamjob home (catalog, checkpoints, warehouse); default ~/.streamjob.")
@click.option("--catalog", "catalog_url", metavar="URL", help="Catalog database URL (SQLAlchemy).")
@click.option("--conf", multiple=True, metavar="KEY=VALUE", help="Engine property (repeatable).")
@click.option("-e", "--execute", "statements", multiple=True, metavar="STATEMENTS",
              help="Execute these ;-separated statements against the catalog, print each "
                   "result and exit (repeatable; not with a command).")
@click.option("--json", "as_json", is_flag=True,
              help="JSON output: of -e (one document per statement, one per line), and the "
                   "default of every read command's --json.")
@click.option("--debug", is_flag=True, help="Show Spark logs and full traces.")
@click.version_option(package_name="streamjob")
@click.pass_context
def main(ctx: click.Context, home, catalog_url, conf, statements, as_json, debug) -> None:
    """streamjob: StreamSQL jobs as checkpointed Spark Structured Streaming queries.

    The catalog is the control plane: commands and statements change it, and the job
    manager (`streamjob server`) runs every job whose desired state is RUNNING.
    --home and --catalog may also follow the command (`streamjob list --catalog URL`).
    """
    ctx.obj = _Context(home, catalog_url, conf, debug)
    ctx.obj.json = as_json
    if debug:  # Spark's Python worker processes inherit it (connectors/worker.py)
        os.environ["STREAMJOB_DEBUG"] = "1"
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not debug:
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
        logging.getLogger("py4j").setLevel(logging.CRITICAL)
    if statements:
        if ctx.invoked_subcommand is not None:
            raise click.UsageError(f"-e cannot be combined with the command "
                                   f"'{ctx.invoked_subcommand}'")
        from .executor import Executor

        executor = Executor(ctx.obj.catalog, ctx.obj.home)  # one session: SET carries over
        for text in statements:
            _execute_text(ctx.obj, text, None, executor=executor, as_json=as_json)
    elif ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _set_client_option(ctx: click.Context, param: click.Parameter, value) -> None:
    """Callback of a command's --home/--catalog: overrides the group's value."""
    if value is not None:
        obj = ctx.find_object(_Context)
        setattr(obj, "home_arg" if param.name == "home" else "catalog_url", value)


def client_options(command):
    """Decorator: give a command its own ``--home`` and ``--catalog`` options, so they
    may follow the verb (``streamjob list --catalog URL``) as well as precede it; a value
    given after the verb wins over the group's."""
    command = click.option("--catalog", "catalog_url", metavar="URL", expose_value=False,
                           callback=_set_client_option,
                           help="Catalog database URL (SQLAlchemy).")(command)
    return click.option("--home", type=click.Path(file_okay=False), expose_value=False,
                        callback=_set_client_option,
                        help="streamjob home; default $STREAMJOB_HOME or ~/.streamjob.")(command)


def _read_script(path: str, variables: dict[str, str], home) -> str:
    from .script import substitute

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise StreamJobError(f"cannot read {path}: {exc.strerror}") from None
    return substitute(text, {"STREAMJOB_HOME": str(home.root), **variables}, source=path)


def _execute_file(obj: _Context, path: str, variables: dict[str, str], manager=None) -> None:
    from .executor import Executor

    text = _read_script(path, variables, obj.home)
    _execute_text(obj, text, path, executor=Executor(obj.catalog, obj.home, manager))


def _execute_text(obj: _Context, text: str, source: str | None, executor,
                  as_json: bool = False) -> None:
    """Parse ``text`` whole (a parse error executes nothing), then execute and print its
    statements one by one, stopping at the first error (located in ``text``). With
    ``as_json`` each result is one JSON document on one line."""
    from .grammar import parse_script

    for stmt in parse_script(text, source=source):
        try:
            result = executor.execute(stmt)
        except StreamJobError as exc:
            exc.locate(stmt.position.line, stmt.position.column, text, source)
            raise
        if executor.manager is None:
            result = _annotate(obj, stmt, result)
        _render(result, as_json, compact=True)


def _interrupt(signum, frame) -> None:
    """SIGTERM stops the jobs like Ctrl-C does (checkpoints stay)."""
    raise KeyboardInterrupt


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--until-idle", is_flag=True,
              help="Exit 0 once every started job has committed all input available now.")
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE",
              help="Value of ${NAME} in the file (repeatable).")
@client_options
@click.pass_obj
def run(obj: _Context, file: str, until_idle: bool, variables) -> None:
    """Execute FILE's statements and run the jobs it starts in this process.

    Runs until Ctrl-C (jobs stop after their current batch; checkpoints stay), or with
    --until-idle until every job has caught up with its input. Running the same file
    again resumes the jobs from their checkpoints.
    """
    from .manager import JobManager
    from .manager.host import HostRegistration

    host = HostRegistration(obj.catalog, obj.home.conf.get("spark.master", "local[*]"))
    manager = JobManager(obj.catalog, obj.home, debug=obj.debug, owner=host.server_id)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        _execute_file(obj, file, _pairs(variables, "--var"), manager)
        _supervise(manager, until_idle)
    finally:
        manager.shutdown()
        host.close()


@main.command()
@click.option("--until-idle", is_flag=True,
              help="Exit 0 once every job has committed all input available now.")
@click.option("--lease-ttl", "lease_ttl_ms", type=click.IntRange(min=1000), default=10_000,
              show_default=True, metavar="MS",
              help="Lease time to live in ms: a standby takes over this long after the "
                   "active server died.")
@click.option("--poll", "poll_s", type=click.FloatRange(min=0.05), default=1.0,
              show_default=True, metavar="S",
              help="Seconds between catalog checks (PostgreSQL also wakes on NOTIFY).")
@client_options
@click.pass_obj
def server(obj: _Context, until_idle: bool, lease_ttl_ms: int, poll_s: float) -> None:
    """Run every job whose desired state is RUNNING (the job manager).

    Follows the catalog: jobs other clients start, stop or drop are started, stopped
    after their current batch, or stopped at once within a second. Several servers may
    share a catalog: the one holding its lease runs the jobs, the others wait as
    standbys and take over when it dies (after --lease-ttl) or exits (at once). After a
    crash (even SIGKILL), the next server resumes each job from its last checkpoint.
    Runs until Ctrl-C/SIGTERM (jobs stop after their current batch; checkpoints stay;
    their desired state stays RUNNING), or with --until-idle until every job has caught up.
    """
    from .manager.server import JobServer

    JobServer(obj.catalog, obj.home, debug=obj.debug, lease_ttl_ms=lease_ttl_ms,
              poll_s=poll_s, echo=click.echo).run(until_idle=until_idle)


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
@client_options
@click.pass_obj
def submit(obj: _Context, file: str, variables) -> None:
    """Execute FILE's statements against the catalog (a job manager runs started jobs)."""
    _execute_file(obj, file, _pairs(variables, "--var"))


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE",
              help="Value of ${NAME} in the file (repeatable).")
@click.option("-v", "--verbose", is_flag=True, help="One line per statement.")
@client_options
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
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a list of job objects).")
@client_options
@click.pass_obj
def list_jobs(obj: _Context, as_json: bool) -> None:
    """List streamjobs: status, guarantee, last checkpoint, failures, last error."""
    _statement(obj, "LIST STREAMJOBS", as_json or obj.json)


@main.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (an object by section).")
@client_options
@click.pass_obj
def describe(obj: _Context, name: str, as_json: bool) -> None:
    """Describe a streamjob (SQL, effective properties and their origin, runs,
    checkpoints), else a stream or table of that name."""
    from .exceptions import ObjectNotFoundError

    db, obj_name = _qualified(name)
    if obj.catalog.get_job(db, obj_name) is not None:
        _statement(obj, f"DESCRIBE STREAMJOB {name}", as_json or obj.json)
        return
    try:
        _statement(obj, f"DESCRIBE {name}", as_json or obj.json)
    except ObjectNotFoundError:
        raise ObjectNotFoundError(f"streamjob, stream or table {db}.{obj_name} "
                                  "does not exist") from None


@main.command()
@click.argument("job")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a list of checkpoints).")
@client_options
@click.pass_obj
def checkpoints(obj: _Context, job: str, as_json: bool) -> None:
    """Show the retained checkpoints of JOB."""
    _qualified(job)
    _statement(obj, f"SHOW CHECKPOINTS FOR STREAMJOB {job}", as_json or obj.json)


@main.command()
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


@main.command()
@click.argument("job")
@client_options
@click.pass_obj
def stop(obj: _Context, job: str) -> None:
    """Set JOB's desired state to STOPPED: the job manager stops it after its current
    batch (its checkpoints stay)."""
    _qualified(job)
    _statement(obj, f"STOP STREAMJOB {job}", obj.json)


@main.command()
@click.argument("job")
@click.option("--if-exists", is_flag=True, help="No error if JOB does not exist.")
@client_options
@click.pass_obj
def drop(obj: _Context, job: str, if_exists: bool) -> None:
    """Drop JOB: stop it, purge its checkpoints and its catalog rows."""
    _qualified(job)
    _statement(obj, f"DROP STREAMJOB {'IF EXISTS ' if if_exists else ''}{job}", obj.json)


@main.command()
@click.option("-w", "--watch", is_flag=True, help="Refresh until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              metavar="S", help="Seconds between refreshes with --watch.")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (with --watch one document per refresh, one per line).")
@client_options
@click.pass_obj
def status(obj: _Context, watch: bool, interval: float, as_json: bool) -> None:
    """A table of jobs: state, desired state, rate (processed rows/s), batch, age of the
    last checkpoint, source lag (records), last error; and which job manager runs them.

    With --watch the table is redrawn every --interval seconds until Ctrl-C (exit 0);
    when stdout is not a terminal each refresh is printed after the previous one.
    """
    as_json = as_json or obj.json
    if not watch:
        snapshot = _status_snapshot(obj.catalog)
        if as_json:
            click.echo(json.dumps(snapshot, indent=2, default=str))
        else:
            _console().print(_status_view(snapshot))
        return
    try:
        _watch_status(obj.catalog, interval, as_json)
    except KeyboardInterrupt:  # the way to end --watch: quietly, exit 0
        pass


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Start with JSON output (\\json toggles).")
@client_options
@click.pass_obj
def shell(obj: _Context, as_json: bool) -> None:
    """Interactive StreamSQL shell: history, multi-line statements ended by ';',
    completion, highlighting, \\help.

    SELECT ... FROM stream [LIMIT n] prints rows as they arrive. Without a job manager
    (`streamjob server`) the shell runs the jobs it starts until it exits. When stdin is
    not a terminal (`streamjob shell < file.sql`) the statements run without prompts or
    questions, and errors make the exit status 1.
    """
    from .shell import run_shell

    code = run_shell(obj.catalog, obj.home, debug=obj.debug, as_json=as_json or obj.json)
    if code:
        sys.exit(code)


_NAME_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)*`)"
_NAME_RE = re.compile(rf"{_NAME_PART}(?:\.{_NAME_PART})?")


def _qualified(name: str) -> tuple[str, str]:
    """``(database, name)`` of a ``[DB.]NAME`` command argument (default database filled in).

    Raises:
        StreamJobError: ``name`` is not a (backquoted where needed) name.
    """
    if not _NAME_RE.fullmatch(name):
        raise StreamJobError(f"invalid name '{name}': expected NAME or DATABASE.NAME "
                             "(letters, digits and '_'; other names in `backquotes`)")
    from .grammar import parse_statement

    return parse_statement(f"DESCRIBE {name}").name.resolve()


def _statement(obj: _Context, sql: str, as_json: bool) -> None:
    """Execute one statement the CLI built from a verb's arguments and print its result.
    An error's position in that statement means nothing to the user and is dropped."""
    from .executor import Executor
    from .grammar import parse_statement

    stmt = parse_statement(sql)
    try:
        result = Executor(obj.catalog, obj.home).execute(stmt)
    except StreamJobError as exc:
        exc.line = exc.column = exc.snippet = None
        raise
    _render(_annotate(obj, stmt, result), as_json)


def _lease_holder(catalog):
    """The job manager holding the catalog's lease (a ServerInfo), or None: none runs,
    or this catalog cannot tell."""
    holder = getattr(catalog, "lease_holder", None)
    if holder is None:
        return None
    try:
        return holder()
    except StreamJobError as exc:  # the statement already succeeded; say what we can
        logging.getLogger(__name__).warning("cannot read the job manager lease: %s", exc)
        return None


def _server_label(info) -> str:
    """``host:pid`` of a job manager's ServerInfo (else its id or repr)."""
    host, pid = getattr(info, "host", None), getattr(info, "pid", None)
    if host is not None and pid is not None:
        return f"{host}:{pid}"
    return str(getattr(info, "server_id", None) or getattr(info, "id", None) or info)


_NO_SERVER = "no job manager is running: start one with `streamjob server`"


def _annotate(obj: _Context, stmt, result):
    """START/STOP/DROP STREAMJOB from a client without a job manager only change the
    desired state: say so, and whether a job manager (`streamjob server`) will act."""
    from dataclasses import replace

    kind, msg = type(stmt).__name__, result.message or ""
    if kind not in ("StartStreamJob", "StopStreamJob", "DropStreamJob") or not msg:
        return result
    qualified = msg.split(" ")[1] if msg.startswith("streamjob ") else None
    pending = f"streamjob {qualified} will start when a job manager runs it"
    if kind == "StartStreamJob" and msg.startswith(pending):
        server = _lease_holder(obj.catalog)
        then = f"server {_server_label(server)} starts it" if server else _NO_SERVER
        msg = f"streamjob {qualified}: desired state RUNNING{msg[len(pending):]}; {then}"
    elif kind == "StopStreamJob" and msg == f"streamjob {qualified} stopped":
        server = _lease_holder(obj.catalog)
        then = (f"server {_server_label(server)} stops it after its current batch" if server
                else "no job manager is running, so nothing runs it")
        msg = f"streamjob {qualified}: desired state STOPPED; {then}"
    elif kind == "DropStreamJob" and msg.endswith(" dropped; its checkpoints were purged"):
        server = _lease_holder(obj.catalog)
        if server:
            msg += f"; server {_server_label(server)} stops it if it runs it"
    return replace(result, message=msg)


#: Width of the error column of `status` (the JSON has the whole error).
_ERROR_WIDTH = 60


def _parse_time(value):
    """An aware UTC datetime from a datetime or an ISO-8601 string (naive = UTC), or None."""
    from datetime import datetime, timezone

    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _status_snapshot(catalog) -> dict[str, Any]:
    """Every job's state now, JSON-ready: ``{"at", "server", "jobs": [...]}``.

    Per job: job, status, desired_state, owner, batch, input_rows_per_s,
    processed_rows_per_s, lag_records, last_checkpoint_at, last_checkpoint_age_s,
    attempts, error, progress_updated_at. The job manager's progress report
    (``JobInfo.progress``) is the source; batch and checkpoint time fall back to the
    latest checkpoint the catalog recorded. ``server`` is the job manager holding the
    lease (``{"label": "host:pid", ...}``) or null.
    """
    from dataclasses import asdict, is_dataclass
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    server = _lease_holder(catalog)
    jobs = []
    for job in catalog.list_jobs():
        progress = getattr(job, "progress", None) or {}
        batch = progress.get("batch_id")
        at = _parse_time(progress.get("last_checkpoint_at"))
        if batch is None or at is None:
            latest = catalog.latest_checkpoint(job.uid)
            if latest is not None:
                batch = latest.checkpoint_id if batch is None else batch
                at = at or _parse_time(latest.ended_at or latest.started_at)
        updated = _parse_time(progress.get("updated_at"))
        jobs.append({
            "job": job.qualified_name, "status": job.status,
            "desired_state": job.desired_state, "owner": getattr(job, "owner", None),
            "batch": batch, "input_rows_per_s": progress.get("input_rows_per_s"),
            "processed_rows_per_s": progress.get("processed_rows_per_s"),
            "lag_records": progress.get("lag_records"),
            "last_checkpoint_at": at.isoformat(timespec="seconds") if at else None,
            "last_checkpoint_age_s": round((now - at).total_seconds(), 1) if at else None,
            "attempts": job.attempts, "error": job.last_error,
            "progress_updated_at": updated.isoformat(timespec="seconds") if updated else None,
        })
    described = None
    if server is not None:
        described = {"label": _server_label(server),
                     **(asdict(server) if is_dataclass(server) else {})}
    return {"at": now.isoformat(timespec="seconds"), "server": described, "jobs": jobs}


def _age(seconds: float | None) -> str:
    """``"3 s ago"``, ``"5 min ago"``, ``"2 h ago"``, ``"4 d ago"``; ``""`` for None."""
    if seconds is None:
        return ""
    s = int(max(0.0, seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s // size} {unit} ago"
    return f"{s} s ago"


def _status_view(snapshot: dict[str, Any], interval: float | None = None):
    """The rich renderable of a status snapshot: the jobs table and a job manager line."""
    from rich.console import Group
    from rich.text import Text

    from .executor.result import Result

    rows = []
    for j in snapshot["jobs"]:
        rate = j["processed_rows_per_s"]
        error = (j["error"] or "").strip().splitlines()[0] if j["error"] else None
        if error and len(error) > _ERROR_WIDTH:
            error = error[:_ERROR_WIDTH - 1] + "…"
        rows.append((j["job"], j["status"], j["desired_state"],
                     f"{rate:,.1f}" if rate is not None and j["status"] == "RUNNING" else None,
                     j["batch"], _age(j["last_checkpoint_age_s"]), j["lag_records"], error))
    table = _table(Result(columns=("job", "state", "desired", "rows/s", "batch",
                                   "last checkpoint", "lag", "error"),
                          rows=rows, title="streamjobs"))
    server = snapshot["server"]
    line = (f"job manager: server {server['label']}" if server else _NO_SERVER)
    if interval is not None:
        line += f"  ·  {snapshot['at']}, every {interval:g} s; Ctrl-C quits"
    return Group(table, Text(line, style="dim"))


def _watch_status(catalog, interval: float, as_json: bool) -> None:
    """``status --watch``: redraw (a live table on a terminal; else print each refresh,
    or one JSON line per refresh) every ``interval`` seconds until KeyboardInterrupt."""
    import time

    console = _console()
    if as_json or not console.is_terminal:
        while True:
            snapshot = _status_snapshot(catalog)
            if as_json:
                click.echo(json.dumps(snapshot, default=str))
            else:
                console.print(_status_view(snapshot, interval))
            sys.stdout.flush()
            time.sleep(interval)
    from rich.live import Live

    with Live(console=console, auto_refresh=False) as live:
        while True:
            live.update(_status_view(_status_snapshot(catalog), interval), refresh=True)
            time.sleep(interval)


def _console():
    """The rich console of every table (200 columns when stdout is not a terminal)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)


def _render(result, as_json: bool, compact: bool = False) -> None:
    """Print a statement's :class:`~streamjob.executor.Result`: its tables (rich) and
    message, or with ``as_json`` its JSON (indented, or on one line when ``compact``)."""
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=None if compact else 2, default=str))
        return
    console = _console()
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
