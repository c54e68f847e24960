"""When is a job idle ("caught up", docs/checkpoints.md): it has committed every record
its sources held at a moment, and no micro-batch is pending for output its watermark
released.

Used by ``streamjob run --until-idle`` (DESIGN §8): the targets are the Kafka end offsets,
the position after a Delta stream's latest table version (``{"delta:<path>": {"version":
latest + 1}}``) and the files of file streams, read once when waiting begins; the input is committed
when its latest checkpoint's offsets reach the offsets on every partition and its
committed batches hold every one of those files. Then :class:`ReleasedOutput` waits,
when the last batch moved the watermark of a stateful job, for the micro-batch without
new data that writes what the watermark closed (issue 34); a graceful stop waits for it
too.
"""

from __future__ import annotations

from typing import Any

from ..exceptions import JobError
from ..planner.plan import JobPlan


def targets_for(plan: JobPlan) -> dict[str, dict[str, int]]:
    """``{topic: {partition: end offset}}`` of the job's Kafka sources and ``{"delta:<path>":
    {"version": latest + 1}}`` of its Delta streams, read now.

    Raises:
        JobError: a source is unbounded in time (rate) and never idle.
        ConnectorError: a broker is unreachable.
    """
    targets: dict[str, dict[str, int]] = {}
    for src in plan.sources:
        if not src.source.bounded:
            raise JobError(
                f"job {plan.qualified_name} reads the rate stream {src.stream.qualified_name}, "
                "which never runs out of input; --until-idle cannot apply")
        targets.update(src.source.end_offsets())
    return targets


def file_targets(plan: JobPlan) -> set[str]:
    """The files of the job's file streams present now (absolute paths); hidden and
    temporary files (``.``/``_`` prefix), which Spark's file source skips, are left out."""
    files: set[str] = set()
    for src in plan.sources:
        files.update(src.source.present_files())
    return files


def files_reached(committed: set[str], targets: set[str]) -> bool:
    """True if every target file is among the committed ones (Spark's ``file:///``
    URIs and plain paths compared as paths)."""
    def norm(uri: str) -> str:
        return uri.removeprefix("file:").lstrip("/")
    have = {norm(u) for u in committed}
    return all(norm(t) in have for t in targets)


def recorded(batch_id: int | None, committed: list[int]) -> bool:
    """True if the job's recorder has seen (:class:`~streamjob.checkpoint.recorder.
    CheckpointTracker` ``batch_id``: its step 8, after the batch's counts and checkpoint
    were recorded) every micro-batch Spark committed (``committed``: the ids of the
    checkpoint's ``commits`` log). A file stream is caught up by the files its committed
    batches hold, which Spark writes before the listener reports the batch: without this,
    ``run --until-idle`` could stop before the last batch's checkpoint, malformed and
    missing-column counts reached the catalog."""
    return not committed or (batch_id is not None and batch_id >= max(committed))


def reached(offsets: dict[str, Any], targets: dict[str, dict[str, int]]) -> bool:
    """True if ``offsets`` (a checkpoint's) equal ``targets`` on every partition.

    Offsets beyond a partition's end are not "caught up" but lost data (the topic was
    deleted and recreated, or truncated: docs/design.md, "Decisions": lost offsets): the job's source fails
    on them, or, with ``"fail.on.data.loss"="false"``, reads the partition again, and the
    wait goes on until a checkpoint reaches the end again (issue 13 point 6).
    A Delta stream's position (key ``delta:<path>``) past its target is caught up: the
    versions committed since the wait began were read too (a replaced table fails the
    source instead); so is an Iceberg stream's (``iceberg:<path>``, its ``sequence``).
    """
    from ..connectors.delta.options import OFFSETS_PREFIX
    from ..connectors.iceberg.options import OFFSETS_PREFIX as ICEBERG_PREFIX

    for topic, parts in targets.items():
        have = offsets.get(topic) or {}
        # a Delta table's versions and an Iceberg table's sequence numbers only grow
        grows = topic.startswith((OFFSETS_PREFIX, ICEBERG_PREFIX))
        for p, end in parts.items():
            at = int(have.get(str(p), 0))
            if (at < end and end > 0) or (at > end and not grows):
                return False
    return True


