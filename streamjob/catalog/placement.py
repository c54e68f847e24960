"""Catalog methods for sharing servers (issue 33, DESIGN §8): a lease per job with a
fencing epoch, and the share each server declares.

A server started with ``streamjob server --share`` declares its share
(:meth:`PlacementMixin.declare_share`: ``--max-jobs``, ``--labels``) and runs the jobs
whose lease it holds. A job's lease (table ``job_leases``, revision 0012) has one
holder at a time, until ``expires_at`` (the database's clock on PostgreSQL, this host's
on SQLite, as for the manager lease in :mod:`~streamjob.catalog.servers`), and an
``epoch`` that grows by one each time another server takes it.

Compare-and-set, each one write transaction (the job's row and its lease row are locked,
``SELECT ... FOR UPDATE`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite, so two servers
racing for a job serialize and exactly one wins):

* :meth:`~PlacementMixin.acquire_job_lease` takes a free, released or expired lease
  (epoch + 1, ``jobs.owner`` becomes the taker in the same transaction) and refuses a
  live lease of another server, or a job hosted by a live process that holds no job
  lease (a shell, ``streamjob run``, a server without ``--share``);
* :meth:`~PlacementMixin.renew_job_leases` extends, in one transaction, the leases the
  server still holds *at the epoch it took them*: a lease taken by another server
  meanwhile (another holder, or another epoch) is not renewed and its job is fenced by
  the caller (:mod:`streamjob.manager.job_leases`);
* :meth:`~PlacementMixin.release_job_lease` gives a lease up at its epoch (a job that
  stopped, a server shutting down), so another server may take it at once.

A change of holder notifies catalog watchers (PostgreSQL NOTIFY ``job``).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Iterable, Mapping, Sequence

from sqlalchemy import select, update

from streamjob.catalog.engine import CatalogEngine, Conflict
from streamjob.catalog.models import Job, JobLease, Server
from streamjob.catalog.records import JobLeaseInfo, ShareServer

__all__ = ["PlacementMixin", "parse_labels"]


def parse_labels(text: str | Iterable[str] | None) -> frozenset[str]:
    """Labels from ``"a, b"`` or an iterable of names: stripped, lower-cased, empty
    ones dropped (``--labels``, the job property ``streamjob.placement.labels``)."""
    if text is None:
        return frozenset()
    items = text.split(",") if isinstance(text, str) else text
    return frozenset(i.strip().lower() for i in items if i and i.strip())


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _check_ttl(ttl_ms: int) -> None:
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms <= 0:
        raise ValueError(f"ttl_ms must be a positive int (milliseconds), got {ttl_ms!r}")


class PlacementMixin(CatalogEngine):
    """Sharing servers and job leases (module docstring): ``declare_share``,
    ``share_servers``, ``sharing_server_ids``, ``acquire_job_lease``, ``renew_job_leases``,
    ``release_job_lease``, ``job_leases``."""

    def declare_share(self, server_id: str, max_jobs: int | None,
                      labels: Iterable[str] = (), cores: int | None = None,
                      memory_mb: int | None = None) -> None:
        """Mark the registered server ``server_id`` as sharing, with its capacity
        (``max_jobs``; ``cores`` and ``memory_mb`` (MiB) for its drivers; each None for
        no limit, else >= 0) and labels. Raises ValueError for a negative capacity; an
        unregistered id changes nothing."""
        for what, value in (("max_jobs", max_jobs), ("cores", cores), ("memory_mb", memory_mb)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                raise ValueError(f"{what} must be None or an int >= 0, got {value!r}")
        text = ",".join(sorted(parse_labels(labels))) or None
        with self._tx(write=True) as session:
            session.execute(update(Server).where(Server.server_id == server_id)
                            .values(shares=True, max_jobs=max_jobs, labels=text,
                                    cores=cores, memory_mb=memory_mb))

    def share_servers(self, live_within_ms: int) -> list[ShareServer]:
        """The sharing servers whose heartbeat is younger than ``live_within_ms`` (ms),
        each with the jobs whose live lease it holds; ordered by server id (so every
        server computes the same placement from the same catalog)."""
        with self._tx() as session:
            now = self._db_now(session)
            cutoff = now - timedelta(milliseconds=live_within_ms)
            rows = session.scalars(select(Server).where(Server.shares.is_(True),
                                                        Server.heartbeat_at > cutoff)
                                   .order_by(Server.server_id)).all()
            held: dict[str, list[str]] = {}
            for uid, holder in session.execute(
                    select(JobLease.job_uid, JobLease.holder)
                    .join(Job, Job.uid == JobLease.job_uid)
                    .where(JobLease.holder.is_not(None), JobLease.expires_at > now)):
                held.setdefault(holder, []).append(uid)
            return [ShareServer(server_id=r.server_id, max_jobs=r.max_jobs,
                                labels=parse_labels(r.labels),
                                jobs=tuple(sorted(held.get(r.server_id, ()))),
                                heartbeat_age_ms=max(0, int((now - _aware(r.heartbeat_at))
                                                            .total_seconds() * 1000)),
                                cores=r.cores, memory_mb=r.memory_mb,
                                spark_master=r.spark_master)
                    for r in rows]

    def sharing_server_ids(self) -> set[str]:
        """The ids of every registered sharing server, live or not (a job they own is
        ruled by its lease, not by their heartbeat)."""
        with self._tx() as session:
            return set(session.scalars(select(Server.server_id).where(Server.shares.is_(True))))

    def job_leases(self) -> list[JobLeaseInfo]:
        """Every job lease of an existing job, by job uid (placement decisions: who
        holds which job, at which epoch, since when and why)."""
        with self._tx() as session:
            now = self._db_now(session)
            rows = session.scalars(select(JobLease).join(Job, Job.uid == JobLease.job_uid)
                                   .order_by(JobLease.job_uid)).all()
            return [_lease_info(r, now) for r in rows]

    def acquire_job_lease(self, job_uid: str, server_id: str, ttl_ms: int,
                          live_within_ms: int,
                          presumed_dead: Sequence[str] = (),
                          holder_live_ms: int | None = None) -> int | None:
        """Take job ``job_uid``'s lease for ``server_id`` for ``ttl_ms`` ms; returns the
        epoch it now holds the lease at, or None when refused: the job is gone, another
        server holds a live lease, or a live process that is not a sharing server (its
        heartbeat younger than ``live_within_ms``, and not in ``presumed_dead``) hosts
        it. With ``holder_live_ms``, an expired lease whose holder is a sharing server
        with a heartbeat younger than that is left to it too: that server lives, has
        fenced the job (:mod:`streamjob.manager.job_leases`) and releases the lease once
        the job's query stopped, so no two queries of a job ever overlap; a holder that
        died or froze stops beating and loses it. Taking it from another (or a released) holder increments the epoch and makes
        ``server_id`` the job's owner in the same transaction; so does taking back an
        expired lease of ``server_id``'s own. A live lease of ``server_id``: renewed at
        the same epoch.

        Raises ValueError for a bad ``ttl_ms``, CatalogError if the catalog cannot be
        reached.
        """
        _check_ttl(ttl_ms)
        try:
            with self._tx(write=True) as session:
                now = self._db_now(session)
                job = session.scalars(select(Job).where(Job.uid == job_uid)
                                      .with_for_update()).first()
                if job is None:
                    return None
                lease = session.get(JobLease, job_uid, with_for_update=True)
                if lease is not None and lease.holder not in (None, server_id) \
                        and _aware(lease.expires_at) is not None \
                        and _aware(lease.expires_at) > now:
                    return None
                if lease is not None and lease.holder not in (None, server_id) \
                        and holder_live_ms is not None and lease.holder not in presumed_dead:
                    old = session.get(Server, lease.holder)
                    if old is not None and _aware(old.heartbeat_at) > \
                            now - timedelta(milliseconds=holder_live_ms):
                        return None  # alive: it releases the lease once the query stopped
                if job.owner and job.owner != server_id and job.owner not in presumed_dead:
                    host = session.get(Server, job.owner)
                    if host is not None and not host.shares and _aware(host.heartbeat_at) > \
                            now - timedelta(milliseconds=live_within_ms):
                        return None  # a shell, `run` or a server without --share hosts it
                live = lease is not None and lease.holder is not None \
                    and _aware(lease.expires_at) is not None and _aware(lease.expires_at) > now
                if lease is None:
                    lease = JobLease(job_uid=job_uid, epoch=1, reason="new")
                    session.add(lease)
                elif lease.holder != server_id or not live:
                    # a new holder, or ours but expired (the holder fenced the job itself):
                    # a new epoch, so that no renewal of the old one succeeds
                    lease.reason = ("new" if not lease.epoch else "released"
                                    if lease.holder is None else "orphaned")
                    if lease.holder not in (None, server_id):
                        lease.losses = (lease.losses or 0) + 1  # its holder lost it
                    lease.epoch = (lease.epoch or 0) + 1
                    lease.refusals = None  # placed anew: the next move asks again
                lease.waiting = None
                if lease.holder != server_id or not live:
                    lease.acquired_at = now
                    job.owner = server_id
                    self._notify(session, "job")
                lease.holder = server_id
                lease.expires_at = now + timedelta(milliseconds=ttl_ms)
                return int(lease.epoch)
        except Conflict:  # two servers inserted the job's first lease row at once
            return None

    def renew_job_leases(self, server_id: str, ttl_ms: int,
                         held: Mapping[str, int]) -> set[str]:
        """Renew, in one transaction, every lease ``server_id`` holds at the epoch
        ``held`` gives (``{job uid: epoch}``), for ``ttl_ms`` ms from now; returns the
        uids renewed. A uid missing from the answer was taken by another server (or
        released, or its job dropped): its job must stop at once. Raises ValueError for a
        bad ``ttl_ms``, CatalogError if the catalog cannot be reached."""
        _check_ttl(ttl_ms)
        if not held:
            return set()
        with self._tx(write=True) as session:
            now = self._db_now(session)
            rows = session.scalars(select(JobLease).where(JobLease.holder == server_id,
                                                          JobLease.job_uid.in_(list(held)))
                                   .with_for_update()).all()
            renewed = set()
            for row in rows:
                if row.epoch == held.get(row.job_uid):
                    row.expires_at = now + timedelta(milliseconds=ttl_ms)
                    renewed.add(row.job_uid)
            return renewed

    def refuse_job_lease(self, job_uid: str, server_id: str, reason: str | None) -> bool:
        """Record that sharing server ``server_id`` refuses to take job ``job_uid``, and
        why (``reason``; None withdraws its refusal): placement passes it over for that
        job (:func:`streamjob.manager.placement.place`) until the job's lease is taken
        by a server, which clears every refusal. Returns False if the job is gone.
        Raises CatalogError if the catalog cannot be reached."""
        try:
            with self._tx(write=True) as session:
                if session.scalars(select(Job.id).where(Job.uid == job_uid)).first() is None:
                    return False
                lease = session.get(JobLease, job_uid, with_for_update=True)
                if lease is None:
                    if reason is None:
                        return True
                    lease = JobLease(job_uid=job_uid, epoch=0, holder=None)
                    session.add(lease)
                refusals = _refusals(lease.refusals)
                if reason is None:
                    refusals.pop(server_id, None)
                else:
                    refusals[server_id] = reason
                lease.refusals = json.dumps(refusals, sort_keys=True) if refusals else None
                return True
        except Conflict:  # a server inserted the job's first lease row meanwhile
            return self.refuse_job_lease(job_uid, server_id, reason)

    def release_job_lease(self, job_uid: str, server_id: str, epoch: int | None = None,
                          moved: bool = False) -> bool:
        """Give job ``job_uid``'s lease up if ``server_id`` holds it (at ``epoch``, when
        given); True if it did. Another server may take it at once (NOTIFY ``job``).
        ``moved``: a hand-over at a checkpoint boundary (rebalancing), counted in the
        lease's ``moves``."""
        with self._tx(write=True) as session:
            stmt = update(JobLease).where(JobLease.job_uid == job_uid,
                                          JobLease.holder == server_id)
            if epoch is not None:
                stmt = stmt.where(JobLease.epoch == epoch)
            values = {"holder": None, "expires_at": None}
            if moved:
                values["moves"] = JobLease.moves + 1
            done = bool(session.execute(stmt.values(**values)).rowcount)
            if done:
                self._notify(session, "job")
            return done


    def set_job_waiting(self, job_uid: str, reason: str | None) -> bool:
        """Record why no sharing server can take job ``job_uid`` now (``reason``; None:
        it is not waiting any more), for ``streamjob status``; the next taking of its
        lease clears it. Returns False if the job is gone. Raises CatalogError if the
        catalog cannot be reached."""
        try:
            with self._tx(write=True) as session:
                if session.scalars(select(Job.id).where(Job.uid == job_uid)).first() is None:
                    return False
                lease = session.get(JobLease, job_uid, with_for_update=True)
                if lease is None:
                    if reason is None:
                        return True
                    lease = JobLease(job_uid=job_uid, epoch=0, holder=None)
                    session.add(lease)
                lease.waiting = reason
                return True
        except Conflict:  # a server inserted the job's first lease row meanwhile
            return self.set_job_waiting(job_uid, reason)


def _lease_info(row: JobLease, now: datetime) -> JobLeaseInfo:
    """``row`` as seen at ``now`` (the database's clock). ``live`` is the rule
    :meth:`acquire_job_lease` refuses by (a holder, and its expiry after ``now``), not
    ``remaining_ms > 0``: in the last millisecond before the expiry the whole
    milliseconds left are 0 while the lease still holds."""
    ends = _aware(row.expires_at)
    left = max(0, int((ends - now).total_seconds() * 1000)) if ends is not None else 0
    live = row.holder is not None and ends is not None and ends > now
    return JobLeaseInfo(job_uid=row.job_uid, holder=row.holder, epoch=int(row.epoch),
                        live=live, remaining_ms=left,
                        acquired_at=_aware(row.acquired_at), reason=row.reason,
                        refusals=_refusals(row.refusals), waiting=row.waiting,
                        moves=int(row.moves or 0), losses=int(row.losses or 0))


def _refusals(text: str | None) -> dict[str, str]:
    """``job_leases.refusals`` as a dict (``{}`` for NULL or a damaged value)."""
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
