"""Catalog methods for job managers: registration, heartbeats and the manager lease.

Every ``streamjob server`` registers itself (:meth:`ServersMixin.register_server`), renews
its heartbeat about once a second and tries to take the lease named ``manager``
(:meth:`ServersMixin.acquire_lease`): the holder is THE active job manager, which runs
every job whose desired state is RUNNING; the others are standbys. A holder renews the
lease well before it expires; a holder that dies stops renewing, and a standby takes the
lease once it has expired. Clients ask :meth:`ServersMixin.lease_holder` whether some
server runs the jobs.

Time: lease expiry and heartbeats use the database's clock on PostgreSQL
(``clock_timestamp()``), so hosts with skewed clocks agree on when a lease expired; on
SQLite (one machine) this host's clock. A holder must itself stop treating the lease as
held ``ttl_ms`` after it *sent* its latest successful renewal, measured on its own
monotonic clock: that moment always comes before the expiry the database recorded.

Transactions: each method is one write transaction (SQLite ``BEGIN IMMEDIATE``;
PostgreSQL locks the lease row with ``SELECT ... FOR UPDATE``), so two servers racing for
the lease serialize and exactly one wins. Heartbeats do not notify catalog watchers;
a change of lease holder does (PostgreSQL NOTIFY ``lease``).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from streamjob.catalog.engine import CatalogEngine, Conflict
from streamjob.catalog.models import MANAGER_LEASE, SERVER_ID_LENGTH, Lease, Server
from streamjob.catalog.records import ServerInfo

__all__ = ["ServersMixin"]


def _check_server_id(server_id: str) -> str:
    if not isinstance(server_id, str) or not server_id or len(server_id) > SERVER_ID_LENGTH:
        raise ValueError(f"invalid server id {server_id!r}: a non-empty str of at most "
                         f"{SERVER_ID_LENGTH} characters")
    return server_id


class ServersMixin(CatalogEngine):
    """Job managers (``register_server`` ... ``prune_servers``) and the manager lease
    (``acquire_lease``, ``release_lease``, ``lease_holder``)."""

    def register_server(self, server_id: str, host: str, pid: int, spark_master: str) -> None:
        """Register (or re-register) a running job manager, started and heartbeat now.

        ``server_id`` is ``f"{host}:{pid}:{uuid4().hex[:8]}"`` by convention (at most 64
        characters); registering an id again updates its row. Raises ValueError for an
        invalid id.
        """
        _check_server_id(server_id)
        with self._tx(write=True) as session:
            now = self._db_now(session)
            row = session.get(Server, server_id, with_for_update=True)
            if row is None:
                session.add(Server(server_id=server_id, host=host, pid=int(pid),
                                   spark_master=spark_master, started_at=now, heartbeat_at=now))
            else:
                row.host, row.pid, row.spark_master, row.heartbeat_at = (
                    host, int(pid), spark_master, now)

    def heartbeat(self, server_id: str) -> bool:
        """Renew the server's heartbeat; False if it is not registered (pruned as dead,
        see :meth:`prune_servers`: it should register again), else True."""
        with self._tx(write=True) as session:
            now = self._db_now(session)
            result = session.execute(
                update(Server).where(Server.server_id == server_id).values(heartbeat_at=now))
            return bool(result.rowcount)

    def unregister_server(self, server_id: str) -> None:
        """Remove the server's row, releasing the manager lease if it holds it (a clean
        exit: a standby takes over at once). Unknown ids are ignored."""
        with self._tx(write=True) as session:
            self._release(session, server_id)
            session.execute(delete(Server).where(Server.server_id == server_id))

    def list_servers(self) -> list[ServerInfo]:
        """Every registered job manager, oldest first (a dead one stays until pruned;
        look at ``heartbeat_age_ms``, measured on the database's clock)."""
        with self._tx() as session:
            now = self._db_now(session)
            rows = session.scalars(select(Server).order_by(Server.started_at, Server.server_id))
            return [_server_info(r, now) for r in rows]

    def prune_servers(self, max_age_ms: int) -> list[str]:
        """Remove servers whose heartbeat is older than ``max_age_ms`` (dead without a
        clean exit, e.g. SIGKILL) and that do not hold a live lease; returns their ids.
        ValueError for a non-positive age."""
        if max_age_ms <= 0:
            raise ValueError(f"max_age_ms must be > 0, got {max_age_ms}")
        with self._tx(write=True) as session:
            now = self._db_now(session)
            cutoff = now - timedelta(milliseconds=max_age_ms)
            lease = session.get(Lease, MANAGER_LEASE)
            live = lease.holder if lease is not None and lease.expires_at is not None \
                and lease.expires_at > now else None
            stmt = select(Server.server_id).where(Server.heartbeat_at < cutoff)
            if live is not None:
                stmt = stmt.where(Server.server_id != live)
            dead = list(session.scalars(stmt))
            if dead:
                session.execute(delete(Server).where(Server.server_id.in_(dead)))
            return dead

    # ------------------------------------------------------------------ the lease

    def acquire_lease(self, server_id: str, ttl_ms: int) -> bool:
        """Take or renew the manager lease for ``ttl_ms`` milliseconds; True if
        ``server_id`` holds it afterwards.

        Atomic: the lease is taken if it is free, expired, or already held by
        ``server_id``, and then expires ``ttl_ms`` after now (the database's clock on
        PostgreSQL); a live lease of another server is left alone (False). Raises
        ValueError for an invalid id or a ``ttl_ms`` that is not a positive int,
        CatalogError if the catalog cannot be reached.
        """
        _check_server_id(server_id)
        if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms <= 0:
            raise ValueError(f"ttl_ms must be a positive int (milliseconds), got {ttl_ms!r}")
        try:
            with self._tx(write=True) as session:
                now = self._db_now(session)
                lease = session.get(Lease, MANAGER_LEASE, with_for_update=True)
                if lease is None:  # the migration made it; a hand-cleaned table lacks it
                    lease = Lease(name=MANAGER_LEASE)
                    session.add(lease)
                elif lease.holder not in (None, server_id) and lease.expires_at is not None \
                        and lease.expires_at > now:
                    return False
                changed = lease.holder != server_id
                lease.holder = server_id
                lease.expires_at = now + timedelta(milliseconds=ttl_ms)
                if changed:
                    self._notify(session, "lease")
                return True
        except Conflict:  # two servers inserted the missing row at once: the other won
            return False

    def release_lease(self, server_id: str) -> None:
        """Give the manager lease up if ``server_id`` holds it (else nothing happens)."""
        with self._tx(write=True) as session:
            self._release(session, server_id)

    def lease_holder(self) -> ServerInfo | None:
        """The server holding a live manager lease — the job manager that runs the jobs —
        or None if the lease is free, expired, or held by an unregistered server.

        This is how clients know whether a server runs jobs: with None, jobs whose
        desired state is RUNNING run nowhere until a server starts.
        """
        with self._tx() as session:
            now = self._db_now(session)
            row = session.scalars(
                select(Server).join(Lease, Lease.holder == Server.server_id)
                .where(Lease.name == MANAGER_LEASE, Lease.expires_at > now)
            ).first()
            return _server_info(row, now) if row is not None else None

    def lease_remaining_ms(self) -> int:
        """Milliseconds until the manager lease expires by the database's clock (0 if it
        is free or already expired): how long a standby waits before it tries to take
        the lease (``streamjob server``, takeover on expiry). Raises CatalogError if the
        catalog cannot be reached."""
        with self._tx() as session:
            now = self._db_now(session)
            lease = session.get(Lease, MANAGER_LEASE)
            if lease is None or lease.holder is None or lease.expires_at is None:
                return 0
            ends = lease.expires_at if lease.expires_at.tzinfo else lease.expires_at.replace(
                tzinfo=timezone.utc)
            return max(0, int((ends - now).total_seconds() * 1000))

    def _release(self, session: Session, server_id: str) -> None:
        lease = session.get(Lease, MANAGER_LEASE, with_for_update=True)
        if lease is not None and lease.holder == server_id:
            lease.holder = None
            lease.expires_at = None
            self._notify(session, "lease")


def _server_info(row: Server, now: datetime) -> ServerInfo:
    beat = row.heartbeat_at if row.heartbeat_at.tzinfo else row.heartbeat_at.replace(
        tzinfo=timezone.utc)
    return ServerInfo(server_id=row.server_id, host=row.host, pid=row.pid,
                      spark_master=row.spark_master, started_at=row.started_at,
                      heartbeat_at=row.heartbeat_at,
                      heartbeat_age_ms=max(0, int((now - beat).total_seconds() * 1000)))
