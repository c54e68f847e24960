"""Output the watermark released but Spark has not written yet (issue 34).

A stateful operator that waits for the watermark (a STREAMWINDOW in append mode, a gap or
predicate session, a CEP pattern, a stream-stream join with time bounds) writes what the
watermark closes in the micro-batch *after* the one that moved it: batch ``n`` reads
data and runs with the watermark of ``offsets/<n>`` (``batchWatermarkMs``); once it is
committed, its data has moved the watermark to ``commits/<n>``'s ``nextBatchWatermarkMs``,
and Spark's next trigger runs batch ``n + 1`` even without new data because the
previous batch's plan asks for it (``MicroBatchExecution.constructNextBatch``:
``lastExecutionRequiresAnotherBatch``, the stateful operators' ``shouldRunAnotherBatch``
with the new watermark). That no-data batch writes the closed windows, sessions and
matches.

:func:`last_step` reads whether the newest committed batch left such a batch to run
(:attr:`WatermarkStep.releases`): ``run --until-idle`` waits for it
(:mod:`streamjob.manager.idle`) and so does a graceful stop.

:func:`schedule_released_batch` covers a restart. Spark resumes a query after its last
committed batch with no previous execution to ask, so it runs the no-data batch that
batch left pending only when new data comes (``previousContext`` is empty after a
restart): a job stopped between a batch and its no-data batch would hold the released
output back indefinitely. Before the query starts, the function writes that batch's
offset log entry exactly as Spark's ``constructNextBatch`` would have: the same source
offsets (no new data), the watermark that the last batch reached, a new batch
timestamp, the same session conf. Spark then runs it at once as the batch its previous
run left uncommitted (``populateStartOffsets``), with the same plan and state as the
uninterrupted run would have.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

from .entries import has_state, read_entry, write_entry
from .store import log_ids

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WatermarkStep:
    """The watermark around the newest committed micro-batch of a checkpoint.

    ``batch_id``: that batch; ``watermark_ms``: the watermark it ran with (its offset
    log entry's ``batchWatermarkMs``, ms since the epoch, 0 before any); ``next_ms``:
    the watermark its data moved to (its commit's ``nextBatchWatermarkMs``);
    ``stateful``: the job keeps state (:func:`~.entries.has_state`); ``constructed``: the
    offset log holds a later batch (one Spark has started and not committed, or the one
    :func:`schedule_released_batch` wrote).
    """

    batch_id: int
    watermark_ms: int
    next_ms: int
    stateful: bool
    constructed: bool

    @property
    def releases(self) -> bool:
        """True if the batch moved the watermark of a job with stateful operators: the
        output the new watermark closes is written by the next batch. (Spark runs that
        batch when one of the operators asks for it, which every watermark-bound one
        does; an operator that does not, e.g. a join without time bounds, makes Spark
        decline it: :mod:`streamjob.manager.idle` waits for either.)"""
        return self.stateful and self.next_ms > self.watermark_ms


def _metadata(lines: list[str] | None) -> dict | None:
    """The JSON object of a log entry's second line (after ``v1``), or None."""
    if not lines or len(lines) < 2 or not lines[0].startswith("v"):
        return None
    try:
        value = json.loads(lines[1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def last_step(checkpoint_dir: str) -> WatermarkStep | None:
    """The :class:`WatermarkStep` of the newest committed micro-batch, or None (nothing
    committed, or its entries gone or unreadable: then there is nothing to wait for).

    Raises:
        CheckpointError: a log cannot be listed, or a Hadoop URI in a process without
            Spark.
    """
    commits = log_ids(checkpoint_dir, "commits")
    if not commits:
        return None
    batch_id = commits[-1]
    offsets = _metadata(read_entry(checkpoint_dir, "offsets", batch_id))
    commit = _metadata(read_entry(checkpoint_dir, "commits", batch_id))
    if offsets is None or commit is None:
        return None
    later = log_ids(checkpoint_dir, "offsets")
    return WatermarkStep(batch_id, int(offsets.get("batchWatermarkMs") or 0),
                         int(commit.get("nextBatchWatermarkMs") or 0),
                         has_state(checkpoint_dir), bool(later and later[-1] > batch_id))


def schedule_released_batch(checkpoint_dir: str, now_ms: int | None = None) -> int | None:
    """Before a query starts on ``checkpoint_dir``: if its newest committed batch ``n``
    released output (:attr:`WatermarkStep.releases`) and no later batch was begun, write
    ``offsets/<n+1>`` for the no-data batch Spark would have run next (module
    docstring), so that the query runs it first; returns ``n + 1``, else None.

    The entry is ``offsets/<n>`` with ``batchWatermarkMs`` set to ``n``'s
    ``nextBatchWatermarkMs`` and ``batchTimestampMs`` to ``now_ms`` (the current time
    when None; never before ``n``'s): the source offsets and the conf stay, as in
    Spark's own no-data batch. It is written atomically and never over an entry that
    exists. Call it with no query running on the directory, after the checks that may
    refuse the start (identity, fingerprint) and after torn writes were removed.

    Raises:
        CheckpointError: the logs cannot be read or the entry cannot be written.
    """
    step = last_step(checkpoint_dir)
    if step is None or not step.releases or step.constructed:
        return None
    lines = read_entry(checkpoint_dir, "offsets", step.batch_id)
    meta = _metadata(lines)
    if meta is None:
        return None
    now = int(time.time() * 1000) if now_ms is None else now_ms
    meta = {**meta, "batchWatermarkMs": step.next_ms,
            "batchTimestampMs": max(now, int(meta.get("batchTimestampMs") or 0))}
    entry = [lines[0], json.dumps(meta, separators=(",", ":")), *lines[2:]]
    if not write_entry(checkpoint_dir, "offsets", step.batch_id + 1, entry):
        return None
    log.debug("checkpoint %s: batch %s moved the watermark to %s ms and its no-data batch "
              "%s did not run; it runs first", checkpoint_dir, step.batch_id, step.next_ms,
              step.batch_id + 1)
    return step.batch_id + 1
