"""Catalog methods for the versions of a job's query (revision 0011; docs/upgrades.md):
``ALTER STREAMJOB j AS (...)`` and ``CREATE OR REPLACE STREAMJOB`` replace a job's query
and add a version; ``DESCRIBE STREAMJOB`` and the HTTP API list them.

One row per version in ``job_versions``, unique by job and version number. Version 1 is
written by :meth:`~streamjob.catalog.jobs.JobsMixin.create_job` (or, for jobs created
before revision 0011, by the migration, without a principal). The rows go with their job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
import json
from typing import Any

from sqlalchemy import delete, func, select

from streamjob.catalog.engine import CatalogEngine, check_choice, now_utc
from streamjob.catalog.models import Job, JobDependency, JobVersion, Table, from_json_text
from streamjob.catalog.records import (DEPENDENCY_KINDS, DEPENDENCY_ROLES, DESIRED_STATES,
                                       DesiredState, JobInfo, JobVersionInfo)
from streamjob.exceptions import ObjectNotFoundError

__all__ = ["VersionsMixin"]


class VersionsMixin(CatalogEngine):
    """``replace_job_query``, ``begin_switch``, ``resume_switch`` and
    ``list_job_versions``."""

    def replace_job_query(self, job_uid: str, query: str, properties: Mapping[str, Any],
                          dependencies: Iterable[Sequence[str]], *, principal: str | None,
                          change: str | None,
                          sink_columns: tuple[str, str, list[dict]] | None = None,
                          desired_state: str | None = None,
                          start_over: Mapping[str, Any] | None = None) -> tuple[JobInfo, int]:
        """Give the job with this uid a new query (its next version), its properties and
        its dependencies, in one transaction; the uid, status and checkpoints stay. With
        ``sink_columns`` ``(database, table, columns)``, the table's declared columns
        become ``columns`` in the same transaction (a SQL sink gaining nullable columns,
        docs/upgrades.md). With ``desired_state``, the job's desired state too (an
        upgrade of a running job asks for it to run again in the switch's transaction, so
        a process killed after the switch leaves the new query to be started). The
        job's pending switch (:meth:`begin_switch`) is cleared in the same transaction,
        or, with ``start_over`` (``{"phase": "start_over", "start_from", "run", "host",
        "pid", "owner", "at"}``: a switch to a new checkpoint epoch, FROM or WITH STATE
        RESET), replaced by it, with the new version number added: the epoch still to be
        prepared (executor/switch_finish.py), then :meth:`resume_switch` ends it.

        Returns:
            the updated job and its new version number.

        Raises:
            ObjectNotFoundError: no job has this uid (dropped meanwhile).
            ValueError: a bad dependency kind or role.
        """
        deps: list[tuple[str, str, str, str]] = []
        for kind, dep_db, dep_name, role in dependencies:
            check_choice("dependency kind", kind, DEPENDENCY_KINDS)
            check_choice("dependency role", role, DEPENDENCY_ROLES)
            if (kind, dep_db, dep_name, role) not in deps:
                deps.append((kind, dep_db, dep_name, role))
        with self._tx(write=True) as session:
            self._lock_names(session, [(d[1], d[2]) for d in deps])  # as create_job
            job = session.scalar(select(Job).where(Job.uid == job_uid).with_for_update())
            if job is None:
                raise ObjectNotFoundError(f"no streamjob has uid {job_uid} (dropped?)")
            last = session.scalar(select(func.max(JobVersion.version))
                                  .where(JobVersion.job_id == job.id)) or 0
            now = now_utc()
            if last == 0:  # a job from before revision 0011 that the migration missed
                session.add(JobVersion(job_id=job.id, version=1, query=job.query,
                                       properties=dict(job.properties or {}),
                                       created_at=job.created_at, principal=None))
                last = 1
            if sink_columns is not None:
                tdb, tname, columns = sink_columns
                table = session.scalar(select(Table).where(Table.database == tdb,
                                                           Table.name == tname))
                if table is None:
                    raise ObjectNotFoundError(f"table {tdb}.{tname} does not exist")
                table.columns = [dict(c) for c in columns]
            if desired_state is not None:
                check_choice("desired state", desired_state, DESIRED_STATES)
                job.desired_state = desired_state
            # the switch is done (begin_switch), or its new epoch is still to come
            job.pending_switch = None if start_over is None else json.dumps(
                {**start_over, "version": last + 1})
            job.query = query
            job.properties = dict(properties)
            job.updated_at = now
            session.execute(delete(JobDependency).where(JobDependency.job_id == job.id))
            session.add_all(JobDependency(job_id=job.id, kind=k, database=d, name=n, role=r)
                            for k, d, n, r in deps)
            session.add(JobVersion(job_id=job.id, version=last + 1, query=query,
                                   properties=dict(properties), created_at=now,
                                   principal=principal, change=change))
            session.flush()
            self._notify(session, "job")
            return self._job_info(session, job), last + 1  # JobsMixin's

    def begin_switch(self, job_uid: str, marker: Mapping[str, Any]) -> JobInfo:
        """Start the graceful stop of a running job for a query switch (docs/upgrades.md,
        "A switch killed midway"): in one transaction, the desired state becomes STOPPED
        (so that whichever job manager runs it stops it after its micro-batch) and
        ``marker`` (``{"version": pending version, "host", "pid", "owner", "at"}``: the
        process doing the switch) is recorded as the job's pending switch. Until
        :meth:`replace_job_query` clears it, the job's wish is still to run: if the
        process dies, :meth:`resume_switch` asks for the old query to run again.

        Raises:
            ObjectNotFoundError: no job has this uid.
        """
        with self._tx(write=True) as session:
            job = session.scalar(select(Job).where(Job.uid == job_uid).with_for_update())
            if job is None:
                raise ObjectNotFoundError(f"no streamjob has uid {job_uid} (dropped?)")
            job.desired_state = DesiredState.STOPPED
            job.pending_switch = json.dumps(dict(marker))
            job.updated_at = now_utc()
            session.flush()
            self._notify(session, "job")
            return self._job_info(session, job)

    def resume_switch(self, job_uid: str, marker_at: str | None = None,
                      run: bool = True) -> JobInfo | None:
        """End the job's pending switch: in one transaction, clear it and (``run``) set
        the desired state RUNNING again (the old query runs on, or, for a pending start
        over whose new epoch was prepared, the new query runs). With
        ``marker_at``, only if the pending switch is still that one (its ``at``), so a
        newer switch of a live process is never undone. Returns the job, or None when
        there was nothing to resume (no job, no such pending switch)."""
        with self._tx(write=True) as session:
            job = session.scalar(select(Job).where(Job.uid == job_uid).with_for_update())
            if job is None or job.pending_switch is None:
                return None
            if marker_at is not None:
                if from_json_text(job.pending_switch, {}).get("at") != marker_at:
                    return None
            job.pending_switch = None
            if run:
                job.desired_state = DesiredState.RUNNING
            job.updated_at = now_utc()
            session.flush()
            self._notify(session, "job")
            return self._job_info(session, job)

    def list_job_versions(self, job_uid: str) -> list[JobVersionInfo]:
        """The versions of the job with this uid's query, oldest first (empty if no job
        has the uid)."""
        with self._tx() as session:
            rows = session.scalars(select(JobVersion).join(Job, Job.id == JobVersion.job_id)
                                   .where(Job.uid == job_uid).order_by(JobVersion.version))
            return [JobVersionInfo(version=r.version, query=r.query,
                                   properties=dict(r.properties or {}), created_at=r.created_at,
                                   principal=r.principal, change=r.change) for r in rows]

