"""Catalog methods for jobs (with their dependencies) and their runs.

:class:`JobsMixin` creates, reads, lists, updates and drops jobs, and records the runs
of a job by its ``uid``. A job's dependencies are checked in the transaction that
creates it; run writes for a uid the catalog no longer holds are ignored. Creating,
updating and dropping a job notify catalog watchers (PostgreSQL NOTIFY ``job`` in the
same transaction); counters, runs and progress (:meth:`JobsMixin.update_progress`) do
not, being too frequent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from streamjob.sensitive import mask_text
from streamjob.catalog.engine import CatalogEngine, Conflict, check_choice, now_utc, qualified
from streamjob.catalog.models import (
    JobVersion,
    Checkpoint,
    Function,
    Job,
    JobDependency,
    ProgressSample,
    Run,
    Stream,
    Table,
    from_json_text,
    to_json_text,
)
from streamjob.catalog.records import (
    DEPENDENCY_KINDS,
    DEPENDENCY_ROLES,
    DESIRED_STATES,
    JOB_STATUSES,
    RUN_STATUSES,
    Dependency,
    JobInfo,
    RunInfo,
)
from streamjob.exceptions import ObjectExistsError, ObjectNotFoundError
from streamjob.catalog.records import DesiredState, JobStatus, RunStatus

__all__ = ["JobsMixin"]


class _UnchangedType:
    def __repr__(self) -> str:
        return "<unchanged>"


_UNCHANGED: Any = _UnchangedType()


class JobsMixin(CatalogEngine):
    """Jobs (``create_job`` ... ``drop_job``) and runs (``start_run``, ``end_run``,
    ``list_runs``)."""

    def create_job(
        self,
        database: str,
        name: str,
        query: str,
        properties: Mapping[str, Any],
        dependencies: Iterable[Sequence[str]],
        if_not_exists: bool = False,
        check_dependencies: bool = True,
        session_properties: Mapping[str, Any] | None = None,
        principal: str | None = None,
    ) -> bool:
        """Register a job (desired state STOPPED, status CREATED, a fresh uid).

        ``dependencies`` are ``(kind, database, name, role)`` tuples, kind and role of
        :data:`DEPENDENCY_KINDS` and :data:`DEPENDENCY_ROLES`; duplicates are dropped.
        ``session_properties`` are the session's ``SET`` values when CREATE STREAMJOB ran
        (JSON-serializable; stored as a copy, None meaning ``{}``), kept with the job.
        The query becomes the job's version 1 (revision 0011), made by ``principal``.

        Returns True if created, False if the job existed and ``if_not_exists``. Raises
        :class:`ObjectExistsError` if it exists (without ``if_not_exists``);
        :class:`ObjectNotFoundError` if a dependency is not in the catalog (checked in the
        same transaction, so a concurrent DROP cannot slip in between; pass
        ``check_dependencies=False`` to skip); ValueError for a bad kind or role.
        """
        deps: list[Dependency] = []
        for dep in dependencies:
            kind, dep_db, dep_name, role = dep
            check_choice("dependency kind", kind, DEPENDENCY_KINDS)
            check_choice("dependency role", role, DEPENDENCY_ROLES)
            item = (kind, dep_db, dep_name, role)
            if item not in deps:
                deps.append(item)
        qname = qualified(database, name)
        try:
            with self._tx(write=True) as session:
                self._lock_names(session, [(d[1], d[2]) for d in deps])
                if session.scalar(
                    select(Job.id).where(Job.database == database, Job.name == name)
                ) is not None:
                    if if_not_exists:
                        return False
                    raise ObjectExistsError(f"streamjob {qname} already exists")
                if check_dependencies:
                    for kind, dep_db, dep_name, _role in deps:
                        model = {"stream": Stream, "table": Table, "function": Function}[kind]
                        if session.scalar(select(model.id).where(
                                model.database == dep_db, model.name == dep_name)) is None:
                            raise ObjectNotFoundError(
                                f"{kind} {qualified(dep_db, dep_name)} does not exist"
                            )
                now = now_utc()
                job = Job(uid=uuid.uuid4().hex, database=database, name=name, query=query,
                          properties=dict(properties),
                          session_properties=dict(session_properties or {}),
                          desired_state=DesiredState.STOPPED, status=JobStatus.CREATED,
                          attempts=0, last_error=None, created_at=now, updated_at=now)
                session.add(job)
                session.flush()
                session.add_all(
                    JobDependency(job_id=job.id, kind=k, database=d, name=n, role=r)
                    for k, d, n, r in deps
                )
                session.add(JobVersion(job_id=job.id, version=1, query=query,
                                       properties=dict(properties), created_at=now,
                                       principal=principal))
                self._notify(session, "job")
        except Conflict:
            if if_not_exists:
                return False
            raise ObjectExistsError(f"streamjob {qname} already exists") from None
        return True

    def get_job(self, database: str, name: str) -> JobInfo | None:
        """The job ``database.name`` (with its dependencies), or None."""
        with self._tx() as session:
            job = session.scalars(select(Job).where(Job.database == database, Job.name == name)).first()
            return self._job_info(session, job) if job is not None else None

    def get_job_by_uid(self, job_uid: str) -> JobInfo | None:
        """The job whose current incarnation has this uid, or None (dropped)."""
        with self._tx() as session:
            job = session.scalars(select(Job).where(Job.uid == job_uid)).first()
            return self._job_info(session, job) if job is not None else None

    def require_job(self, database: str, name: str) -> JobInfo:
        """Like :meth:`get_job`, but raises :class:`ObjectNotFoundError`
        (``streamjob default.x does not exist``) if missing."""
        job = self.get_job(database, name)
        if job is None:
            raise ObjectNotFoundError(f"streamjob {qualified(database, name)} does not exist")
        return job

    def list_jobs(self, database: str | None = None) -> list[JobInfo]:
        """All jobs (of ``database`` if given), sorted by database then name."""
        with self._tx() as session:
            stmt = select(Job).order_by(Job.database, Job.name)
            if database is not None:
                stmt = stmt.where(Job.database == database)
            jobs = list(session.scalars(stmt))
            deps: dict[int, list[Dependency]] = {}
            dep_stmt = select(JobDependency).order_by(JobDependency.id)
            if database is not None:
                dep_stmt = dep_stmt.join(Job, Job.id == JobDependency.job_id).where(Job.database == database)
            for dep in session.scalars(dep_stmt):
                deps.setdefault(dep.job_id, []).append((dep.kind, dep.database, dep.name, dep.role))
            return [self._job_info(session, job, deps.get(job.id, [])) for job in jobs]

    def update_job(
        self,
        database: str,
        name: str,
        *,
        status: str | None = None,
        desired_state: str | None = None,
        last_error: str | None = _UNCHANGED,
        attempts: int | None = None,
        properties: Mapping[str, Any] | None = None,
        uid: str | None = None,
        owner: str | None = _UNCHANGED,
    ) -> JobInfo | None:
        """Change a job's fields (those given) and set ``updated_at``; returns the job.

        ``last_error`` and ``owner`` (the server id of the job manager running the job)
        are left unchanged unless given (None clears them); ``properties`` replaces the
        whole dict. Notifies catalog watchers (PostgreSQL NOTIFY ``job``). With ``uid``, the update applies only if the job still
        has that uid, and is silently ignored otherwise (returns None) — for writers that
        may race with DROP and re-CREATE. Raises :class:`ObjectNotFoundError` if the job
        does not exist (without ``uid``), ValueError for an unknown status or state.
        """
        if status is not None:
            check_choice("job status", status, JOB_STATUSES)
        if desired_state is not None:
            check_choice("desired state", desired_state, DESIRED_STATES)
        with self._tx(write=True) as session:
            job = session.scalars(
                select(Job).where(Job.database == database, Job.name == name).with_for_update()
            ).first()
            if job is None or (uid is not None and job.uid != uid):
                if uid is not None:
                    return None
                raise ObjectNotFoundError(f"streamjob {qualified(database, name)} does not exist")
            if status is not None:
                job.status = status
            if desired_state is not None:
                job.desired_state = desired_state
            if last_error is not _UNCHANGED:
                job.last_error = mask_text(last_error)  # errors carry URLs (sensitive.py)
            if attempts is not None:
                job.attempts = attempts
            if properties is not None:
                job.properties = dict(properties)
            if owner is not _UNCHANGED:
                job.owner = owner
            job.updated_at = now_utc()
            session.flush()
            self._notify(session, "job")
            return self._job_info(session, job)

    def count_expired_checkpoint(self, job_uid: str) -> int | None:
        """Add one to the job's count of expired checkpoints (DESIGN §4); returns the new
        count, or None if no job has this uid (dropped meanwhile)."""
        with self._tx(write=True) as session:
            job = session.scalars(select(Job).where(Job.uid == job_uid).with_for_update()).first()
            if job is None:
                return None
            job.expired_checkpoints = int(job.expired_checkpoints or 0) + 1
            return job.expired_checkpoints

    def add_malformed_counts(self, job_uid: str, counts: Mapping[str, int]) -> None:
        """Add ``counts`` (malformed source records skipped, per stream name) to the job's
        totals (DESIGN §7: counted, never dropped silently); DESCRIBE STREAMJOB shows them.

        One read-modify-write transaction with the job row locked (SQLite ``BEGIN
        IMMEDIATE``; PostgreSQL ``SELECT ... FOR UPDATE``), so concurrent writers never
        lose an increment. Zero counts and an empty mapping change nothing; a uid the
        catalog no longer holds (the job was dropped) is ignored. Raises ValueError for a
        count that is not a non-negative int, or a stream name that is not a non-empty str.
        """
        adds: dict[str, int] = {}
        for stream, count in dict(counts).items():
            if not isinstance(stream, str) or not stream:
                raise ValueError(f"invalid stream name {stream!r} in malformed counts")
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValueError(f"invalid malformed count {count!r} for stream {stream!r}; "
                                 "expected an int >= 0")
            if count:
                adds[stream] = count
        def add(job: Job) -> None:
            totals = _counts(job.malformed_counts)
            for stream, count in adds.items():
                totals[stream] = totals.get(stream, 0) + count
            job.malformed_counts = to_json_text(totals)

        if adds:
            self._update_locked(job_uid, add)

    def add_missing_columns(self, job_uid: str, missing: Mapping[str, Sequence[str]]) -> None:
        """Count one more micro-batch, for each ``{stream: [column, ...]}`` in ``missing``,
        in which no record of the stream carried a value for the declared column (absent
        or NULL in every record; issue 13: a misspelt JSON key is counted, never silent).
        DESCRIBE STREAMJOB shows the totals (``JobInfo.missing_columns``).

        One read-modify-write transaction with the job row locked, as
        :meth:`add_malformed_counts`; an empty mapping changes nothing and a uid the
        catalog no longer holds is ignored. Raises ValueError for a stream or column name
        that is not a non-empty str.
        """
        adds = {}
        for stream, columns in dict(missing).items():
            names = [columns] if isinstance(columns, str) else list(columns)
            if not isinstance(stream, str) or not stream or not all(
                    isinstance(c, str) and c for c in names):
                raise ValueError(f"invalid stream or column names {stream!r}: {columns!r}")
            if names:
                adds[stream] = names
        def add(job: Job) -> None:
            totals = _gaps(job.missing_columns)
            for stream, names in adds.items():
                per = totals.setdefault(stream, {})
                for name in names:
                    per[name] = per.get(name, 0) + 1
            job.missing_columns = to_json_text(totals)

        if adds:
            self._update_locked(job_uid, add)

    def _update_locked(self, job_uid: str, change) -> None:
        """``change(job)`` on the job row of ``job_uid`` in one read-modify-write
        transaction with the row locked (SQLite ``BEGIN IMMEDIATE``; PostgreSQL ``SELECT
        ... FOR UPDATE``), so concurrent writers never lose an update; a uid the catalog
        no longer holds is ignored."""
        with self._tx(write=True) as session:
            job = session.scalars(select(Job).where(Job.uid == job_uid).with_for_update()).first()
            if job is not None:
                change(job)

    def update_progress(self, job_uid: str, progress: Mapping[str, Any]) -> None:
        """Replace the job's latest progress (``JobInfo.progress``) with ``progress``.

        ``progress`` is a JSON-serializable mapping; the job manager writes ``batch_id``,
        ``input_rows_per_s``, ``processed_rows_per_s``, ``lag_records``,
        ``last_checkpoint_at`` and ``updated_at`` (see :class:`JobInfo`), at most once a
        second per job. An empty mapping clears it. Neither ``updated_at`` of the job nor
        catalog watchers are touched (progress is too frequent to notify). A uid the
        catalog no longer holds (dropped) is ignored. Raises ValueError if ``progress``
        is not a mapping or not JSON-serializable.
        """
        if not isinstance(progress, Mapping):
            raise ValueError(f"job progress must be a mapping, got {type(progress).__name__}")
        try:
            value = to_json_text(dict(progress))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"job progress is not JSON-serializable: {exc}") from None
        with self._tx(write=True) as session:
            session.execute(update(Job).where(Job.uid == job_uid).values(progress=value))

    def drop_job(self, database: str, name: str, if_exists: bool = False,
                 uid: str | None = None) -> JobInfo | None:
        """Delete a job with its dependencies, runs and checkpoints (one transaction);
        with ``uid`` only that incarnation (one created again meanwhile stays: None).

        Returns the deleted job, or None if it did not exist and ``if_exists``; raises
        :class:`ObjectNotFoundError` if it did not exist otherwise. (Stopping the job and
        purging its checkpoint files is the manager's work.)
        """
        with self._tx(write=True) as session:
            job = session.scalars(
                select(Job).where(Job.database == database, Job.name == name).with_for_update()
            ).first()
            if job is None or (uid is not None and job.uid != uid):
                if if_exists or job is not None:
                    return None
                raise ObjectNotFoundError(f"streamjob {qualified(database, name)} does not exist")
            info = self._job_info(session, job)
            job_id = job.id
            for model in (Checkpoint, Run, JobDependency, ProgressSample, JobVersion):
                session.execute(delete(model).where(model.job_id == job_id))
            session.execute(delete(Job).where(Job.id == job_id))
            self._notify(session, "job")
            return info

    @staticmethod
    def _job_info(session: Session, job: Job, deps: Sequence[Dependency] | None = None) -> JobInfo:
        if deps is None:
            deps = [
                (d.kind, d.database, d.name, d.role)
                for d in session.scalars(
                    select(JobDependency).where(JobDependency.job_id == job.id).order_by(JobDependency.id)
                )
            ]
        return JobInfo(
            uid=job.uid,
            database=job.database,
            name=job.name,
            query=job.query,
            properties=dict(job.properties or {}),
            desired_state=job.desired_state,
            status=job.status,
            attempts=job.attempts,
            last_error=job.last_error,
            created_at=job.created_at,
            updated_at=job.updated_at,
            dependencies=tuple(deps),
            session_properties=dict(job.session_properties or {}),
            expired_checkpoints=int(job.expired_checkpoints or 0),
            malformed_counts=_counts(job.malformed_counts),
            owner=job.owner,
            progress=from_json_text(job.progress, {}),
            missing_columns=_gaps(job.missing_columns),
            pending_switch=from_json_text(job.pending_switch, {}) or None,
        )

    # -------------------------------------------------------------------- runs

    def start_run(self, job_uid: str, attempt: int) -> int | None:
        """Record the start of a run (status RUNNING, started now); returns the run id,
        or None if no job has this uid (dropped: ignored)."""
        with self._tx(write=True) as session:
            job_id = self._job_id_for_uid(session, job_uid)
            if job_id is None:
                return None
            run = Run(job_id=job_id, attempt=attempt, started_at=now_utc(), status=RunStatus.RUNNING)
            session.add(run)
            session.flush()
            return run.id

    def end_run(self, run_id: int | None, status: str, cause: str | None = None) -> None:
        """Record the end of a run: ``status`` STOPPED, FAILED or FINISHED, ended now,
        with ``cause`` (the error or reason). A run that is unknown (its job was dropped)
        or already ended is left alone. ValueError for another status."""
        check_choice("run end status", status, tuple(s for s in RUN_STATUSES if s != RunStatus.RUNNING))
        if run_id is None:
            return
        with self._tx(write=True) as session:
            session.execute(
                update(Run)
                .where(Run.id == run_id, Run.ended_at.is_(None))
                .values(status=status, cause=mask_text(cause), ended_at=now_utc())
            )

    def claim_job(self, job_uid: str, owner: str, live_within_ms: int,
                  presumed_dead: Sequence[str] = ()) -> str | None:
        """Make ``owner`` (a registered job manager or hosting process) the job's owner,
        atomically, unless another owner is alive (registered, heartbeat younger than
        ``live_within_ms``). Returns None when claimed (or already ours), else the live
        owner's id. Two processes starting one job at once: exactly one claims it.
        ``presumed_dead``: owner ids the caller knows are dead (a process of this host
        that no longer exists), whatever their heartbeat says.
        An unknown uid returns None (the caller's start then finds the job gone)."""
        from datetime import timedelta

        from streamjob.catalog.models import Server

        with self._tx(write=True) as session:
            job = session.scalars(select(Job).where(Job.uid == job_uid).with_for_update()).first()
            if job is None:
                return None
            if job.owner and job.owner != owner and job.owner not in presumed_dead:
                beat = session.scalar(select(Server.heartbeat_at)
                                      .where(Server.server_id == job.owner))
                if beat is not None and _aware(beat) > self._db_now(session) - timedelta(
                        milliseconds=live_within_ms):
                    return job.owner
            job.owner = owner
            return None

    def release_jobs(self, owner: str) -> int:
        """Clear ``owner`` from every job it owns; returns how many. A job manager that
        lost its lease (fenced: its queries stopped, nothing written) calls it once the
        catalog answers again, so the new lease holder need not wait for it to die.
        Notifies catalog watchers (PostgreSQL NOTIFY ``job``) when a job changed."""
        with self._tx(write=True) as session:
            result = session.execute(update(Job).where(Job.owner == owner).values(owner=None))
            count = int(result.rowcount or 0)
            if count:
                self._notify(session, "job")
            return count

    def end_open_runs(self, job_uid: str, status: str = JobStatus.FAILED, cause: str | None = None) -> int:
        """End every run of the job that has not ended (those of a job manager that died
        without ending them, e.g. SIGKILL) with ``status`` and ``cause``; returns how many.
        A job manager calls it before it starts a job it takes over. ValueError for a
        status other than STOPPED, FAILED or FINISHED; 0 for an unknown uid."""
        check_choice("run end status", status, tuple(s for s in RUN_STATUSES if s != RunStatus.RUNNING))
        with self._tx(write=True) as session:
            job_id = self._job_id_for_uid(session, job_uid)
            if job_id is None:
                return 0
            result = session.execute(
                update(Run)
                .where(Run.job_id == job_id, Run.ended_at.is_(None))
                .values(status=status, cause=mask_text(cause), ended_at=now_utc())
            )
            return int(result.rowcount or 0)

    def list_runs(self, job_uid: str) -> list[RunInfo]:
        """The runs of the job with this uid, oldest first ([] if unknown)."""
        with self._tx() as session:
            rows = session.scalars(
                select(Run).join(Job, Job.id == Run.job_id).where(Job.uid == job_uid).order_by(Run.id)
            )
            return [
                RunInfo(
                    id=r.id,
                    job_uid=job_uid,
                    attempt=r.attempt,
                    started_at=r.started_at,
                    ended_at=r.ended_at,
                    status=r.status,
                    cause=r.cause,
                )
                for r in rows
            ]


def _aware(value):
    """A datetime read back from SQLite is naive; the catalog stores UTC."""
    from datetime import timezone

    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _counts(text_value: str | None) -> dict[str, int]:
    """``jobs.malformed_counts`` as a dict (entries that are not ``str -> int`` dropped)."""
    return {str(k): int(v) for k, v in from_json_text(text_value, {}).items()
            if isinstance(v, int) and not isinstance(v, bool)}


def _gaps(text_value: str | None) -> dict[str, dict[str, int]]:
    """``jobs.missing_columns`` as ``{stream: {column: batches}}`` (malformed entries
    dropped)."""
    return {str(k): {str(c): int(n) for c, n in v.items()
                     if isinstance(n, int) and not isinstance(n, bool)}
            for k, v in from_json_text(text_value, {}).items() if isinstance(v, dict)}
