"""Executes parsed StreamSQL statements against the catalog (and a job manager, if hosted).

Statements change the catalog, the control plane (DESIGN §8). When this process hosts
a :class:`~streamjob.manager.JobManager` (``streamjob run``), START and STOP also start
and stop the job here; otherwise they only set the job's desired state.

With ``dry_run=True`` (``streamjob check``) the executor works on a scratch catalog and
touches nothing else: START/STOP/DROP are checked and recorded in that catalog, no job
runs, no checkpoint is removed.

Every :class:`~streamjob.exceptions.StreamJobError` a statement raises leaves with a
position in the script: the offending property or value, else the statement's object
name, else the statement's start.
"""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog
from ..exceptions import StreamJobError, ValidationError
from ..grammar import statements as st
from .databases import DatabaseStatements
from ..home import Home
from .describe import DescribeStatements
from .explain import ExplainStatements
from .functions import FunctionStatements
from .insert import InsertStatements
from .jobs import JobStatements
from .maintenance import MaintenanceStatements
from .objects import ObjectStatements
from .result import Result
from .savepoints import SavepointStatements
from .session import SessionStatements
from .shadow import ShadowStatements
from .topics import TopicStatements
from .upgrade import UpgradeStatements

__all__ = ["Executor", "Result"]


class Executor(ObjectStatements, JobStatements, DescribeStatements, SessionStatements,
               DatabaseStatements, TopicStatements,
               InsertStatements, ExplainStatements, FunctionStatements, SavepointStatements,
               UpgradeStatements,
               ShadowStatements, MaintenanceStatements):
    """Runs statements for one client session.

    Args:
        catalog: the catalog (a scratch copy for a dry run).
        home: the streamjob home.
        manager: the in-process job manager, or None for a catalog-only client.
        session_props: this session's ``SET`` values (job property defaults; captured
            by each job created in this session).
        dry_run: check START/STOP/DROP instead of running them (see the module doc).
        spark: ``() -> SparkSession`` of this process (default: the manager's); when
            there is one, CREATE and ALTER STREAMJOB also ask Spark's streaming analysis
            (:mod:`streamjob.spark.analysis`), so a query Spark would refuse at
            START is refused here, at its select.
        role: the session principal's :class:`~streamjob.catalog.records.Role` (default
            ADMIN, a local client); an OPERATOR is confined to what the admin allowed
            (DESIGN §9, docs/security.md).
        plans: the :class:`~streamjob.planner.memo.PlanMemo` of the script this
            statement belongs to (its check and its execution share plans); None: each
            statement plans afresh.
        principal: who runs the statements (``local:USER``, ``token:NAME``), recorded as
            the owner of the functions they register.
        jars: the session's ADD JAR list (shared with the client session, which keeps
            it between statements); None: a fresh one.
    """

    def __init__(self, catalog: Catalog, home: Home, manager=None,
                 session_props: dict[str, str] | None = None, dry_run: bool = False,
                 spark=None, database: str = st.DEFAULT_DATABASE, role=None,
                 plans=None, principal: str | None = None,
                 jars: list[str] | None = None) -> None:
        from ..catalog.records import Role

        self.catalog = catalog
        self.principal = principal
        self.role = Role(role) if role is not None else Role.ADMIN  # DESIGN §9
        self.home = home
        self.manager = manager
        self.spark = spark if spark is not None else getattr(manager, "spark", None)
        self.dry_run = dry_run
        self.database = database
        self.session_props = session_props if session_props is not None else {}
        self.plans = plans
        #: the jars ADD JAR added in this session (real paths inside the admin's jar
        #: directories), where CREATE FUNCTION ... AS 'com.x.Udf' finds its class
        self.jars = jars if jars is not None else []

    # The executor's state changes here only (a class's state lives in one file): the
    # statement modules call these.

    def use_database(self, db: str) -> None:
        """Make ``db`` the database of unqualified names (USE; DROP DATABASE of the
        current one falls back to ``default``)."""
        self.database = db

    def set_session_props(self, checked: dict[str, str]) -> None:
        """SET: ``checked`` (validated job properties) become session defaults."""
        self.session_props.update(checked)

    def add_jars(self, paths: list[str]) -> None:
        """ADD JAR: ``paths`` (checked real paths) join the session's jars."""
        self.jars.extend(p for p in paths if p not in self.jars)

    def reset_session_props(self, key: str | None = None) -> None:
        """RESET: forget the session's value of ``key``, or every value (None)."""
        if key is None:
            self.session_props.clear()
        else:
            self.session_props.pop(key, None)

    def execute(self, stmt: st.Statement) -> Result:
        """Execute one statement.

        Raises:
            StreamJobError: any error a user can act on, located in the script (the
                statement changed nothing).
        """
        handler = HANDLERS.get(type(stmt))
        try:
            if handler is None:
                raise ValidationError(f"{type(stmt).__name__} is not supported")
            return handler(self, stmt)
        except StreamJobError as exc:
            locate(exc, stmt)
            raise


