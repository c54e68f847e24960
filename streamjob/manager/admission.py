"""Admission of query starts: a job manager starts a few queries at a time.

Starting a streaming query is the heaviest moment of a job's life on the driver: Spark
asks a Python planner process about each Python data source while the query is built,
launches the query's Python streaming-source runner when its sources are initialised,
and the first trigger asks every source for its offsets. Each of those processes must
connect back to the JVM within Spark's timeout. Twenty of them at once on a 2-core
machine made Spark give up on its own processes ("Python worker failed to connect
back", docs/results/2026-11-21.md, scenario 5), and every job's failover then retried
in step. So each job manager admits at most :data:`START_SLOTS` queries into their
start-up at once; the others wait in STARTING (or RECOVERING) until a slot frees.

A query leaves its start-up (:func:`past_start_up`) once its first trigger has planned
a batch (Spark reports "Processing new data": the sources answered, the offsets are
written; the batch's own Python workers are forked by Spark's worker daemon and do not
connect back), or its first trigger found no data ("Waiting for data to arrive"), or
Spark reported a batch, or it ended, or after :data:`START_HOLD_S` seconds.

Waiting starts are admitted in order of :data:`RECOVERY` first, then :data:`NORMAL`,
each in the order they came. A job taken over from a server that died or lost it is a
recovery: it was running a moment ago, and its lease's TTL already passed (issue 33
point 3: its next checkpoint within 10 s of the expiry), so it goes ahead of new
starts, moves and warm-ups. Jobs that run never wait for each other.
"""

from __future__ import annotations

import itertools
import os
import threading
import time

#: Queries of one job manager in their start-up at once: the machine's cores, at least 2.
START_SLOTS = max(2, os.cpu_count() or 2)
#: Longest time, in seconds, one query holds its slot.
START_HOLD_S = 60.0
#: Admission classes, lowest first: a job taken over from a lost server; anything else.
RECOVERY, NORMAL = 0, 1


class StartGate:
    """Counts the query starts of one job manager (:data:`START_SLOTS` at a time) and
    admits the waiting ones by class (:data:`RECOVERY` before :data:`NORMAL`), then in
    the order they came."""

    def __init__(self, slots: int = START_SLOTS) -> None:
        self._free = slots
        self._cond = threading.Condition()
        self._waiting: list[tuple[int, int]] = []  # (class, ticket), admitted smallest first
        self._tickets = itertools.count()

    def admit(self, stop: threading.Event, poll_s: float = 0.1,
              priority: int = NORMAL) -> "Admission | None":
        """Wait for a slot, ahead of every waiting start of a higher ``priority`` class
        (:data:`RECOVERY`, :data:`NORMAL`) and of the same class that came later; None if
        ``stop`` was set first (the job is being stopped). ``stop`` is looked at every
        ``poll_s`` seconds."""
        me = (priority, next(self._tickets))
        with self._cond:
            self._waiting.append(me)
            self._cond.notify_all()  # await_waiting()
            try:
                while not stop.is_set():
                    if self._free > 0 and min(self._waiting) == me:
                        self._free -= 1
                        return Admission(self)
                    self._cond.wait(poll_s)
                return None
            finally:
                self._waiting.remove(me)
                self._cond.notify_all()  # the next in line may be the head now

    def waiting(self) -> int:
        """The starts waiting for a slot now."""
        with self._cond:
            return len(self._waiting)

    def await_waiting(self, n: int, timeout: float) -> bool:
        """Block until at least ``n`` starts wait for a slot (True), or ``timeout``
        seconds passed (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self._waiting) >= n, timeout)

    def _release(self) -> None:
        with self._cond:
            self._free += 1
            self._cond.notify_all()


class Admission:
    """One query's slot, from :meth:`StartGate.admit` until :meth:`release` (idempotent)."""

    def __init__(self, gate: StartGate) -> None:
        self._gate = gate
        self._since = time.monotonic()
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self._gate._release()

    def release_once_started(self, query) -> None:
        """Release if ``query`` (a StreamingQuery) is past its start-up
        (:func:`past_start_up`) or held its slot :data:`START_HOLD_S` seconds. Called by
        the runner's watch loop while held."""
        if not self.held:
            return
        if time.monotonic() - self._since >= START_HOLD_S or _started(query):
            self.release()


def past_start_up(active: bool, last_progress, status: dict) -> bool:
    """True if a query is past its start-up (module docstring): it ended (not
    ``active``), Spark reported a batch (``last_progress`` not None), or its status
    (``StreamingQuery.status``: ``{"message": str, "isDataAvailable": bool,
    "isTriggerActive": bool}``) says a trigger planned a batch ("Processing new data",
    or data available) or ended without one ("Waiting for data to arrive", "Waiting
    for next trigger", with no trigger active; before its first trigger Spark says
    "Initializing sources")."""
    if not active or last_progress is not None:
        return True
    message = str(status.get("message", ""))
    if status.get("isDataAvailable") or message.startswith("Processing"):
        return True
    return not status.get("isTriggerActive") and message.startswith("Waiting")


def _started(query) -> bool:
    try:
        return past_start_up(query.isActive, query.lastProgress, query.status)
    except Exception:  # noqa: BLE001 - a query that died meanwhile: it holds nothing
        return True
