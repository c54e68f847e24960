"""Catalog methods for the retained checkpoints of a job.

:class:`CheckpointsMixin` records checkpoints by job ``uid`` (an upsert plus the purge
of all but the ``retained`` highest ids, in one transaction), truncates them for
``START ... FROM CHECKPOINT n`` and lists them. Writes for a uid the catalog no longer
holds are ignored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select

from streamjob.catalog.engine import CatalogEngine, check_choice
from streamjob.catalog.models import Checkpoint, Job
from streamjob.catalog.records import CHECKPOINT_STATUSES, CheckpointInfo
from streamjob.exceptions import CatalogError
from streamjob.catalog.records import CheckpointStatus

__all__ = ["CheckpointsMixin"]


class CheckpointsMixin(CatalogEngine):
    """Checkpoints: ``record_checkpoint``, ``truncate_checkpoints``,
    ``list_checkpoints``, ``latest_checkpoint``."""

    def record_checkpoint(
        self,
        job_uid: str,
        checkpoint_id: int,
        *,
        started_at: datetime,
        ended_at: datetime | None,
        duration_ms: int | None,
        source_offsets: Any,
        input_rows: int,
        state_rows: int | None = None,
        state_bytes: int | None = None,
        status: str = CheckpointStatus.COMPLETED,
        fingerprint: str | None = None,
        retained: int,
    ) -> None:
        """Record a checkpoint and keep only the job's ``retained`` highest ids.

        Idempotent: recording a checkpoint id again updates that row (e.g. EXPIRED then
        LATE). The upsert and the retention purge are one transaction. Ignored if no job
        has this uid. ``source_offsets`` must be JSON-serializable; naive datetimes are
        taken as UTC. ValueError for an unknown status or ``retained`` < 1.
        """
        check_choice("checkpoint status", status, CHECKPOINT_STATUSES)
        if retained < 1:
            raise ValueError(f"retained must be at least 1, got {retained}")
        values = dict(
            started_at=started_at,
            ended_at=ended_at,
            duration_ms=duration_ms,
            source_offsets=source_offsets,
            input_rows=input_rows,
            state_rows=state_rows,
            state_bytes=state_bytes,
            status=status,
            fingerprint=fingerprint,
        )
        with self._tx(write=True) as session:
            job_id = self._job_id_for_uid(session, job_uid)
            if job_id is None:
                return
            session.execute(self._upsert_checkpoint(job_id, int(checkpoint_id), values))
            threshold = session.scalar(
                select(Checkpoint.checkpoint_id)
                .where(Checkpoint.job_id == job_id)
                .order_by(Checkpoint.checkpoint_id.desc())
                .offset(retained - 1)
                .limit(1)
            )
            if threshold is not None:
                session.execute(
                    delete(Checkpoint).where(
                        Checkpoint.job_id == job_id, Checkpoint.checkpoint_id < threshold
                    )
                )

    def _upsert_checkpoint(self, job_id: int, checkpoint_id: int, values: dict[str, Any]) -> Any:
        if self._backend == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        elif self._backend == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        else:  # pragma: no cover - only SQLite and PostgreSQL are supported
            raise CatalogError(f"catalog {self._masked}: unsupported database {self._backend}")
        stmt = dialect_insert(Checkpoint).values(job_id=job_id, checkpoint_id=checkpoint_id, **values)
        return stmt.on_conflict_do_update(
            index_elements=[Checkpoint.job_id, Checkpoint.checkpoint_id],
            set_={k: stmt.excluded[k] for k in values},
        )

    def truncate_checkpoints(self, job_uid: str, after: int) -> int:
        """Delete the job's checkpoint records with id > ``after`` (``after=-1``: all);
        returns how many. For ``START ... FROM CHECKPOINT n`` and for starting fresh.
        Ignored (0) if no job has this uid."""
        with self._tx(write=True) as session:
            job_id = self._job_id_for_uid(session, job_uid)
            if job_id is None:
                return 0
            result = session.execute(
                delete(Checkpoint).where(Checkpoint.job_id == job_id, Checkpoint.checkpoint_id > after)
            )
            return int(result.rowcount or 0)

    def list_checkpoints(self, job_uid: str) -> list[CheckpointInfo]:
        """The retained checkpoints of the job with this uid, ascending by id."""
        with self._tx() as session:
            rows = session.scalars(
                select(Checkpoint)
                .join(Job, Job.id == Checkpoint.job_id)
                .where(Job.uid == job_uid)
                .order_by(Checkpoint.checkpoint_id)
            )
            return [self._checkpoint_info(job_uid, r) for r in rows]

    def latest_checkpoint(self, job_uid: str) -> CheckpointInfo | None:
        """The job's checkpoint with the highest id, or None."""
        with self._tx() as session:
            row = session.scalars(
                select(Checkpoint)
                .join(Job, Job.id == Checkpoint.job_id)
                .where(Job.uid == job_uid)
                .order_by(Checkpoint.checkpoint_id.desc())
                .limit(1)
            ).first()
            return self._checkpoint_info(job_uid, row) if row is not None else None

    @staticmethod
    def _checkpoint_info(job_uid: str, row: Checkpoint) -> CheckpointInfo:
        return CheckpointInfo(
            job_uid=job_uid,
            checkpoint_id=row.checkpoint_id,
            started_at=row.started_at,
            ended_at=row.ended_at,
            duration_ms=row.duration_ms,
            source_offsets=row.source_offsets,
            input_rows=row.input_rows,
            state_rows=row.state_rows,
            state_bytes=row.state_bytes,
            status=row.status,
            fingerprint=row.fingerprint,
        )
