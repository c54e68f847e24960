"""One client session under every front end: the CLI's verbs, ``-e``, ``submit``,
``run``, ``check`` and the shell all execute statements through a :class:`ClientSession`
(as Flink's SQL Gateway puts one session layer under its CLI, REST API and UI).

A session holds what a client keeps between statements: the catalog and home it works
on, its current database (``USE db``; ``default`` at first), its ``SET`` values (job
property defaults, DESIGN §3), and, when the client hosts
jobs itself (``streamjob run``, the shell without a server), the in-process
:class:`~streamjob.manager.JobManager` registered as a host of the catalog. It answers,
in one place, where a started job runs: in this process, in the job manager holding the
catalog's lease (``streamjob server``), or nowhere yet. Its results are
:class:`~streamjob.executor.Result` objects with fields (``object``, ``pending``,
``runs_in``), so no client parses message text; :mod:`streamjob.client.render` prints them.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from typing import Callable, Iterator

from ..exceptions import StreamJobError
from ..grammar import statements as st
from ..status import lease_holder, server_label

log = logging.getLogger(__name__)

#: What a pending START says when no job manager holds the catalog's lease.
NO_SERVER = "no job manager is running: start one with `streamjob server`"

#: Statements that read the catalog or change only the session: a viewer may execute
#: them (:mod:`streamjob.api.auth`), and the statement log does not record them (issue
#: 28: a log row per read let a reader grow the catalog at will; changes are logged).
READS = (st.ShowStreams, st.ShowTables, st.Describe, st.ShowStreamJobs,
         st.DescribeStreamJob, st.ShowCheckpoints, st.SetProperty, st.ResetProperty,
         st.ShowCreate, st.ShowDatabases, st.UseDatabase, st.ShowTopics, st.PrintTopic,
         st.Explain, st.ShowFunctions, st.DescribeFunction, st.ShowSavepoints,
         st.ShowShadow)


def local_principal() -> str:
    """``local:<OS user>``: who works on the catalog directly (no HTTP API between)."""
    import getpass

    try:
        return f"local:{getpass.getuser()}"
    except (KeyError, OSError):
        return f"local:uid{os.getuid()}"


class ClientSession:
    """A client's session over one catalog (see the module docstring).

    Args:
        catalog: the :class:`~streamjob.catalog.Catalog`.
        home: the :class:`~streamjob.home.Home`.
        manager: a job manager this process already runs (``streamjob run``), else None.
        host_jobs: START of a job while no job manager holds the lease runs it in this
            process (the shell): a job manager is created on first use (:meth:`host`).
        spark: ``() -> SparkSession`` of this process, for jobs hosted here and for
            Spark's streaming analysis at CREATE/ALTER STREAMJOB (default: the job
            manager's, when there is one).
        debug: passed to a job manager created here (Spark's logs on stderr).
        dry_run: check instead of run (``streamjob check`` on a scratch catalog).
        principal: who executes the statements, as the statement log records it
            (``token:NAME`` through the HTTP API; default ``local:<OS user>``).
        role: the principal's :class:`~streamjob.catalog.records.Role` (DESIGN §9):
            ``ADMIN`` for a local client (it holds the catalog), a token's role through
            the HTTP API. What an operator may reach is checked against the admin's
            policy by the executor.
    """

    def __init__(self, catalog, home, *, manager=None, host_jobs: bool = False,
                 spark: Callable | None = None, debug: bool = False,
                 dry_run: bool = False, principal: str | None = None,
                 role=None) -> None:
        from ..catalog.records import Role

        self.catalog, self.home = catalog, home
        self.principal = principal or local_principal()
        self.role = Role(role) if role is not None else Role.ADMIN
        self.manager = manager
        self.host_jobs = host_jobs
        self.debug, self.dry_run = debug, dry_run
        self.properties: dict[str, str] = {}  # SET values of this session
        self.database = st.DEFAULT_DATABASE  # of unqualified names; USE changes it
        self.jars: list[str] = []  # ADD JAR's jars of this session (real paths)
        self._spark = spark
        self._host = None  # the HostRegistration of a job manager created here
        self._plans = None  # the PlanMemo of the script being executed (execute_script)

    # -- where jobs run ------------------------------------------------------------

    def add_jars(self, written) -> None:
        """The session's ADD JAR jars as a client carries them between requests (the HTTP
        API's ``jars``; docs/functions.md "ADD JAR and sessions"): each checked again
        as ADD JAR checks it, so carrying a jar is never more than adding it again.

        Raises:
            PolicyError: a jar outside the admin's jar directories (or jar functions
                are off).
            ValidationError: a jar that is not there (any more), or not a jar.
        """
        from ..udf.jars import resolve_jar

        for path in written:
            real = resolve_jar(str(path), self.home.policy).path
            if real not in self.jars:
                self.jars.append(real)

    def host(self):
        """The job manager of the jobs this session runs, created (and registered as a
        host of the catalog, so STOP/DROP from other clients reach its jobs) on first
        use."""
        if self.manager is None:
            from ..manager import JobManager
            from ..manager.liveness import HostRegistration

            self._host = HostRegistration(self.catalog,
                                          self.home.conf.get("spark.master", "local[*]"))
            self.manager = JobManager(self.catalog, self.home, debug=self.debug,
                                      owner=self._host.server_id)
            if self._spark is not None:
                self.manager.spark = self._spark
            self._host.follow(self.manager)
        return self.manager

    def lease_holder(self) -> str | None:
        """``host:pid`` of the job manager holding the catalog's lease, or None."""
        info = lease_holder(self.catalog)
        return None if info is None else server_label(info)

    def status(self) -> dict:
        """Every job's state now (:func:`streamjob.status.status_snapshot`)."""
        from ..status import status_snapshot

        return status_snapshot(self.catalog)

    # -- executing -----------------------------------------------------------------

    def executor(self, manager=None):
        """The :class:`~streamjob.executor.Executor` of one statement, sharing this
        session's ``SET`` values."""
        from ..executor import Executor

        return Executor(self.catalog, self.home, manager, self.properties,
                        dry_run=self.dry_run, spark=self._spark, database=self.database,
                        role=self.role, plans=self._plans, principal=self.principal,
                        jars=self.jars)

    def execute(self, stmt: st.Statement):
        """Execute one statement and say where a started job runs.

        START (and a bare INSERT, which starts its implicit job): when this session hosts jobs and no job manager holds the lease, the job
        starts here (``runs_in="here"``); otherwise only its desired state changes, and
        the message says which job manager starts it or that none runs
        (``runs_in`` its ``host:pid``, or None). Other statements run as they are.

        Raises:
            StreamJobError: the statement's error, located in the statement.
        """
        manager, server = self.manager, None
        starts = isinstance(stmt, (st.StartStreamJob, st.InsertInto))  # a bare INSERT starts a job
        # ALTER ... AS of a running job restarts it (issue 30): where START would run it
        starts = starts or (isinstance(stmt, st.ReplaceStreamJobQuery)
                            and self._desired_running(stmt))
        if starts and self.host_jobs and not self.dry_run:
            server = self.lease_holder()
            manager = None if server else self.host()
        try:
            result = self.executor(manager).execute(stmt)
        except StreamJobError as exc:
            self._log(stmt, None, exc)
            raise
        self._log(stmt, result, None)
        if result.database is not None:  # USE: the session's current database from now on
            self.database = result.database
        if isinstance(stmt, st.InsertInto) and result.detail == "exists":
            return result  # the INSERT's job exists: nothing started
        if starts and not self.dry_run:
            if result.pending:
                server = server or self.lease_holder()
                then = f"server {server} starts it" if server else NO_SERVER
                result = replace(result, runs_in=server, message=(
                    f"streamjob {result.object}: desired state RUNNING{result.detail}; {then}"))
            elif manager is not None:
                result = replace(result, runs_in="here")
        return result

    def _desired_running(self, stmt) -> bool:
        """The job ``stmt`` names is desired RUNNING (False when it does not exist)."""
        from ..catalog.records import DesiredState

        try:
            db, name = stmt.name.resolve(self.database)
            job = self.catalog.get_job(db, name)
        except StreamJobError:
            return False
        return job is not None and job.desired_state == DesiredState.RUNNING

    def _log(self, stmt: st.Statement, result, error: StreamJobError | None) -> None:
        """Record the statement in the catalog's statement log (who, what, outcome); a
        dry run and a read (:data:`READS`) record nothing, and a failed write only warns."""
        if self.dry_run or isinstance(stmt, READS) or not hasattr(self.catalog, "log_statement"):
            return
        name = getattr(stmt, "name", None)
        target = (result.object if result is not None else None) or (
            ".".join(name.resolve()) if hasattr(name, "resolve") else None)
        try:
            self.catalog.log_statement(self.principal, type(stmt).__name__, target,
                                       error is None, None if error is None else error.message)
        except StreamJobError as exc:
            log.warning("statement not logged in the catalog: %s", exc)

    def execute_script(self, text: str, source: str | None = None,
                       statements: list[st.Statement] | None = None) -> Iterator:
        """Apply a script: parse ``text`` whole (a parse error executes nothing), try it
        whole on a scratch copy of the catalog (:meth:`validate`: an error there executes
        nothing), then execute its statements one by one, yielding
        ``(statement, Result)`` for each. ``statements``: ``text`` already parsed.
        The check and the execution share their plans
        (:class:`~streamjob.planner.memo.PlanMemo`): a statement plans its job once.

        Raises:
            StreamJobError: a parse or validation error (what ``streamjob check
                --offline`` reports), or the first statement's error while applying,
                located in ``text`` (``source`` names the file); later statements do not
                run, and the error's ``note`` says which statements took effect.
        """
        if statements is None:
            from ..grammar import parse_script

            statements = parse_script(text, source=source)
        applying = not self.dry_run and len(statements) > 1
        outer = self._plans is None  # (validate's dry session shares this script's memo)
        if outer:
            from ..planner.memo import PlanMemo

            self._plans = PlanMemo()
        try:
            if applying:
                self.validate(statements, text, source)
            done: list[tuple[st.Statement, object]] = []
            for stmt in statements:
                try:
                    result = self.execute(stmt)
                except StreamJobError as exc:
                    exc.locate(stmt.position.line, stmt.position.column, text, source)
                    if applying:
                        exc.note = took_effect(done, statements, stmt)
                    raise
                done.append((stmt, result))
                yield stmt, result
        finally:
            if outer:
                self._plans = None

    def validate(self, statements: list[st.Statement], text: str,
                 source: str | None = None) -> None:
        """Execute ``statements`` (parsed from ``text``) in order as a dry run on a
        scratch copy of the catalog, with this session's SET values, as ``streamjob
        check --offline`` does (no Spark; the real execution still asks Spark when it
        has one). Nothing in the catalog or the home changes.

        Raises:
            StreamJobError: the first statement's error, located in ``text``.
        """
        from .scratch import scratch_catalog

        scratch = scratch_catalog(self.catalog)
        try:
            dry = ClientSession(scratch, self.home, dry_run=True, principal=self.principal,
                                role=self.role)
            dry.properties.update(self.properties)
            dry.database = self.database
            dry.jars = list(self.jars)  # ADD JAR of an earlier script of the session
            dry._plans = self._plans  # the execution takes the check's plans (planner/memo.py)
            for _ in dry.execute_script(text, source, statements):
                pass
        finally:
            scratch.close()

    def close(self) -> None:
        """Stop the jobs this session hosts (after their current micro-batch; checkpoints
        and desired state kept, so a job manager resumes them) and leave the hosts."""
        try:
            if self.manager is not None:
                self.manager.shutdown()
        finally:
            if self._host is not None:
                self._host.close()
                self._host = None


#: How many statements :func:`took_effect` names before it only counts the rest.
NAMED_AT_MOST = 10


def took_effect(done: list, statements: list, failed: st.Statement) -> str:
    """The note of a script that failed while being applied: ``2 of 4 statements took
    effect: stream default.s created, table default.t created; nothing after line 7
    ran`` (``done``: the ``(statement, Result)`` pairs executed before ``failed``)."""
    said = [(result.message or " ".join(stmt.text.split()[:2]).upper())
            .split("; ")[0].split(" (")[0] for stmt, result in done[:NAMED_AT_MOST]]
    if len(done) > NAMED_AT_MOST:
        said.append(f"and {len(done) - NAMED_AT_MOST} more")
    note = f"{len(done)} of {len(statements)} statements took effect"
    if said:
        note += ": " + ", ".join(said)
    if failed is not statements[-1]:
        note += f"; nothing after line {failed.position.line} ran"
    return note
