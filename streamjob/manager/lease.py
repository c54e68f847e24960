"""The lease side of ``streamjob server`` (:class:`LeaseMixin` of
:class:`~streamjob.manager.server.JobServer`): taking, renewing and losing the job
manager lease, fencing, and keeping a standby warm (DESIGN §8, issue 19).

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

A standby also keeps itself warm: once Spark started, it runs one throwaway
micro-batch (:func:`streamjob.spark.warmup.warm_up`) through the Python data-source
path a Kafka job takes, and says so (``standby warm: ...``).
"""

from __future__ import annotations

import logging
import time

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


class LeaseMixin:
    """Lease, fencing and warm standby of :class:`~streamjob.manager.server.JobServer`
    (module docstring); uses its attributes (``catalog``, ``manager``, ``holding``,
    ``_deadline``, ``_lock``, ...)."""

    def _await_lease(self) -> None:
        """``until_idle`` needs the lease: wait for it up to one TTL and a second (the
        lease of a job manager that just died expires meanwhile); an error if a live
        server keeps it."""
        deadline = time.monotonic() + self.lease_ttl_ms / 1000 + 1.0
        while not self.holding and not self._stop.is_set() and time.monotonic() < deadline:
            self._stop.wait(self._standby_wait(self.renew_ms / 1000))
            self._renew()
        if not self.holding:
            holder = self.catalog.lease_holder()
            raise StreamJobError(
                f"server {holder.server_id if holder else '?'} holds the job manager lease "
                "and runs the jobs; --until-idle needs the lease (stop that server, or let "
                "it run the jobs)")

    def _start_spark(self) -> None:
        """Start Spark (standbys too), then, unless this server already holds the lease
        or warm-up is off, run the throwaway batch (module docstring)."""
        try:
            self.manager.spark()
        except Exception as exc:  # noqa: BLE001 - the first job start raises it again
            log.error("server %s: Spark did not start: %s", self.server_id, exc)
            return
        if not self.warm_up or self.holding or self._stop.is_set():
            return
        from ..spark.warmup import warm_up

        admission = self.manager.start_gate.admit(self._stop)  # not beside a job's start
        if admission is None:
            return
        try:
            self.warm = warm_up(self.manager.spark())
        except Exception as exc:  # noqa: BLE001 - a standby that is not warm still serves
            log.warning("server %s: the warm-up batch failed: %s", self.server_id, exc)
            return
        finally:
            admission.release()
        self._echo(f"server {self.server_id}: standby warm: Spark up, a throwaway batch "
                   f"read {self.warm.rows} rows in {len(self.warm.worker_pids)} Python "
                   f"worker(s) in {self.warm.seconds:.1f} s")

    def _standby_wait(self, every: float) -> float:
        """Seconds until this server should try the lease again: ``every``, or sooner
        when the holder's lease expires sooner (read from the catalog)."""
        if self.holding:
            return every
        try:
            left = (self._lease_catalog or self.catalog).lease_remaining_ms()
        except StreamJobError:
            return every
        return min(every, left / 1000 + 0.005)

    def _keep_lease(self) -> None:
        every = self.renew_ms / 1000
        while not self._lease_done.is_set():
            self._lease_kick.wait(self._standby_wait(every))
            self._lease_kick.clear()
            if self._lease_done.is_set():
                return
            self._renew()
            if self.holding and time.monotonic() - self._last_prune > self.PRUNE_EVERY_S:
                self._last_prune = time.monotonic()
                try:
                    pruned = self._lease_catalog.prune_servers(max(30_000, 3 * self.lease_ttl_ms))
                    for sid in pruned:
                        log.info("server %s: removed dead server %s", self.server_id, sid)
                except StreamJobError as exc:
                    log.debug("pruning servers failed: %s", exc)

    def _renew(self) -> None:
        """Heartbeat and take/renew the lease once (the lease thread's step)."""
        import os
        import socket

        cat = self._lease_catalog or self.catalog
        sent = time.monotonic()
        try:
            if not cat.heartbeat(self.server_id):
                cat.register_server(self.server_id, socket.gethostname(), os.getpid(),
                                    self.spark_master)
            held = cat.acquire_lease(self.server_id, self.lease_ttl_ms)
        except StreamJobError as exc:
            if not self._outage:
                log.warning("server %s: cannot renew the lease: %s", self.server_id, exc)
                self._outage = True
            return
        if self._outage:
            log.warning("server %s: the catalog answers again", self.server_id)
            self._outage = False
        if not held and self._release_owned:
            # fenced, and another server holds the lease: the jobs we owned (their queries
            # stopped when we were fenced) are free for it at once, though we live on
            try:
                released = cat.release_jobs(self.server_id)
                self._release_owned = False
                if released:
                    log.warning("server %s: released %d job(s) to the lease holder",
                                self.server_id, released)
            except StreamJobError as exc:
                log.warning("server %s: jobs not released yet: %s", self.server_id, exc)
        with self._lock:
            deadline = sent + self.lease_ttl_ms / 1000
            if held and not self.holding and deadline - self._margin <= time.monotonic():
                # the renewal took so long (a stalled catalog) that the lease would be
                # fenced at once: not taken into use; the next renewal, sent now, counts
                return
            if held:
                self._deadline = deadline
                self._release_owned = False  # ours again: we restart them ourselves
                if not self.holding and not self._stop.is_set():
                    self.holding = True
                    self._standby_for = None
                    mark("lease taken")
                    self._echo(f"server {self.server_id}: active (holds the job manager lease)")
                    if self._watcher is not None:
                        self._watcher.wake()
            elif self.holding:
                self._fence("another server holds the lease now")

    def _watchdog(self) -> None:
        while not self._lease_done.wait(0.1):
            # read without the lock (the lock holder may be a slow catalog call's caller);
            # _fence re-checks under it
            if self.holding and time.monotonic() > self._deadline - self._margin:
                self._fence("the lease could not be renewed in time")

    def _fence(self, why: str) -> None:
        """Lost the lease: stop every job at once, writing nothing more (module doc).
        The fenced runners count as stopping until they ended, so that no job of theirs
        starts again here while its old query still stops."""
        with self._lock:
            if not self.holding:
                return
            self.holding = False
            self._release_owned = False  # not before the queries stopped (below)
            runners = self.manager.fence()
            stopping = [r for r, _w in list(self._stopping.values())]
            helpers = [h for h in (r.fence() for r in runners + stopping) if h is not None]
            for runner in runners:
                self._stop_job(runner, graceful=False, why="fenced")
        deadline = time.monotonic() + 30
        for helper in helpers:  # the queries, not the runner threads (maybe stuck on the catalog)
            helper.join(max(0.0, deadline - time.monotonic()))
        if any(h.is_alive() for h in helpers):
            log.error("server %s: a fenced query did not stop within 30 s; its jobs stay "
                      "owned by this process until it exits", self.server_id)
        else:
            with self._lock:
                self._release_owned = not self.holding
        self._echo(f"server {self.server_id}: {why}: stopped {len(runners)} job(s) at once "
                   "(fenced)")
        log.warning("server %s fenced: %s", self.server_id, why)

    def _note_standby(self) -> None:
        """A standby's pass: say once per holder who holds the lease; if nobody holds a
        live lease (released at a clean exit, PostgreSQL NOTIFY or the poll woke us), let
        the lease thread try it now."""
        try:
            holder = self.catalog.lease_holder()
        except StreamJobError:
            return
        if holder is None:
            self._lease_kick.set()
        elif holder.server_id not in (self._standby_for, self.server_id):
            self._standby_for = holder.server_id
            self._echo(f"standby: server {holder.server_id} holds the lease")
