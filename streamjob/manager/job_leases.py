"""The job leases a sharing server holds (``streamjob server --share``, issue 33, DESIGN
§8): :class:`JobLeases` takes, renews, releases and loses them, and fences a job whose
lease it lost.

Timing, per job, for a lease of TTL ``ttl`` renewed every ``renew`` (the same
``--lease-ttl`` and ``--lease-renew`` as the manager lease, :mod:`.lease`):

* all the server's job leases are renewed in one catalog transaction every ``renew``
  (:meth:`~streamjob.catalog.placement.PlacementMixin.renew_job_leases`, a
  compare-and-set on each lease's epoch);
* the server counts a job's lease as held until ``ttl`` after it *sent* the latest
  renewal that renewed it (its own monotonic clock; the database recorded a later
  expiry), and a watchdog fences the job when less than ``min(2 s, ttl/4)`` of that is
  left: its query stops at once and the runner writes nothing more. Another server may
  take the lease only after the database's expiry, so a server that lives (not frozen)
  has stopped the job's query before anyone else may start it;
* a renewal that finds the lease at another holder or epoch fences the job at once;
* a server that lives (its heartbeat younger than a TTL) keeps even an expired lease
  from the others until it released it, which it does once the fenced job's query
  stopped: two queries of one job never overlap; a server that died or froze stops
  beating, and the others take its leases about a TTL after its last renewal;
* a server frozen past its leases (SIGSTOP, a long GC pause) fences its jobs the moment
  it resumes (the watchdog's first pass); a write its Spark query makes meanwhile is
  fenced by the sinks' exactly-once markers, as at a takeover of the manager lease
  (docs/design.md §8).

:attr:`JobLeases.lock` orders taking, losing and using a job's lease: a job is started
only under it and while :meth:`JobLeases.holds` it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Sequence

from ..catalog import Catalog
from ..exceptions import StreamJobError

log = logging.getLogger(__name__)


class JobLeases:
    """The job leases one sharing server holds (module docstring).

    Args:
        catalog: the catalog; renewals run on a clone of it (:meth:`open`).
        holder: the server's id (``servers.server_id``).
        ttl_ms: each lease's time to live, ms (> 0).
        renew_ms: ms between two renewals (at most ``ttl_ms / 2``).
        on_lost: ``(job uid, why) -> None``, called under :attr:`lock` when a job's
            lease is lost: stops the job's query at once (fenced).
        echo: where one-line reports go.

    Attributes:
        lock: held while a lease is taken, lost or used to start a job.
        losses: how many job leases this server lost (the ``lease losses`` metric).
    """

    def __init__(self, catalog: Catalog, holder: str, ttl_ms: int, renew_ms: int,
                 on_lost: Callable[[str, str], None],
                 echo: Callable[[str], None] = log.info) -> None:
        self.catalog = catalog
        self.holder = holder
        self.ttl_ms = ttl_ms
        self.renew_ms = renew_ms
        self.lock = threading.RLock()
        self.losses = 0
        self._on_lost = on_lost
        self._echo = echo
        self._epochs: dict[str, int] = {}        # uid -> epoch held
        self._deadlines: dict[str, float] = {}   # uid -> monotonic end of the lease
        self._margin = min(2.0, ttl_ms / 4000)
        self._done = threading.Event()
        self._threads: list[threading.Thread] = []
        self._own: Catalog | None = None
        self._outage = False

    # ------------------------------------------------------------- lifecycle

    def open(self, own: Catalog | None = None) -> None:
        """Open the renewals' own catalog connection: a clone of the catalog, or
        ``own`` when given (closed by :meth:`close`)."""
        self._own = own if own is not None else self.catalog.clone()

    def start(self) -> None:
        """Start the renewal and watchdog threads (daemons; :meth:`stop` ends them)."""
        for target, name in ((self._keep, "job-leases"), (self._watchdog, "job-lease-watchdog")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        """End the threads (waits up to 10 s for each); leases stay until released."""
        self._done.set()
        for t in self._threads:
            t.join(10)
        self._threads.clear()

    def close(self) -> None:
        """Close the renewals' connection."""
        own, self._own = self._own, None
        if own is not None and own is not self.catalog:
            own.close()

    # ------------------------------------------------------------- leases

    def held(self) -> dict[str, int]:
        """``{job uid: epoch}`` of the leases this server counts as held."""
        with self.lock:
            return dict(self._epochs)

    def holds(self, uid: str) -> bool:
        """True while the job's lease is held and not about to be fenced."""
        with self.lock:
            return uid in self._epochs and time.monotonic() < self._deadlines[uid] - self._margin

    def acquire(self, uid: str, live_within_ms: int,
                presumed_dead: Sequence[str] = ()) -> int | None:
        """Take job ``uid``'s lease (:meth:`~streamjob.catalog.placement.PlacementMixin.
        acquire_job_lease`; an expired lease of a sharing server whose heartbeat is
        younger than a TTL is left to it: it releases the lease once the fenced query
        stopped); returns its epoch, or None when refused. Raises CatalogError if the
        catalog cannot be reached."""
        sent = time.monotonic()
        epoch = self.catalog.acquire_job_lease(uid, self.holder, self.ttl_ms, live_within_ms,
                                               presumed_dead, holder_live_ms=self.ttl_ms)
        if epoch is None:
            return None
        with self.lock:
            if sent + self.ttl_ms / 1000 - self._margin <= time.monotonic():
                # the catalog took so long to answer that the lease would be fenced at
                # once: given up again (it is free for whoever asks next)
                self.catalog.release_job_lease(uid, self.holder, epoch)
                return None
            self._epochs[uid] = epoch
            self._deadlines[uid] = sent + self.ttl_ms / 1000
        return epoch

    def release(self, uid: str, epoch: int | None = None, moved: bool = False) -> None:
        """Give job ``uid``'s lease up (its query stopped), at ``epoch`` or the one
        held; another server may take it at once. ``moved``: a hand-over (rebalancing),
        counted in the catalog. Catalog errors are logged (the lease then expires)."""
        with self.lock:
            held = self._epochs.pop(uid, None)
            self._deadlines.pop(uid, None)
        epoch = epoch if epoch is not None else held
        if epoch is None:
            return
        try:
            (self._own or self.catalog).release_job_lease(uid, self.holder, epoch, moved=moved)
        except StreamJobError as exc:
            log.warning("server %s: lease of job %s not released: %s", self.holder, uid, exc)

    def renew(self) -> None:
        """Renew every held lease once, in one transaction; fence each job whose lease
        another server took meanwhile (the renewal thread's step)."""
        with self.lock:
            snapshot = dict(self._epochs)
        if not snapshot:
            return
        sent = time.monotonic()
        try:
            renewed = (self._own or self.catalog).renew_job_leases(self.holder, self.ttl_ms,
                                                                   snapshot)
        except StreamJobError as exc:
            if not self._outage:
                log.warning("server %s: cannot renew its job leases: %s", self.holder, exc)
                self._outage = True
            return
        self._outage = False
        with self.lock:
            for uid, epoch in snapshot.items():
                if self._epochs.get(uid) != epoch:
                    continue  # released or lost meanwhile
                if uid in renewed:
                    self._deadlines[uid] = sent + self.ttl_ms / 1000
                else:
                    self._lose(uid, "another server took its lease")

    # ------------------------------------------------------------- threads

    def _keep(self) -> None:
        while not self._done.wait(self.renew_ms / 1000):
            self.renew()

    def _watchdog(self) -> None:
        while not self._done.wait(0.1):
            now = time.monotonic()
            with self.lock:
                late = [u for u, d in self._deadlines.items() if now > d - self._margin]
                for uid in late:
                    self._lose(uid, "its lease could not be renewed in time")

    def _lose(self, uid: str, why: str) -> None:
        """Lost job ``uid``'s lease (under :attr:`lock`): forget it and fence the job."""
        if self._epochs.pop(uid, None) is None:
            return
        self._deadlines.pop(uid, None)
        self.losses += 1
        log.warning("server %s: job %s fenced: %s", self.holder, uid, why)
        self._on_lost(uid, why)
