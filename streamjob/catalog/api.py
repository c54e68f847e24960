"""The one API to the catalog database: streams, tables, jobs, runs and checkpoints.

:class:`Catalog` is safe to use from several threads of one process and from several
processes sharing the database (a SQLite file on one machine, PostgreSQL across hosts):

* every method is one short transaction and returns plain frozen records
  (:mod:`streamjob.catalog.records`), never ORM objects;
* on SQLite, writing transactions start with ``BEGIN IMMEDIATE`` (WAL journal,
  30 s busy timeout), so writers queue instead of failing on a lock upgrade;
* on PostgreSQL, operations on one stream/table name are serialized with transaction
  advisory locks (streams and tables share a name space per database, and dropping an
  object must not race with a job being created on it), and the job row is locked while
  a run or checkpoint is written for it;
* database errors become :class:`~streamjob.exceptions.CatalogError` naming the catalog
  URL (password masked) and a one-line reason.

A running job writes runs and checkpoints by its ``uid``: writes for a uid the catalog no
longer holds (the job was dropped, perhaps recreated) are silently ignored.
"""

from __future__ import annotations

from streamjob.catalog.access import AccessMixin
from streamjob.catalog.checkpoints import CheckpointsMixin
from streamjob.catalog.databases import DatabasesMixin
from streamjob.catalog.functions import FunctionsMixin
from streamjob.catalog.jobs import JobsMixin
from streamjob.catalog.objects import ObjectsMixin
from streamjob.catalog.savepoints import SavepointsMixin
from streamjob.catalog.placement import PlacementMixin
from streamjob.catalog.servers import ServersMixin
from streamjob.catalog.versions import VersionsMixin
from streamjob.catalog.watch import CatalogWatcher

__all__ = ["Catalog"]


class Catalog(ObjectsMixin, JobsMixin, CheckpointsMixin, ServersMixin, AccessMixin,
              DatabasesMixin, FunctionsMixin, SavepointsMixin, PlacementMixin,
              VersionsMixin):
    """The catalog database: streams, tables, jobs, runs and retained checkpoints.

    Args:
        url: an SQLAlchemy URL, e.g. ``sqlite:////home/me/.streamjob/catalog.db`` or
            ``postgresql+psycopg://user:pw@host/db``. A SQLite file's parent directory
            is created. ``postgresql://`` uses psycopg (3) when psycopg2 is absent.

    The schema is created when missing. Raises :class:`CatalogError` naming the URL
    (password masked) if the URL is invalid, its driver is missing, the database cannot
    be reached, or it holds a catalog of another schema version.

    Methods come in groups, one module each: connection and transactions
    (:mod:`~streamjob.catalog.engine`), streams and tables
    (:mod:`~streamjob.catalog.objects`), jobs and runs (:mod:`~streamjob.catalog.jobs`),
    checkpoints (:mod:`~streamjob.catalog.checkpoints`), job managers and their lease
    (:mod:`~streamjob.catalog.servers`), the HTTP API's tokens, the statement log and
    progress samples (:mod:`~streamjob.catalog.access`), databases
    (:mod:`~streamjob.catalog.databases`), savepoints (:mod:`~streamjob.catalog.savepoints`), the versions of a job's query
    (:mod:`~streamjob.catalog.versions`). :meth:`watcher` waits for changes made by
    other clients (:mod:`~streamjob.catalog.watch`).
    """

    def clone(self) -> "Catalog":
        """A new :class:`Catalog` on the same URL with its own connection pool (e.g. for
        a thread whose writes must not queue behind others' in one pool). An in-memory
        SQLite catalog lives in one connection: it returns itself."""
        if self._serial is not None:
            return self
        other = type(self)(self._url.render_as_string(hide_password=False))
        if self._tx_bound_ms is not None:
            other.bound_transactions(self._tx_bound_ms)
        return other

    def watcher(self, poll_s: float = 1.0) -> CatalogWatcher:
        """A :class:`~streamjob.catalog.watch.CatalogWatcher` of this catalog: waits up
        to ``poll_s`` seconds, returning early when another client changes streams,
        tables, jobs or the lease (PostgreSQL LISTEN/NOTIFY; SQLite just waits)."""
        return CatalogWatcher(self, poll_s)

    def close(self) -> None:
        """Close the connection pool. The object stays usable (it reconnects on use)."""
        self._engine.dispose()

    def __enter__(self) -> "Catalog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Catalog({self._masked!r})"
