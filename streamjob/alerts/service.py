"""The alert runner: every interval, the status snapshot and the jobs are read from the
catalog, evaluated (:class:`~streamjob.alerts.rules.AlertEvaluator`) and the transitions
delivered (:class:`~streamjob.alerts.webhook.WebhookSender`)."""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone
from typing import Callable

from ..sensitive import mask_text
from ..status import status_snapshot
from .rules import Alert, AlertEvaluator
from .webhook import WebhookSender

log = logging.getLogger(__name__)


class AlertService:
    """Evaluates every job's alert rules every ``interval_s`` seconds on a daemon thread
    and POSTs the transitions to the jobs' webhooks (issue 15).

    Use, e.g. in the job manager's server once it runs::

        alerts = AlertService(catalog, interval_s=5).start()
        ...
        alerts.stop()          # at shutdown: the thread ends, queued alerts get one try

    A service starts once (its sender is closed by :meth:`stop`); make a new one to
    start again. ``run_once(now)`` evaluates one cycle without the thread.

    Each cycle reads ``catalog.list_jobs()``, :func:`streamjob.status.status_snapshot`
    and ``list_jobs()`` again, and evaluates the jobs whose uid is the same in both reads
    (a job dropped or recreated meanwhile waits for the next cycle, so a snapshot row is
    never paired with another incarnation's uid). It uses its own clone of ``catalog``
    (its own connection pool). A cycle that fails (the catalog unreachable) is logged,
    masked, at WARNING once until a cycle succeeds again, and never ends the thread.
    Jobs without ``streamjob.alert.webhook`` cost one property parse per cycle and never
    alert; in a deployment with several servers, run it in the lease holder only, or
    each server notifies (receivers can de-duplicate by fingerprint).

    Args:
        catalog: the catalog (:class:`streamjob.catalog.Catalog`).
        interval_s: seconds between cycles (> 0).
        sender: delivers the alerts (default: a :class:`WebhookSender` with its
            defaults: 3 retries after 0.5 s, 1 s, 2 s).
        clock: returns the evaluation time, an aware UTC datetime (tests).
        active: ``() -> bool``; a cycle runs only while it returns True (the job
            manager's ``holding``: only the lease holder alerts). Default: always.

    Raises:
        ValueError: ``interval_s`` <= 0.
    """

    def __init__(self, catalog, interval_s: float = 5.0, sender: WebhookSender | None = None,
                 clock: Callable[[], datetime] | None = None,
                 active: Callable[[], bool] | None = None) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.catalog = catalog
        self.interval_s = interval_s
        self.sender = sender if sender is not None else WebhookSender()
        self.evaluator = AlertEvaluator()
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._active = active or (lambda: True)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._db = None
        self._failing = False

    def start(self) -> "AlertService":
        """Start the thread (the first cycle runs at once); returns self.

        Raises:
            RuntimeError: already started.
        """
        if self._thread is not None:
            raise RuntimeError("the alert service is already started")
        self._db = self.catalog.clone()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="streamjob-alerts", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread and the sender, waiting up to ``timeout`` seconds for each;
        idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.sender.close(timeout)
        if self._db is not None and self._db is not self.catalog:
            self._db.close()

    def run_once(self, now: datetime | None = None) -> list[Alert]:
        """One cycle: read, evaluate at ``now`` (default: the clock), queue the
        transitions for delivery; returns them.

        Raises:
            CatalogError: the catalog cannot be read (the thread logs it instead).
        """
        db = self._db or self.catalog
        before = {job.uid for job in db.list_jobs()}
        snapshot = status_snapshot(db)
        jobs = [job for job in db.list_jobs() if job.uid in before]
        alerts = self.evaluator.evaluate(snapshot, now or self._clock(), jobs)
        for alert in alerts:
            log.info("alert %s: %s (%s)", alert.status, alert.summary, alert.rule)
            self.sender.send(alert)
        return alerts

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self._active():
                    self.run_once()
                if self._failing:
                    self._failing = False
                    log.info("alerts are evaluated again")
            except Exception as exc:  # the catalog may be down for a while
                level = logging.DEBUG if self._failing else logging.WARNING
                self._failing = True
                log.log(level, "alerts not evaluated: %s (retried every %g s)",
                        mask_text(f"{type(exc).__name__}: {exc}"), self.interval_s)
            self._stop.wait(self.interval_s)