class ReleasedOutput:
    """Whether a running job has written the output its watermark released: the second
    half of "caught up" (docs/checkpoints.md) after its input is committed, and what a
    graceful stop waits for (:meth:`JobRunner._stop_query`).

    When the job's newest committed batch ``n`` moved the watermark of a stateful job
    (:attr:`~streamjob.checkpoint.watermark.WatermarkStep.releases`), Spark's next
    trigger runs a micro-batch without new data that writes what the new watermark
    closed. The output is written once either

    - a batch after ``n`` has committed (it ran with the new watermark, a no-data batch
      or one with new input), or
    - Spark has declined to run one since ``n`` committed: ``processAllAvailable()``,
      called on a helper thread once ``n`` is seen, returned while the query runs (it
      returns at the first trigger that decides to run nothing, Spark's own
      ``noNewData``; the plan's operators did not need the batch).

    A batch that did not move the watermark, or a job without state, leaves nothing
    behind: :meth:`written` is then true at once, at no cost (no trigger is waited
    for). The first releasing batch seen is the one waited on: input arriving without
    pause (every batch moving the watermark again) does not hold the wait.

    Args:
        checkpoint_dir: the job's checkpoint directory (read with
            :func:`~streamjob.checkpoint.watermark.last_step`).
        cond: the condition notified when the helper thread learns something (the
            runner's tracker's, which the checkpoint recorder notifies at every
            committed batch).
        query: returns the job's current StreamingQuery (None between attempts); a
            failover's new query gets a new helper.
        no_data_batches: Spark's ``spark.sql.streaming.noDataMicroBatches.enabled`` of
            the job (False: Spark never runs such batches; nothing to wait for).
    """

    def __init__(self, checkpoint_dir: str, cond, query, no_data_batches: bool = True) -> None:
        self.checkpoint_dir = checkpoint_dir
        self.cond = cond
        self.query = query
        self.no_data_batches = no_data_batches
        self._first = None  # the first releasing batch seen
        self._declined_after = -1  # Spark ran nothing after this committed batch
        self._helper_for = None  # (query, batch id) of the running helper thread

    def written(self) -> bool:
        """True when no micro-batch is pending for the released output (class docstring).
        Cheap when nothing is pending (two log entries read); otherwise starts, once per
        query, the helper thread that learns whether Spark declines the batch.

        Raises:
            CheckpointError: the checkpoint's logs cannot be read.
        """
        from ..checkpoint.watermark import last_step

        if not self.no_data_batches:
            return True
        step = last_step(self.checkpoint_dir)
        if step is None or not step.releases:
            return True
        if self._first is None:
            self._first = step
        if step.batch_id > self._first.batch_id or self._declined_after >= step.batch_id:
            return True
        self._watch_decline(step.batch_id)
        return False

    def _watch_decline(self, batch_id: int) -> None:
        """Start the helper thread on the current query, unless one runs on it."""
        import threading

        query = self.query()
        if query is None or (self._helper_for is not None and self._helper_for[0] is query):
            return
        self._helper_for = (query, batch_id)
        threading.Thread(target=self._await_decline, args=(query, batch_id), daemon=True,
                         name="await-no-data-batch").start()

    def _await_decline(self, query, batch_id: int) -> None:
        """The helper: ``processAllAvailable()`` returns at Spark's first trigger that
        runs nothing, or when the query stops or fails (then nothing is learnt)."""
        try:
            query.processAllAvailable()
            declined = bool(query.isActive)
        except Exception:  # noqa: BLE001 - the query failed or stopped: nothing learnt
            declined = False
        with self.cond:  # a query is watched once: a failover's next query gets a helper
            if declined:
                self._declined_after = max(self._declined_after, batch_id)
            self.cond.notify_all()
