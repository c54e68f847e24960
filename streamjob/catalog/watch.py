"""Waiting for catalog changes made by other clients (the job manager's wake-up call).

A job manager reconciles what it runs with the catalog at least once per poll interval
(1 s) and at once when another client changes streams, tables, jobs or the manager lease:

* on PostgreSQL, every such write runs ``SELECT pg_notify('streamjob_catalog', kind)`` in
  its own transaction (delivered at commit; :meth:`CatalogEngine._notify`), and a
  :class:`CatalogWatcher` LISTENs on a dedicated connection (psycopg 3, autocommit,
  opened from the catalog URL) and wakes on the first notification of its own catalog.
  NOTIFY channels are per database, not per schema, so the payload is
  ``<schema>:<kind>`` and a watcher ignores other schemas' notifications (catalogs in
  several schemas of one database do not wake each other).
  Progress, checkpoint and heartbeat writes do not notify (too frequent).
* on SQLite (one machine), the watcher just waits the poll interval.

If the LISTEN connection cannot be opened or breaks, the watcher falls back to waiting
the poll interval and tries to listen again every 5 s; a wait that (re)connected returns
True, since changes may have been missed meanwhile. :meth:`CatalogWatcher.wake` ends a
wait early from another thread or a signal handler (a self-pipe).
"""

from __future__ import annotations

import logging
import os
import select
import time
from typing import Any

from streamjob.catalog.engine import NOTIFY_CHANNEL, CatalogEngine

__all__ = ["CatalogWatcher"]

log = logging.getLogger(__name__)

#: Seconds between attempts to open the LISTEN connection after a failure.
RETRY_S = 5.0


class CatalogWatcher:
    """Waits for catalog changes; see the module docstring.

    Args:
        catalog: the catalog to watch (a :class:`~streamjob.catalog.api.Catalog`; its
            connection half, :class:`~streamjob.catalog.engine.CatalogEngine`, is all the
            watcher uses: its URL names the database to LISTEN on).
        poll_s: the longest wait, in seconds, of :meth:`wait` without a timeout.

    Not thread-safe except :meth:`wake`; one thread waits.
    """

    def __init__(self, catalog: CatalogEngine, poll_s: float = 1.0) -> None:
        self.catalog = catalog
        self.poll_s = float(poll_s)
        self._pg = catalog.dialect == "postgresql"
        self._conn: Any = None
        self._schema: str | None = None  # the catalog's schema (PostgreSQL), read at LISTEN
        self._retry_at = 0.0
        self._failed_once = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    @property
    def listening(self) -> bool:
        """True while a LISTEN connection is open (PostgreSQL only)."""
        return self._conn is not None

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block up to ``timeout_s`` seconds (default: the poll interval).

        Returns True early when a change was notified, :meth:`wake` was called, or the
        LISTEN connection was (re)opened (changes may have been missed); False when the
        time passed quietly. Never raises for database trouble (it is logged and the
        wait degrades to polling).
        """
        timeout = self.poll_s if timeout_s is None else max(0.0, float(timeout_s))
        deadline = time.monotonic() + timeout
        fresh = False
        if self._pg and self._conn is None and time.monotonic() >= self._retry_at:
            fresh = self._listen()
        if fresh:
            return True
        conn = self._conn
        if conn is not None and self._drain(conn):
            return True
        fds = [self._wake_r] + ([conn.fileno()] if conn is not None else [])
        try:
            ready, _, _ = select.select(fds, [], [], timeout)
        except (OSError, ValueError):  # a closed socket: listen again later
            self._drop()
            return True
        if self._wake_r in ready:
            self._clear_wake()
            return True
        if conn is not None and ready:
            if self._drain(conn):
                return True
            left = deadline - time.monotonic()  # another schema's: wait on
            return left > 0 and self.wait(left)
        return False

    def wake(self) -> None:
        """End the current (or next) :meth:`wait` early; safe from any thread and from a
        signal handler."""
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):  # the pipe is full: a wake is pending anyway
            pass

    def close(self) -> None:
        """Close the LISTEN connection and the wake pipe."""
        self._drop()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> "CatalogWatcher":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- internals

    def _listen(self) -> bool:
        try:
            import psycopg
        except ImportError:  # pragma: no cover - psycopg is a dependency
            self._pg = False
            log.warning("psycopg is not installed: catalog changes are polled every %s s",
                        self.poll_s)
            return False
        engine = self.catalog._engine  # noqa: SLF001 - the catalog's own URL and dialect
        try:
            if engine.url.get_driver_name() == "psycopg":
                cargs, cparams = engine.dialect.create_connect_args(engine.url)
            else:
                cargs = []
                cparams = engine.url.translate_connect_args(username="user", database="dbname")
                cparams.update({k: v for k, v in engine.url.query.items() if isinstance(v, str)})
            cparams.setdefault("connect_timeout", 10)
            conn = psycopg.connect(*cargs, **cparams, autocommit=True)
            self._schema = conn.execute("SELECT current_schema()").fetchone()[0]
            conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
        except Exception as exc:  # noqa: BLE001 - degrade to polling, retry later
            self._retry_at = time.monotonic() + RETRY_S
            if not self._failed_once:
                log.warning("cannot LISTEN on catalog %s (polling every %s s meanwhile): %s",
                            self.catalog.url, self.poll_s, str(exc).splitlines()[0] if str(exc)
                            else type(exc).__name__)
            self._failed_once = True
            return False
        self._conn = conn
        self._failed_once = False
        return True

    def _ours(self, payload: str) -> bool:
        """True for a notification of this catalog's schema (``<schema>:<kind>``; a
        payload without a schema, from an older streamjob, counts too)."""
        schema, sep, _ = (payload or "").rpartition(":")
        return not sep or schema == self._schema

    def _drain(self, conn: Any) -> bool:
        """Read every notification that arrived; True if one was this catalog's (or the
        connection broke: look now, listen again later)."""
        try:
            return any(self._ours(n.payload) for n in list(conn.notifies(timeout=0)))
        except Exception as exc:  # noqa: BLE001 - a broken connection: listen again later
            log.warning("catalog LISTEN connection lost: %s", exc)
            self._drop()
            self._retry_at = time.monotonic() + 1.0
            return True

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass

    def _clear_wake(self) -> None:
        try:
            while os.read(self._wake_r, 512):
                pass
        except (BlockingIOError, OSError):
            pass
