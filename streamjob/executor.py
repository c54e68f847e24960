"""Executes parsed StreamSQL statements against the catalog (and a job manager, if hosted).

Statements change the catalog, the control plane (DESIGN §8). When this process hosts
a :class:`~streamjob.manager.JobManager` (``streamjob run``), START and STOP also start
and stop the job here; otherwise they only set the job's desired state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Sequence

from . import properties as jp
from .catalog import Catalog
from .checkpoint import store
from .connectors import spec as cspec
from .exceptions import JobError, ObjectExistsError, ValidationError
from .grammar import statements as st
from .home import Home, validate_name
from .types import normalize_type

log = logging.getLogger(__name__)


@dataclass
class Result:
    """What a statement returns: a message, and/or a table of ``rows`` under ``columns``."""

    message: str | None = None
    columns: Sequence[str] = ()
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    title: str | None = None


class Executor:
    """Runs statements for one client session.

    Args:
        catalog: the catalog.
        home: the streamjob home.
        manager: the in-process job manager, or None for a catalog-only client.
        session_props: this session's ``SET`` values (job property defaults).
    """

    def __init__(self, catalog: Catalog, home: Home, manager=None,
                 session_props: dict[str, str] | None = None) -> None:
        self.catalog = catalog
        self.home = home
        self.manager = manager
        self.session_props = session_props if session_props is not None else {}
        if manager is not None:
            manager.session_props = self.session_props

    def execute(self, stmt: st.Statement) -> Result:
        """Execute one statement.

        Raises:
            StreamJobError: any error a user can act on (the statement changed nothing).
        """
        handler = getattr(self, f"_do_{type(stmt).__name__}", None)
        if handler is None:
            raise ValidationError(f"{type(stmt).__name__} is not supported yet",
                                  stmt.position.line, stmt.position.column)
        try:
            return handler(stmt)
        except ValidationError as exc:
            if exc.line is None:
                exc.line, exc.column = stmt.position.line, stmt.position.column
                exc.args = (str(exc),)
            raise

    # -- objects -------------------------------------------------------------------

    def _names(self, name: st.QualifiedName, what: str) -> tuple[str, str]:
        db, obj = name.resolve()
        return validate_name(db, "database name"), validate_name(obj, f"{what} name")

    def _do_CreateStream(self, s: st.CreateStream) -> Result:
        db, name = self._names(s.name, "stream")
        if s.as_select is not None:
            raise ValidationError("CREATE STREAM ... AS SELECT (derived streams) is not supported yet")
        if not s.columns:
            raise ValidationError(f"stream {db}.{name} declares no columns")
        row_format = _row_format(s.row_format)
        cspec.source_spec(name, st.props(s.properties), row_format)  # validates properties
        created = self.catalog.create_stream(
            db, name, _columns(s.columns), st.props(s.properties), row_format,
            if_not_exists=s.if_not_exists)
        return Result(f"stream {db}.{name} {'created' if created else 'exists'}")

    def _do_CreateTable(self, s: st.CreateTable) -> Result:
        db, name = self._names(s.name, "table")
        if not s.columns:
            raise ValidationError(f"table {db}.{name} declares no columns")
        props = st.props(s.properties)
        spec = cspec.table_spec(name, props, s.stored_as, s.location, self.home.table_location(db, name))
        if isinstance(spec, cspec.SqlTableSpec):
            declared = {c.name.lower() for c in s.columns}
            missing = [k for k in spec.primary_key if k not in declared]
            if missing:
                raise ValidationError(f"primary key column '{missing[0]}' is not a column of {db}.{name}")
        created = self.catalog.create_table(
            db, name, _columns(s.columns), props, _row_format(s.row_format),
            stored_as=s.stored_as, location=s.location, if_not_exists=s.if_not_exists)
        return Result(f"table {db}.{name} {'created' if created else 'exists'}")

    def _do_DropStream(self, s: st.DropStream) -> Result:
        db, name = self._names(s.name, "stream")
        dropped = self.catalog.drop_stream(db, name, if_exists=s.if_exists)
        return Result(f"stream {db}.{name} {'dropped' if dropped else 'does not exist'}")

    def _do_DropTable(self, s: st.DropTable) -> Result:
        db, name = self._names(s.name, "table")
        dropped = self.catalog.drop_table(db, name, if_exists=s.if_exists)
        return Result(f"table {db}.{name} {'dropped' if dropped else 'does not exist'}")

    def _do_ShowStreams(self, s: st.ShowStreams) -> Result:
        rows = [(x.database, x.name, _source_kind(x.properties)) for x in self.catalog.list_streams()]
        return Result(columns=("database", "stream", "source"), rows=rows, title="streams")

    def _do_ShowTables(self, s: st.ShowTables) -> Result:
        rows = [(x.database, x.name, _sink_kind(x)) for x in self.catalog.list_tables()]
        return Result(columns=("database", "table", "connector"), rows=rows, title="tables")

    # -- jobs ----------------------------------------------------------------------

    def _do_CreateStreamJob(self, s: st.CreateStreamJob) -> Result:
        from .planner.plan import plan_job

        db, name = self._names(s.name, "job")
        existing = self.catalog.get_job(db, name)
        if existing is not None:
            if s.if_not_exists:
                return Result(f"streamjob {db}.{name} exists")
            raise ObjectExistsError(f"streamjob {db}.{name} already exists")
        props = jp.validate(st.props(s.properties))
        plan = plan_job(self.catalog, self.home, db, name, s.query, props, self.session_props,
                        s.query_position)
        created = self.catalog.create_job(db, name, s.query, props, plan.dependencies,
                                          if_not_exists=s.if_not_exists)
        return Result(f"streamjob {db}.{name} {'created' if created else 'exists'} "
                      f"({plan.guarantee}, output mode {plan.output_mode})")

    def _do_StartStreamJob(self, s: st.StartStreamJob) -> Result:
        db, name = self._names(s.name, "job")
        if s.from_checkpoint is not None:
            raise JobError("START STREAMJOB ... FROM CHECKPOINT is not supported in this version")
        job = self.catalog.require_job(db, name)
        job = self.catalog.update_job(db, name, desired_state="RUNNING", uid=job.uid) or job
        if self.manager is None:
            return Result(f"streamjob {db}.{name} will start when a job manager runs it")
        self.manager.start(job)
        return Result(f"streamjob {db}.{name} started")

    def _do_StopStreamJob(self, s: st.StopStreamJob) -> Result:
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        self.catalog.update_job(db, name, desired_state="STOPPED", uid=job.uid)
        if self.manager is not None:
            self.manager.stop(job.uid)
        self.catalog.update_job(db, name, status="STOPPED", uid=job.uid)
        return Result(f"streamjob {db}.{name} stopped")

    def _do_DropStreamJob(self, s: st.DropStreamJob) -> Result:
        from .connectors.sql_sink import SqlSink

        db, name = self._names(s.name, "job")
        job = self.catalog.get_job(db, name)
        if job is None:
            if s.if_exists:
                return Result(f"streamjob {db}.{name} does not exist")
            self.catalog.require_job(db, name)
        if self.manager is not None:
            self.manager.stop(job.uid)
        store.purge(self.home.checkpoint_dir(db, name), self.home.checkpoint_root)
        for kind, tdb, tname, role in job.dependencies:
            if role == "sink":
                table = self.catalog.get_table(tdb, tname)
                spec = table and cspec.table_spec(table.name, table.properties, table.stored_as,
                                                  table.location, "")
                if isinstance(spec, cspec.SqlTableSpec):
                    SqlSink(spec, table.columns, job.uid, True, False).purge_markers()
        self.catalog.drop_job(db, name, if_exists=True)
        return Result(f"streamjob {db}.{name} dropped; its checkpoints were purged")

    def _do_ShowStreamJobs(self, s: st.ShowStreamJobs) -> Result:
        rows = []
        for job in self.catalog.list_jobs():
            props = jp.values(job.properties, self.session_props)
            last = self.catalog.latest_checkpoint(job.uid)
            rows.append((
                job.qualified_name, job.status, job.desired_state, jp.guarantee(props),
                last.checkpoint_id if last else None,
                last.ended_at.isoformat(timespec="seconds") if last and last.ended_at else None,
                last.input_rows if last else None,
                job.attempts, job.last_error,
            ))
        return Result(columns=("job", "status", "desired", "guarantee", "last checkpoint",
                               "checkpoint time", "rows in", "failures", "last error"),
                      rows=rows, title="streamjobs")

    def _do_ShowCheckpoints(self, s: st.ShowCheckpoints) -> Result:
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        rows = [(c.checkpoint_id, c.status, c.started_at.isoformat(timespec="seconds"),
                 c.duration_ms, c.input_rows, c.state_rows, c.source_offsets)
                for c in self.catalog.list_checkpoints(job.uid)]
        return Result(columns=("checkpoint", "status", "started", "duration ms", "rows in",
                               "state rows", "source offsets"), rows=rows,
                      title=f"checkpoints of {db}.{name}")

    # -- session -------------------------------------------------------------------

    def _do_SetProperty(self, s: st.SetProperty) -> Result:
        if s.key is None:
            rows = [(k, str(v.value), v.origin)
                    for k, v in jp.effective({}, self.session_props).items()]
            return Result(columns=("property", "value", "origin"), rows=rows)
        prop = jp.lookup(s.key)
        prop.parse(s.value or "")
        self.session_props[prop.name] = (s.value or "").strip()
        return Result(f"{prop.name}={self.session_props[prop.name]}")

    def _do_ResetProperty(self, s: st.ResetProperty) -> Result:
        if s.key is None:
            self.session_props.clear()
            return Result("session properties reset")
        self.session_props.pop(jp.lookup(s.key).name, None)
        return Result(f"{jp.lookup(s.key).name} reset")


def _columns(cols: Sequence[st.Column]) -> list[dict[str, str]]:
    seen = set()
    out = []
    for c in cols:
        if c.name.lower() in seen:
            raise ValidationError(f"column '{c.name}' is declared twice")
        seen.add(c.name.lower())
        out.append({"name": c.name.lower(), "type": normalize_type(c.type)})
    return out


def _row_format(rf: st.RowFormat | None) -> dict | None:
    if rf is None:
        return None
    return {"delimited": True, "fields_terminated_by": rf.fields_terminated_by,
            "lines_terminated_by": rf.lines_terminated_by}


def _source_kind(props: dict) -> str:
    return {k.lower(): v for k, v in props.items()}.get("source", "kafka")


def _sink_kind(table) -> str:
    p = {k.lower(): v for k, v in table.properties.items()}
    return p.get("connector") or f"files ({(table.stored_as or 'parquet').lower()})"