#: Statement type -> the executor method that runs it: every statement the grammar makes
#: has one entry (tests/unit/test_executor.py checks it).
HANDLERS = {
    st.CreateStream: Executor._do_CreateStream,
    st.CreateTable: Executor._do_CreateTable,
    st.DropStream: Executor._do_DropStream,
    st.DropTable: Executor._do_DropTable,
    st.ShowStreams: Executor._do_ShowStreams,
    st.ShowTables: Executor._do_ShowTables,
    st.Describe: Executor._do_Describe,
    st.CreateStreamJob: Executor._do_CreateStreamJob,
    st.AlterStreamJob: Executor._do_AlterStreamJob,
    st.StartStreamJob: Executor._do_StartStreamJob,
    st.StopStreamJob: Executor._do_StopStreamJob,
    st.DropStreamJob: Executor._do_DropStreamJob,
    st.ShowStreamJobs: Executor._do_ShowStreamJobs,
    st.DescribeStreamJob: Executor._do_DescribeStreamJob,
    st.ShowCheckpoints: Executor._do_ShowCheckpoints,
    st.SetProperty: Executor._do_SetProperty,
    st.ResetProperty: Executor._do_ResetProperty,
    st.ShowCreate: Executor._do_ShowCreate,
    st.CreateDatabase: Executor._do_CreateDatabase,
    st.UseDatabase: Executor._do_UseDatabase,
    st.ShowDatabases: Executor._do_ShowDatabases,
    st.DropDatabase: Executor._do_DropDatabase,
    st.ShowTopics: Executor._do_ShowTopics,
    st.PrintTopic: Executor._do_PrintTopic,
    # Slipstream forms (issue 18)
    st.InsertInto: Executor._do_InsertInto,
    # EXPLAIN (issue 18)
    st.Explain: Executor._do_Explain,
    # user functions (issue 31)
    st.CreateFunction: Executor._do_CreateFunction,
    st.DropFunction: Executor._do_DropFunction,
    st.ShowFunctions: Executor._do_ShowFunctions,
    st.AddJar: Executor._do_AddJar,
    st.DescribeFunction: Executor._do_DescribeFunction,
    # savepoints (issue 30)
    st.CreateSavepoint: Executor._do_CreateSavepoint,
    st.ShowSavepoints: Executor._do_ShowSavepoints,
    st.DropSavepoint: Executor._do_DropSavepoint,
    # query upgrades (issue 30)
    st.ReplaceStreamJobQuery: Executor._do_ReplaceStreamJobQuery,
    # shadow runs (issue 30 point 4)
    st.AlterShadow: Executor._do_AlterShadow,
    st.ShowShadow: Executor._do_ShowShadow,
    st.PromoteShadow: Executor._do_PromoteShadow,
    st.DiscardShadow: Executor._do_DiscardShadow,
    # Delta table maintenance (issue 32)
    st.OptimizeTable: Executor._do_OptimizeTable,
    st.VacuumTable: Executor._do_VacuumTable,
}


def locate(exc: StreamJobError, stmt: st.Statement) -> None:
    """Give ``exc`` a position in ``stmt`` if it has none: the property it names
    (``exc.key``; its value when ``exc.bad_value``), else the statement's object name."""
    if exc.line is not None:
        return
    key: Any = getattr(exc, "key", None)
    pos = None
    if key is not None:
        kind = "value" if getattr(exc, "bad_value", False) else "key"
        pos = stmt.locations.get(f"{kind}:{key}") or stmt.locations.get(f"key:{key}")
    pos = pos or stmt.where("name")
    exc.locate(pos.line, pos.column)
