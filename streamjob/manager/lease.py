"""The job manager lease of ``streamjob server``: :class:`Lease`, held by
:class:`~streamjob.manager.server.JobServer`, takes, renews and loses it and fences its
holder (DESIGN §8, issue 19).

Timing, for a lease of TTL ``ttl`` (``--lease-ttl``, ms) renewed every ``renew``
(``--lease-renew``, ms; default ``min(poll, ttl/3)``, at most ``ttl/2``):

* the holder renews every ``renew``; it counts the lease as held until ``ttl`` after it
  *sent* its latest successful renewal, and fences itself (every job stopped at once,
  nothing more written) when less than ``min(2 s, ttl/4)`` of that is left without a
  renewal. A renewal may thus stall for up to ``ttl - renew - min(2 s, ttl/4)`` (10 s
  TTL, 1 s renewal: 7 s; 3 s TTL, 1 s renewal: 1.25 s) before the holder fences itself
  and its jobs restart once the catalog answers (a spurious failover; never two
  runners, see below);
* a standby reads when the holder's lease expires (the database's clock,
  :meth:`~streamjob.catalog.servers.ServersMixin.lease_remaining_ms`) and tries to take
  it at that moment rather than at its next renewal period: a takeover after SIGKILL
  begins ``ttl`` after the dead holder's last renewal, i.e. ``ttl - renew`` to ``ttl``
  after the kill. A lease released at a clean exit is taken at once on PostgreSQL
  (NOTIFY wakes the standby) and within ``poll`` on SQLite;
* never two runners of one job: besides fencing, the new holder leaves a job whose
  owner is still a live registered process (heartbeat younger than 15 s and, on this
  host, its pid alive: :func:`~streamjob.manager.liveness.live_owner`) to that owner; a
  fenced holder gives its jobs up (``release_jobs``) once its queries stopped. So a
  short TTL costs spurious failovers under catalog stalls, never a double run.

"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from ..catalog import Catalog
from ..catalog.models import MANAGER_LEASE
from ..exceptions import StreamJobError
from ..phases import mark

log = logging.getLogger(__name__)


def renew_every_ms(ttl_ms: int, renew_ms: int | None, poll_s: float) -> int:
    """The renewal period in ms: ``renew_ms`` if given, else ``min(poll_s, ttl/3)``.

    Raises:
        ValueError: ``renew_ms`` not a positive int, or above ``ttl_ms / 2`` (one missed
            renewal would then fence the holder).
    """
    if renew_ms is None:
        return max(1, int(min(poll_s * 1000, ttl_ms / 3)))
    if isinstance(renew_ms, bool) or not isinstance(renew_ms, int) or renew_ms <= 0:
        raise ValueError(f"lease_renew_ms must be a positive int, got {renew_ms!r}")
    if renew_ms * 2 > ttl_ms:
        raise ValueError(f"the lease renewal ({renew_ms} ms) must be at most half its TTL "
                         f"({ttl_ms} ms)")
    return renew_ms


class Lease:
    """The lease a job manager holds to run jobs, with its renewal and fencing (module
    docstring): what it leases (``name``), who holds it (``holder``), whether it is held
    and until when, and the two threads that keep it (renewal, watchdog).

    Args:
        catalog: the catalog; the lease's renewals run on a clone of its own
            (:meth:`open`), so a busy job manager's pool never delays a renewal.
        holder: the id of the job manager taking the lease (``servers.server_id``).
        ttl_ms: the lease's time to live, ms (> 0).
        renew_ms: ms between two renewals (:func:`renew_every_ms`).
        heartbeat: the holder's own heartbeat, sent before each renewal on the lease's
            connection (``Catalog -> None``; registers the holder again if it was pruned).
        on_taken: called (under :attr:`lock`) when the lease is taken into use.
        on_lost: called (under :attr:`lock`) when the lease is lost: stops the holder's
            jobs at once and returns ``(threads stopping their queries, jobs stopped)``.
        shutdown: set when the holder shuts down: it takes the lease no more.
        echo: where one-line reports go.
        name: what is leased: the catalog's job manager lease (``leases.name``), whose
            holder runs every job.

    :attr:`lock` orders taking, losing and using the lease: the holder starts a job
    under it (:meth:`guard`), so a job never starts after the lease was lost.
    """

    #: Seconds between two prunes of dead servers' rows by the lease holder.
    PRUNE_EVERY_S = 30.0
    #: Longest wait, in seconds, for a fenced holder's queries to stop.
    FENCE_JOIN_S = 30.0

    def __init__(self, catalog: Catalog, holder: str, ttl_ms: int, renew_ms: int,
                 heartbeat: Callable[[Catalog], None], on_taken: Callable[[], None],
                 on_lost: Callable[[], tuple[list[threading.Thread], int]],
                 shutdown: threading.Event, echo: Callable[[str], None],
                 name: str = MANAGER_LEASE) -> None:
        self.name = name
        self.holder = holder
        self.ttl_ms = ttl_ms
        self.renew_ms = renew_ms
        self.catalog = catalog
        self.lock = threading.RLock()            # held/deadline vs. starting vs. fencing
        self.held = False                        # held: the holder may run jobs
        self._heartbeat = heartbeat
        self._on_taken = on_taken
        self._on_lost = on_lost
        self._shutdown = shutdown
        self._echo = echo
        self._deadline = 0.0                     # monotonic time the lease ends
        self._margin = min(2.0, ttl_ms / 4000)   # fence this long before it
        self._done = threading.Event()           # renewal and watchdog threads end
        self._kick = threading.Event()           # the renewal thread: try the lease now
        self._threads: list[threading.Thread] = []
        self._own_catalog: Catalog | None = None  # the clone renewals use (open/close)
        self._standby_for: str | None = None     # the holder a standby last named
        self._outage = False                     # the catalog did not answer a renewal
        self._release_owned = False              # fenced: give our jobs up once heard again
        self._last_prune = 0.0

    # ------------------------------------------------------------- lifecycle

    def open(self) -> None:
        """Open the lease's own catalog connection (renewals use it from now on)."""
        self._own_catalog = self.catalog.clone()

    def start(self) -> None:
        """Start the renewal and watchdog threads (daemons; :meth:`stop` ends them)."""
        for target, name in ((self._keep, "lease"), (self._watchdog, "lease-watchdog")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        """End the renewal and watchdog threads (waits up to 10 s for each). The lease
        stays in the catalog until it expires or the holder unregisters."""
        self._done.set()
        self._kick.set()
        for t in self._threads:
            t.join(10)
        self._threads.clear()

    def released(self) -> None:
        """The holder gave the lease up in the catalog (``unregister_server``)."""
        with self.lock:
            self.held = False

    def close(self) -> None:
        """Close the lease's own catalog connection."""
        own, self._own_catalog = self._own_catalog, None
        if own is not None and own is not self.catalog:
            own.close()

    def guard(self) -> threading.RLock:
        """The lock under which the lease is neither taken nor lost: ``with
        lease.guard(): if lease.held: ...`` starts a job only while the lease is held."""
        return self.lock

    # ------------------------------------------------------------- taking it

    def renew(self) -> None:
        """Heartbeat, then take or renew the lease once (the renewal thread's step)."""
        cat = self._own_catalog or self.catalog
        sent = time.monotonic()
        try:
            self._heartbeat(cat)
            held = cat.acquire_lease(self.holder, self.ttl_ms)
        except StreamJobError as exc:
            if not self._outage:
                log.warning("server %s: cannot renew the lease: %s", self.holder, exc)
                self._outage = True
            return
        if self._outage:
            log.warning("server %s: the catalog answers again", self.holder)
            self._outage = False
        if not held and self._release_owned:
            # fenced, and another server holds the lease: the jobs we owned (their queries
            # stopped when we were fenced) are free for it at once, though we live on
            try:
                released = cat.release_jobs(self.holder)
                self._release_owned = False
                if released:
                    log.warning("server %s: released %d job(s) to the lease holder",
                                self.holder, released)
            except StreamJobError as exc:
                log.warning("server %s: jobs not released yet: %s", self.holder, exc)
        with self.lock:
            deadline = sent + self.ttl_ms / 1000
            if held and not self.held and deadline - self._margin <= time.monotonic():
                # the renewal took so long (a stalled catalog) that the lease would be
                # fenced at once: not taken into use; the next renewal, sent now, counts
                return
            if held:
                self._deadline = deadline
                self._release_owned = False  # ours again: we restart them ourselves
                if not self.held and not self._shutdown.is_set():
                    self.held = True
                    self._standby_for = None
                    mark("lease taken")
                    self._echo(f"server {self.holder}: active (holds the job manager lease)")
                    self._on_taken()
            elif self.held:
                self._lose("another server holds the lease now")

    def await_held(self) -> None:
        """Wait for the lease up to one TTL and a second (the lease of a job manager that
        just died expires meanwhile), renewing as the renewal thread would.

        Raises:
            StreamJobError: a live job manager keeps it (named).
        """
        deadline = time.monotonic() + self.ttl_ms / 1000 + 1.0
        while not self.held and not self._shutdown.is_set() and time.monotonic() < deadline:
            self._shutdown.wait(self._standby_wait(self.renew_ms / 1000))
            self.renew()
        if not self.held:
            holder = self.catalog.lease_holder()
            raise StreamJobError(
                f"server {holder.server_id if holder else '?'} holds the job manager lease "
                "and runs the jobs; --until-idle needs the lease (stop that server, or let "
                "it run the jobs)")

    def note_standby(self) -> None:
        """A standby's pass: say once per holder who holds the lease; if nobody holds a
        live lease (released at a clean exit, PostgreSQL NOTIFY or the poll woke us), let
        the renewal thread try it now."""
        try:
            holder = self.catalog.lease_holder()
        except StreamJobError:
            return
        if holder is None:
            self._kick.set()
        elif holder.server_id not in (self._standby_for, self.holder):
            self._standby_for = holder.server_id
            self._echo(f"standby: server {holder.server_id} holds the lease")

    # ------------------------------------------------------------- threads

    def _standby_wait(self, every: float) -> float:
        """Seconds until the next try: ``every``, or sooner when the holder's lease
        expires sooner (read from the catalog)."""
        if self.held:
            return every
        try:
            left = (self._own_catalog or self.catalog).lease_remaining_ms()
        except StreamJobError:
            return every
        return min(every, left / 1000 + 0.005)

    def _keep(self) -> None:
        every = self.renew_ms / 1000
        while not self._done.is_set():
            self._kick.wait(self._standby_wait(every))
            self._kick.clear()
            if self._done.is_set():
                return
            self.renew()
            if self.held and time.monotonic() - self._last_prune > self.PRUNE_EVERY_S:
                self._last_prune = time.monotonic()
                try:
                    pruned = self._own_catalog.prune_servers(max(30_000, 3 * self.ttl_ms))
                    for sid in pruned:
                        log.info("server %s: removed dead server %s", self.holder, sid)
                except StreamJobError as exc:
                    log.debug("pruning servers failed: %s", exc)

    def _watchdog(self) -> None:
        while not self._done.wait(0.1):
            # read without the lock (the lock holder may be a slow catalog call's caller);
            # _lose re-checks under it
            if self.held and time.monotonic() > self._deadline - self._margin:
                self._lose("the lease could not be renewed in time")

    def _lose(self, why: str) -> None:
        """Lost the lease: the holder's jobs stop at once, writing nothing more (module
        docstring); once their queries stopped, the jobs are given up to the new holder
        (at the next renewal that finds one)."""
        with self.lock:
            if not self.held:
                return
            self.held = False
            self._release_owned = False  # not before the queries stopped (below)
            helpers, stopped = self._on_lost()
        deadline = time.monotonic() + self.FENCE_JOIN_S
        for helper in helpers:  # the queries, not the runner threads (maybe stuck on the catalog)
            helper.join(max(0.0, deadline - time.monotonic()))
        if any(h.is_alive() for h in helpers):
            log.error("server %s: a fenced query did not stop within 30 s; its jobs stay "
                      "owned by this process until it exits", self.holder)
        else:
            with self.lock:
                self._release_owned = not self.held
        self._echo(f"server {self.holder}: {why}: stopped {stopped} job(s) at once (fenced)")
        log.warning("server %s fenced: %s", self.holder, why)
