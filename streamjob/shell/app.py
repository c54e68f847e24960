"""The shell's loop: read statements, run them, print their results.

On a terminal, input comes from a prompt_toolkit prompt (history in
``<home>/shell_history``, multi-line statements ended by ``;``, highlighting, completion;
a pasted statement is kept as pasted, indentation included: prompt_toolkit's bracketed
paste inserts it whole, while a typed Enter keeps the previous line's indentation);
DROP asks for confirmation. Otherwise (``streamjob shell < file.sql``) statements are
read from stdin and run as they complete, with no prompt and no question; errors name
``<stdin>:LINE:COL`` and make the exit status 1.

Where started jobs run: when a job manager (``streamjob server``) holds the catalog's
lease, START only sets the job's desired state and the server runs it. Without one, the
shell hosts the jobs it starts in an in-process :class:`~streamjob.manager.JobManager`
and says so; they stop when the shell exits (after a question on a terminal), their
checkpoints kept and their desired state still RUNNING, so a job manager started later
resumes them. Spark starts on the first SELECT or hosted START, not before.

Errors print as one red line, ``Error: LINE:COL: message`` with the position inside the
statement (a full trace only with ``--debug``); the shell goes on.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from typing import IO

import click

from ..client.splitter import Piece, bare_word, is_complete, split_input
from ..exceptions import StreamJobError
from .completion import PREVIEW_RESET_KEY, Names
from .context import ShellContext
from .errors import error_text
from .terminal import follow_stderr, restore_sigint

log = logging.getLogger(__name__)

PROMPT = "streamjob> "
#: Seconds START waits for a job hosted by the shell to be running (or to fail).
START_WAIT_S = 60.0
#: Why a shell with ``--server`` runs no SELECT previews.
REMOTE_PREVIEW = ("SELECT previews run Spark in this shell over the catalog; a shell with "
                  "--server has neither: preview in a shell on the catalog, without --server")


class Shell:
    """One shell session over a catalog.

    Args:
        catalog: the catalog.
        home: the streamjob home (history file, checkpoints, engine settings).
        debug: print full traces of errors.
        as_json: start with JSON output (``\\json`` toggles it).
        interactive: read from a prompt (default: stdin is a terminal).
        session: a :class:`~streamjob.api.client.RemoteSession` (``--server``): the
            statements go through the HTTP API, ``catalog`` is unused (None), and SELECT
            previews, which run Spark here over the catalog, are refused.
    """

    def __init__(self, catalog, home, debug: bool = False, as_json: bool = False,
                 interactive: bool | None = None, session=None) -> None:
        self.remote = session is not None
        self.catalog = session.catalog if self.remote else catalog
        self.home = home
        self.debug = debug
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        from ..client.preview import Previews
        from ..client.session import ClientSession

        # the client session: SET values, and the job manager of the jobs this shell
        # hosts (created on the first START while no server holds the lease)
        self.session = session or ClientSession(catalog, home, host_jobs=True,
                                                spark=self.spark, debug=debug)
        # how results are shown (\json, \x, \pager, \timing): read and changed by .meta
        self.context = ShellContext(self.session, as_json=as_json)
        # SELECT previews, and where they read Kafka streams from (SET of PREVIEW_RESET_KEY)
        self.previews = Previews(self.session, self.spark, echo=self.echo,
                                 interactive=self.interactive,
                                 refusal=REMOTE_PREVIEW if self.remote else None)
        self.errors = 0
        self.names = Names()
        self._spark_started = False
        self._reported: set[str] = set()
        self.refresh_names()

    # -- output --------------------------------------------------------------------

    def echo(self, text: str = "") -> None:
        """Print a line of output."""
        click.echo(text)

    def error(self, exc: BaseException, piece: Piece | None = None, text: str = "",
              source: str | None = None) -> None:
        """Print ``exc`` as one red line; with ``source`` (a script), its position in
        the script, else in the statement. Counts the error."""
        self.errors += 1
        if self.debug:
            traceback.print_exception(exc, file=sys.stderr)
        click.secho(error_text(exc, piece, text, source, self.debug), fg="red", err=True)

    @property
    def database(self) -> str:
        """The session's current database (``USE``), of unqualified names."""
        return self.context.database

    def prompt_text(self) -> str:
        """``streamjob> ``, or ``streamjob:db> `` after ``USE db`` of another database
        than ``default``."""
        return PROMPT if self.database == "default" else f"streamjob:{self.database}> "

    def render(self, result) -> None:
        """Print a statement's :class:`~streamjob.executor.Result` as the CLI does (rich
        tables, expanded as ``\\x`` says, or JSON under ``\\json``); through the pager
        when it does not fit the terminal (:mod:`.pager`; not when stdin or stdout is no
        terminal, or ``\\pager off``)."""
        from ..client.render import render

        ctx = self.context
        if not (ctx.pager and self.interactive and sys.stdout.isatty()):
            render(result, ctx.as_json, expanded=ctx.expanded)
            return
        from .pager import captured, page

        page(captured(lambda: render(result, ctx.as_json, expanded=ctx.expanded)))

    # -- state ---------------------------------------------------------------------

    def refresh_names(self) -> None:
        """Reload the catalog names offered by completion (kept as they were if the
        catalog cannot be read)."""
        try:
            self.names = Names.load(self.catalog)
        except Exception as exc:  # noqa: BLE001 - completion must never break the shell
            log.debug("cannot read catalog names: %s", exc)

    @property
    def session_props(self) -> dict[str, str]:
        """This shell's ``SET`` values (the session's)."""
        return self.session.properties

    @property
    def manager(self):
        """The job manager of the jobs this shell hosts, or None before the first."""
        return self.session.manager

    def server(self) -> str | None:
        """``host:pid`` of the job manager holding the catalog's lease, or None (no
        server runs; also when the catalog cannot tell)."""
        return self.session.lease_holder()

    def hosted(self) -> list:
        """The runners of the jobs running in this shell."""
        return self.manager.running() if self.manager is not None else []

    def spark(self):
        """The process's SparkSession, started on first use (it takes a few seconds).

        Unless ``--debug``, everything Spark's JVM and its Python workers print goes to
        ``<home>/logs/spark.log``, never over the prompt (:func:`~streamjob.spark.session.spark_session`);
        on a terminal the shell names that file when Spark starts."""
        from ..spark.session import spark_log, spark_session

        if not (self._spark_started or self.debug or not self.interactive):
            click.secho(f"starting Spark (its log: {spark_log(self.home)}) ...", dim=True)
        spark = spark_session(self.home, self.debug)
        self._spark_started = True
        restore_sigint()
        return spark

    # -- running -------------------------------------------------------------------

    def run_text(self, text: str, source: str | None = None, final: bool = True) -> bool:
        """Run every command in ``text``; with ``final``, an unfinished last statement
        too (a script's last statement may lack its ``;``). ``source`` names a script
        (errors then give positions in it). Returns False when a command quits."""
        split = split_input(text)
        pieces = list(split.pieces)
        if split.rest and (final or bare_word(split.rest)):
            pieces.append(Piece("sql", split.rest.rstrip().rstrip(";").rstrip(), split.rest_offset))
        for piece in pieces:
            if not self.run_piece(piece, text, source):
                return False
        return True

    def run_piece(self, piece: Piece, text: str = "", source: str | None = None) -> bool:
        """Run one statement or meta command, printing its result or its error; returns
        False when it quits the shell."""
        started = time.perf_counter()
        try:
            word = bare_word(piece.text)
            if word in ("quit", "exit"):
                return False
            if piece.kind == "meta":
                if not self.run_meta(piece.text):
                    return False
            elif word == "help":
                self.run_meta("\\help")
            else:
                self.run_statement(piece.text)
        except KeyboardInterrupt:
            click.secho("Interrupted.", fg="yellow", err=True)
        except Exception as exc:  # noqa: BLE001 - the shell's error boundary
            self.error(exc, piece, text or piece.text, source)
        finally:
            restore_sigint()
            self.refresh_names()
        if self.context.timing:
            self.echo(f"Time: {time.perf_counter() - started:.3f} s")
        return True

    def run_meta(self, line: str) -> bool:
        """Run a meta command line (:mod:`.meta`) and what it asks to run next; returns
        False when it quits the shell.

        Raises:
            StreamJobError: the command's error, or that of a statement it runs.
        """
        from .meta import run_meta

        then = run_meta(self.context, line)
        for sql in then.statements:
            self.run_statement(sql)
        if then.script is not None:
            return self.run_text(then.script, source=then.source)
        return not then.quit

    def run_statement(self, text: str) -> None:
        """Run one statement (without its ``;``) and print its result.

        Raises:
            StreamJobError: the statement's error (it changed nothing), positioned in
                ``text``.
        """
        from ..grammar import parse_statement
        from ..grammar import statements as st
        from ..planner.preview import is_select

        if is_select(text):
            self.previews.run(text, self.context.as_json)
            return
        stmt = parse_statement(text)
        if self._shell_setting(stmt):
            return
        if isinstance(stmt, (st.DropStreamJob, st.DropStream, st.DropTable)) \
                and not self._confirm_drop(stmt):
            return
        result = self.session.execute(stmt)
        if result.runs_in == "here":
            result = self._started(stmt, result)
        self.render(result)
        if isinstance(stmt, st.SetProperty) and stmt.key is None and self.previews.reset:
            self.echo(f"{PREVIEW_RESET_KEY}={self.previews.reset} (where SELECT in this shell "
                      "starts)")

    def _shell_setting(self, stmt) -> bool:
        """``SET``/``RESET`` of :data:`PREVIEW_RESET_KEY`: where SELECT in this shell
        starts reading Kafka streams (not a job property). True if handled here."""
        from .. import properties as jp
        from ..grammar import statements as st

        if isinstance(stmt, st.ResetProperty) and stmt.key is None:
            self.previews.reset = None
            return False
        key = getattr(stmt, "key", None)
        if not isinstance(stmt, (st.SetProperty, st.ResetProperty)) or key is None \
                or key.strip().lower() != PREVIEW_RESET_KEY:
            return False
        if isinstance(stmt, st.ResetProperty):
            self.previews.reset = None
            self.echo(f"{PREVIEW_RESET_KEY} reset (SELECT reads each stream from its own)")
            return True
        try:
            reset = jp.CONNECTOR.lookup(PREVIEW_RESET_KEY).parse(stmt.value or "")
            self.previews.reset = str(reset)
        except StreamJobError as exc:
            pos = stmt.where("name")
            exc.locate(pos.line, pos.column)
            raise
        self.echo(f"{PREVIEW_RESET_KEY}={self.previews.reset} (where SELECT in this shell "
                  f"starts reading Kafka streams)")
        return True

    def _confirm_drop(self, stmt) -> bool:
        """Ask before a DROP on a terminal ("Drop streamjob x? [y/N]"); True to go on. An
        object that does not exist is not asked about (the statement reports it)."""
        from ..grammar import statements as st

        if not self.interactive:
            return True
        kind, get = {st.DropStreamJob: ("streamjob", self.catalog.get_job),
                     st.DropStream: ("stream", self.catalog.get_stream),
                     st.DropTable: ("table", self.catalog.get_table)}[type(stmt)]
        found = get(*stmt.name.resolve(self.database))
        if found is None:
            return True
        if kind == "streamjob" and not self.remote:
            from ..executor.jobs import what_drop_deletes

            kept = len(self.catalog.list_savepoints(found.uid))
            self.echo(f"Dropping streamjob {stmt.name} deletes "
                      + "; ".join(what_drop_deletes(self.home, found, kept)) + ".")
        if self.confirm(f"Drop {kind} {stmt.name}? [y/N] "):
            return True
        self.echo(f"{kind} {stmt.name} not dropped")
        return False

    def confirm(self, question: str) -> bool:
        """Ask a yes/no question on the terminal (yes only for y/yes); always yes when
        not interactive."""
        if not self.interactive:
            return True
        from prompt_toolkit import prompt

        try:
            answer = prompt(question)
        except (EOFError, KeyboardInterrupt):
            return False
        return answer.strip().lower() in ("y", "yes")

    def _started(self, stmt, result):
        """A job started in this shell: wait until it runs (or failed), at most
        :data:`START_WAIT_S` (Ctrl-C stops waiting, not the job), and say it stops with
        the shell. Returns the result to print.

        Raises:
            JobError: the job failed while starting.
        """
        from dataclasses import replace

        from ..exceptions import JobError

        if result.object:  # a bare INSERT: its implicit job
            qualified = result.object
        else:
            db, name = stmt.name.resolve(self.database)
            qualified = f"{db}.{name}"
        runner = next((r for r in (self.manager.runners.values() if self.manager else ())
                       if r.job.qualified_name == qualified), None)
        if runner is not None:
            try:
                runner.started.wait(START_WAIT_S)
            except KeyboardInterrupt:
                pass
            if runner.error and not runner.is_alive():
                self._reported.add(runner.job.uid)
                raise JobError(f"streamjob {qualified} failed: {runner.error}")
        return replace(result, message=(result.message or "") + (
            f"\nno job manager is running: this shell runs streamjob {qualified}; it stops "
            "when the shell exits"))

    def report_jobs(self) -> None:
        """Print a red line for each job hosted here that failed since the last report."""
        if self.manager is None:
            return
        for runner in list(self.manager.runners.values()):
            uid = runner.job.uid
            if uid in self._reported or runner.is_alive() or not runner.error:
                continue
            self._reported.add(uid)
            click.secho(f"streamjob {runner.job.qualified_name} failed: {runner.error}",
                        fg="red", err=True)

    # -- the two modes -------------------------------------------------------------

    def run(self, stdin: IO[str] | None = None, source: str = "<stdin>") -> int:
        """Run the shell until quit or end of input; returns the exit status (1 when a
        script had errors). ``source`` names ``stdin`` in errors (``shell -f FILE``)."""
        try:
            if self.interactive:
                self.loop()
                return 0
            self.script(stdin or sys.stdin, source)
            return 1 if self.errors else 0
        finally:
            self.close()

    def script(self, stream: IO[str], source: str = "<stdin>") -> None:
        """Run the statements read from ``stream`` as each completes (no prompt, no
        question)."""
        buffer = ""
        for line in stream:
            buffer += line
            if is_complete(buffer):
                if not self.run_text(buffer, source=source, final=False):
                    return
                buffer = "\n" * buffer.count("\n")  # keep later line numbers true
        if buffer.strip():
            self.run_text(buffer, source=source, final=True)

    def loop(self) -> None:
        """The interactive prompt loop (see the module docstring)."""
        from prompt_toolkit.patch_stdout import patch_stdout

        session = self._prompt_session()
        follow_stderr()
        self._banner()
        while True:
            self.report_jobs()
            try:
                with patch_stdout(raw=True):
                    text = session.prompt(self.prompt_text())
            except KeyboardInterrupt:
                continue
            except EOFError:
                if self._may_exit():
                    return
                continue
            if not self.run_text(text) and self._may_exit():
                return

    def _prompt_session(self):
        from prompt_toolkit import PromptSession
        from prompt_toolkit.application import get_app
        from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
        from prompt_toolkit.filters import Condition
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.lexers import PygmentsLexer

        from .completion import ShellCompleter
        from .lexer import StreamSqlLexer

        def continuation(width: int, line_number: int, is_soft_wrap: bool) -> str:
            return "-> ".rjust(width)

        unfinished = Condition(lambda: not is_complete(get_app().current_buffer.text))
        return PromptSession(
            history=FileHistory(str(self.home.root / "shell_history")),
            multiline=unfinished,
            lexer=PygmentsLexer(StreamSqlLexer),
            completer=ShellCompleter(lambda: self.names),
            complete_while_typing=True,
            auto_suggest=AutoSuggestFromHistory(),
            prompt_continuation=continuation,
            enable_open_in_editor=True,
        )

    def _banner(self) -> None:
        from importlib.metadata import PackageNotFoundError, version

        from .. import properties as jp

        try:
            ver = version("streamjob")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            ver = "dev"
        where = (f"server {self.catalog.url}" if self.remote
                 else f"catalog {jp.mask('url', self.home.catalog_url)}")
        self.echo(f"streamjob {ver} shell, {where}")
        server = self.server()
        self.echo(f"jobs started here run in server {server}" if server else
                  "no job manager is running: jobs started here run in this shell")
        self.echo("\\help for help, \\q to quit")

    def _may_exit(self) -> bool:
        """True to exit: no job runs here, or the user agrees to stop them."""
        running = self.hosted()
        if not running or not self.interactive:
            return True
        names = ", ".join(r.job.qualified_name for r in running)
        n = len(running)
        verbs = "runs in this shell and stops" if n == 1 else "run in this shell and stop"
        return self.confirm(f"{'streamjob' if n == 1 else 'streamjobs'} {names} {verbs} "
                            f"when it exits. Exit? [y/N] ")

    def close(self) -> None:
        """Stop the jobs hosted here (checkpoints kept) and Spark, if started."""
        running = self.hosted()
        if running:
            names = ", ".join(r.job.qualified_name for r in running)
            self.echo(f"stopping {names} (checkpoints kept; a job manager resumes "
                      f"{'it' if len(running) == 1 else 'them'})")
        if self.manager is not None or self.remote:
            self.session.close()  # its jobs are free for a server at once
        elif self._spark_started:
            from ..spark.session import stop_spark

            stop_spark()
