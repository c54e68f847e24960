"""Catalog methods for databases (issue 16): CREATE / SHOW / DROP DATABASE.

Streams, tables and jobs name their database in their own rows (``default.s``); the
``databases`` table (revision 0008) records the databases declared by CREATE DATABASE.
A database *exists* when it is ``default`` (always), declared, or holds an object (a
catalog from before revision 0008, or an object created as ``db.name`` without CREATE
DATABASE, which streamjob still accepts, as it did before).
"""

from __future__ import annotations

from sqlalchemy import delete, func, select

from streamjob.catalog.engine import CatalogEngine, Conflict, now_utc
from streamjob.catalog.models import Database, Function, Job, JobDependency, Stream, Table
from streamjob.exceptions import ObjectExistsError, ObjectInUseError, ObjectNotFoundError

__all__ = ["DEFAULT", "DatabasesMixin"]

#: The database that always exists and cannot be dropped (Hive's and Flink's ``default``).
DEFAULT = "default"


class DatabasesMixin(CatalogEngine):
    """``create_database``, ``database_exists``, ``list_databases``, ``drop_database``."""

    def create_database(self, name: str, if_not_exists: bool = False) -> bool:
        """Declare a database. True if created; False if it existed and ``if_not_exists``.

        Raises:
            ObjectExistsError: it exists (declared, ``default``, or holding objects).
        """
        try:
            with self._tx(write=True) as session:
                if self._database_exists(session, name):
                    if if_not_exists:
                        return False
                    raise ObjectExistsError(f"database {name} already exists")
                session.add(Database(name=name, created_at=now_utc()))
                self._notify(session, "database")
        except Conflict:
            if if_not_exists:
                return False
            raise ObjectExistsError(f"database {name} already exists") from None
        return True

    def database_exists(self, name: str) -> bool:
        """True for ``default``, a declared database, or one holding an object."""
        with self._tx() as session:
            return self._database_exists(session, name)

    @staticmethod
    def _database_exists(session, name: str) -> bool:
        if name == DEFAULT:
            return True
        for model in (Database, Stream, Table, Job, Function):
            column = model.name if model is Database else model.database
            if session.scalar(select(column).where(column == name).limit(1)) is not None:
                return True
        return False

    def list_databases(self) -> list[tuple[str, int, int, int]]:
        """Every database, sorted by name: ``(name, streams, tables, jobs)`` counts."""
        with self._tx() as session:
            counts: dict[str, list[int]] = {DEFAULT: [0, 0, 0]}
            for name in session.scalars(select(Database.name)):
                counts.setdefault(name, [0, 0, 0])
            for i, model in enumerate((Stream, Table, Job)):
                rows = session.execute(select(model.database, func.count()).group_by(model.database))
                for name, n in rows:
                    counts.setdefault(name, [0, 0, 0])[i] = n
        return [(name, *counts[name]) for name in sorted(counts)]

    def drop_database(self, name: str, if_exists: bool = False, cascade: bool = False) -> bool:
        """Drop a database. True if dropped; False if missing and ``if_exists``.

        Without ``cascade`` it must be empty; with ``cascade`` its streams, tables and
        functions are dropped with it, in one transaction. Never its stream jobs: a database
        holding a job (whose checkpoints would go too) is refused either way, as is one
        whose stream or table a job of another database uses.

        Raises:
            ObjectNotFoundError: it does not exist (without ``if_exists``).
            ObjectInUseError: ``default``; it holds objects (without ``cascade``), a job,
                or an object another database's job uses; names them.
        """
        if name == DEFAULT:
            raise ObjectInUseError("the database default cannot be dropped")
        with self._tx(write=True) as session:
            if not self._database_exists(session, name):
                if if_exists:
                    return False
                raise ObjectNotFoundError(f"database {name} does not exist")
            jobs = session.scalars(select(Job.name).where(Job.database == name).order_by(Job.name)).all()
            if jobs:
                raise ObjectInUseError(
                    f"cannot drop database {name}: it holds stream job(s) "
                    f"{', '.join(f'{name}.{j}' for j in jobs[:5])}; drop them first")
            objects = [f"{kind} {name}.{n}" for kind, model in (("stream", Stream), ("table", Table),
                                                                ("function", Function))
                       for n in session.scalars(select(model.name).where(model.database == name)
                                                .order_by(model.name))]
            if objects and not cascade:
                raise ObjectInUseError(
                    f"cannot drop database {name}: it holds {len(objects)} object(s) "
                    f"({', '.join(objects[:5])}); drop them first, or DROP DATABASE {name} CASCADE")
            users = session.execute(
                select(Job.database, Job.name, JobDependency.name)
                .join(JobDependency, JobDependency.job_id == Job.id)
                .where(JobDependency.database == name).distinct()).all()
            if users:
                db, job, obj = users[0]
                raise ObjectInUseError(f"cannot drop database {name}: job {db}.{job} uses "
                                       f"{name}.{obj}; drop the job first")
            self._lock_names(session, [(name, o.split(".", 1)[1]) for o in objects])
            session.execute(delete(Stream).where(Stream.database == name))
            session.execute(delete(Table).where(Table.database == name))
            session.execute(delete(Function).where(Function.database == name))
            session.execute(delete(Database).where(Database.name == name))
            for kind in ("database", "stream", "table", "function"):
                self._notify(session, kind)
        return True
