"""Checkpoint expiry (DESIGN §4): a checkpoint still running after
``morphling.checkpoint.timeout`` has expired.

Spark writes ``offsets/<id>`` when batch ``id`` starts (write-ahead) and
``commits/<id>`` when its sink has taken it, and never runs two batches of one query at
once. A batch whose offsets entry exists without a commit marker is the micro-batch in
flight; it is the checkpoint in flight once the checkpoint interval has passed (a
micro-batch completing then is the next checkpoint, checkpoint/recorder.py).
:class:`ExpiryWatch` is polled by the job's runner while the query runs; the
first poll that finds the in-flight checkpoint older than the timeout (measured from
when the watch first saw it; the runner polls every 0.5 s) reports it once: the runner logs
``Checkpoint[<id>] of job {<db>.<job>} expired before completing`` (Slipstream's
wording), counts it in the catalog, and the recorder records it as ``LATE`` if it
completes after all. A backlog therefore pauses new checkpoints instead of piling up
expired ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from .store import log_ids
from streamjob.catalog.records import CheckpointStatus


def expiry_message(checkpoint_id: int, qualified_name: str) -> str:
    """The log line of an expired checkpoint, as Slipstream writes it."""
    return f"Checkpoint[{checkpoint_id}] of job {{{qualified_name}}} expired before completing"


@dataclass
class ExpiryWatch:
    """Watches one job's checkpoint directory for a checkpoint running too long.

    Args:
        checkpoint_dir: the job's Spark checkpoint directory: a local path or any Hadoop
            URI (read through the process's Spark session, :mod:`.filesystems`).
        timeout_ms: ``morphling.checkpoint.timeout`` in ms.
        clock: the time in seconds (tests pass their own).
    """

    checkpoint_dir: str
    timeout_ms: int
    clock: Callable[[], float] = time.time
    expired: set[int] = field(default_factory=set)
    _seen: dict[int, float] = field(default_factory=dict)

    def in_flight(self) -> int | None:
        """The id of the batch with offsets but no commit marker, or None."""
        offsets = log_ids(self.checkpoint_dir, "offsets")
        if not offsets:
            return None
        last = offsets[-1]
        commits = log_ids(self.checkpoint_dir, "commits")
        return None if commits and commits[-1] >= last else last

    def poll(self, due: bool = True) -> int | None:
        """The id of a checkpoint that has just expired (reported once), else None.

        ``due``: the batch in flight would be a checkpoint if it completed now (the
        checkpoint interval has passed, :meth:`~.recorder.CheckpointRecorder.due_now`);
        a micro-batch between checkpoints is timed but never reported."""
        batch = self.in_flight()
        if batch is None or batch in self.expired:
            return None
        now = self.clock()
        started = self._seen.setdefault(batch, now)
        if not due or (now - started) * 1000 < self.timeout_ms:
            return None
        self.expired.add(batch)
        return batch

    def status_of(self, checkpoint_id: int) -> str:
        """``LATE`` for a checkpoint that expired before it completed, else ``COMPLETED``."""
        return CheckpointStatus.LATE if checkpoint_id in self.expired else CheckpointStatus.COMPLETED
