"""Catalog methods for savepoints (revision 0010; docs/checkpoints.md): ``STOP STREAMJOB
j WITH SAVEPOINT sp``, ``CREATE SAVEPOINT``, ``SHOW SAVEPOINTS``, ``DROP SAVEPOINT``,
``START ... FROM SAVEPOINT``.

One row per savepoint in ``savepoints``, unique by job and name. The rows live in the
catalog whatever the job's ``morphling.checkpoint.backend``: no backend's retention or
expiry (which act on checkpoint records only) ever reaches them. They go with their job
row (ON DELETE CASCADE); the caller deletes their files first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from streamjob.catalog.engine import CatalogEngine, Conflict, now_utc, qualified
from streamjob.catalog.models import Job, Savepoint
from streamjob.catalog.records import SavepointInfo
from streamjob.exceptions import ObjectExistsError, ObjectNotFoundError

__all__ = ["SavepointsMixin"]


class SavepointsMixin(CatalogEngine):
    """``add_savepoint``, ``get_savepoint``, ``list_savepoints``, ``drop_savepoint``."""

    def add_savepoint(self, job_uid: str, name: str, *, epoch: str, checkpoint_id: int,
                      fingerprint: str | None, source_offsets: Any, location: str,
                      taken_at: datetime, owner: str | None = None) -> SavepointInfo:
        """Record savepoint ``name`` of the job with this uid (``created_at`` now).

        Raises:
            ObjectNotFoundError: no job has this uid (it was dropped meanwhile).
            ObjectExistsError: the job has a savepoint of that name.
        """
        try:
            with self._tx(write=True) as session:
                job = session.scalar(select(Job).where(Job.uid == job_uid)
                                     .with_for_update(key_share=True))
                if job is None:
                    raise ObjectNotFoundError(f"no streamjob has uid {job_uid} (dropped?)")
                qname = qualified(job.database, job.name)
                if session.scalar(select(Savepoint.id).where(
                        Savepoint.job_id == job.id, Savepoint.name == name)) is not None:
                    raise ObjectExistsError(f"streamjob {qname} already has a savepoint {name}; "
                                            f"DROP SAVEPOINT {name} FOR STREAMJOB {qname} first")
                row = Savepoint(job_id=job.id, name=name, job_uid=job_uid, epoch=epoch,
                                checkpoint_id=int(checkpoint_id), fingerprint=fingerprint,
                                source_offsets=source_offsets, location=location,
                                taken_at=taken_at, created_at=now_utc(), owner=owner)
                session.add(row)
                session.flush()
                return _info(qname, row)
        except Conflict:
            raise ObjectExistsError(f"a savepoint {name} was made meanwhile") from None

    def get_savepoint(self, job_uid: str, name: str) -> SavepointInfo | None:
        """The savepoint ``name`` of the job with this uid, or None."""
        with self._tx() as session:
            found = session.execute(
                select(Savepoint, Job.database, Job.name).join(Job, Job.id == Savepoint.job_id)
                .where(Job.uid == job_uid, Savepoint.name == name)).first()
            return None if found is None else _info(qualified(found[1], found[2]), found[0])

    def list_savepoints(self, job_uid: str | None = None) -> list[SavepointInfo]:
        """The savepoints of the job with this uid (every job's when None), by job, then
        by checkpoint id and name."""
        with self._tx() as session:
            query = (select(Savepoint, Job.database, Job.name).join(Job, Job.id == Savepoint.job_id)
                     .order_by(Job.database, Job.name, Savepoint.checkpoint_id, Savepoint.name))
            if job_uid is not None:
                query = query.where(Job.uid == job_uid)
            return [_info(qualified(db, n), row) for row, db, n in session.execute(query)]

    def drop_savepoint(self, job_uid: str, name: str) -> bool:
        """Forget savepoint ``name`` of the job with this uid; False if there was none."""
        with self._tx(write=True) as session:
            job_id = self._job_id_for_uid(session, job_uid)
            if job_id is None:
                return False
            result = session.execute(delete(Savepoint).where(Savepoint.job_id == job_id,
                                                             Savepoint.name == name))
            return bool(result.rowcount)


def _info(qname: str, row: Savepoint) -> SavepointInfo:
    return SavepointInfo(job=qname, name=row.name, job_uid=row.job_uid, epoch=row.epoch,
                         checkpoint_id=row.checkpoint_id, fingerprint=row.fingerprint,
                         source_offsets=row.source_offsets, location=row.location,
                         taken_at=row.taken_at, created_at=row.created_at, owner=row.owner)
