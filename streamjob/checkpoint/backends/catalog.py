"""``morphling.checkpoint.backend=catalog`` (the default): checkpoint rows in the catalog
database, by job uid (:mod:`streamjob.catalog.checkpoints`).

The upsert and the retention purge are one catalog transaction; writes for a uid the
catalog no longer holds (the job was dropped) are ignored; DROP STREAMJOB also removes
the rows by cascade. Errors are the catalog's :class:`~streamjob.exceptions.CatalogError`.
"""

from __future__ import annotations

from ...catalog import Catalog
from ...catalog.records import CheckpointInfo, JobInfo
from .base import CheckpointBackend, check_record


class CatalogBackend(CheckpointBackend):
    """Checkpoint records in ``catalog`` (which the caller owns: :meth:`close` leaves it open)."""

    name = "catalog"

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def record(self, job: JobInfo, checkpoint: CheckpointInfo, retained: int) -> None:
        check_record(checkpoint, retained)
        self.catalog.record_checkpoint(
            job.uid, checkpoint.checkpoint_id,
            started_at=checkpoint.started_at,
            ended_at=checkpoint.ended_at,
            duration_ms=checkpoint.duration_ms,
            source_offsets=checkpoint.source_offsets,
            input_rows=checkpoint.input_rows,
            state_rows=checkpoint.state_rows,
            state_bytes=checkpoint.state_bytes,
            status=checkpoint.status,
            fingerprint=checkpoint.fingerprint,
            retained=retained,
        )

    def list(self, job: JobInfo) -> list[CheckpointInfo]:
        return self.catalog.list_checkpoints(job.uid)

    def latest(self, job: JobInfo) -> CheckpointInfo | None:
        return self.catalog.latest_checkpoint(job.uid)

    def truncate(self, job: JobInfo, after: int) -> int:
        return self.catalog.truncate_checkpoints(job.uid, after=after)

    def purge(self, job: JobInfo) -> int:
        """Rows of ``job.uid`` (older incarnations' rows went with their job rows)."""
        return self.catalog.truncate_checkpoints(job.uid, after=-1)

    def __repr__(self) -> str:
        return f"CatalogBackend({self.catalog.url!r})"
