"""Admission of query starts: a job manager starts a few queries at a time.

Starting a streaming query is the heaviest moment of a job's life on the driver: Spark
launches the Python streaming-source runner and data-source planners (one process each,
per query), the first trigger asks every source for its offsets, and the first batch
starts the Python workers. Twenty of them at once on a 2-core machine made Spark give up
on its own processes ("Python worker failed to connect back", docs/results/2026-11-21.md,
scenario 5), and every job's failover then retried in step. So each job manager admits
at most :data:`START_SLOTS` queries into their start-up at once; the others wait in
STARTING (or RECOVERING) until a slot frees. A query leaves its start-up when Spark has
reported its first batch, or its first trigger found no data ("Waiting for data to
arrive"), or after :data:`START_HOLD_S` seconds, or when it ends. Jobs that run never
wait for each other.
"""

from __future__ import annotations

import os
import threading
import time

#: Queries of one job manager in their start-up at once: the machine's cores, at least 2.
START_SLOTS = max(2, os.cpu_count() or 2)
#: Longest time, in seconds, one query holds its slot.
START_HOLD_S = 60.0


class StartGate:
    """Counts the query starts of one job manager (:data:`START_SLOTS` at a time)."""

    def __init__(self, slots: int = START_SLOTS) -> None:
        self._slots = threading.Semaphore(slots)

    def admit(self, stop: threading.Event, poll_s: float = 0.1) -> "Admission | None":
        """Wait for a slot; None if ``stop`` was set first (the job is being stopped)."""
        while not stop.is_set():
            if self._slots.acquire(timeout=poll_s):
                return Admission(self._slots)
        return None


class Admission:
    """One query's slot, from :meth:`StartGate.admit` until :meth:`release` (idempotent)."""

    def __init__(self, slots: threading.Semaphore) -> None:
        self._slots = slots
        self._since = time.monotonic()
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self._slots.release()

    def release_once_started(self, query) -> None:
        """Release if ``query`` (a StreamingQuery) is past its start-up (see the module
        docstring). Called by the runner's watch loop while held."""
        if not self.held:
            return
        if time.monotonic() - self._since >= START_HOLD_S or _started(query):
            self.release()


def _started(query) -> bool:
    try:
        if not query.isActive or query.lastProgress is not None:
            return True
        status = query.status
        return not status.get("isTriggerActive") and \
            str(status.get("message", "")).startswith("Waiting")
    except Exception:  # noqa: BLE001 - a query that died meanwhile: it holds nothing
        return True
