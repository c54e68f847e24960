"""Catalog methods for user functions (issue 31, docs/functions.md): CREATE / DROP / SHOW
/ DESCRIBE FUNCTION.

One row per function in ``functions`` (revision 0009), unique by database and name. A
job calling a function records it among its dependencies (kind ``function``, role
``call``), so DROP FUNCTION is refused while a job calls it, naming the jobs, in the
same transaction as the delete.
"""

from __future__ import annotations

import json

from sqlalchemy import delete, select

from streamjob.catalog.engine import CatalogEngine, Conflict, now_utc, qualified
from streamjob.catalog.models import Function, Job, JobDependency, from_json_text
from streamjob.catalog.records import FunctionInfo
from streamjob.exceptions import ObjectExistsError, ObjectInUseError, ObjectNotFoundError

__all__ = ["FunctionsMixin"]


class FunctionsMixin(CatalogEngine):
    """``create_function``, ``get_function``, ``list_functions``, ``drop_function``,
    ``function_users``."""

    def create_function(self, info: FunctionInfo, if_not_exists: bool = False) -> bool:
        """Register ``info`` (its ``created_at`` is set now). True if created; False if it
        existed and ``if_not_exists``.

        Raises:
            ObjectExistsError: a function of that name exists in that database.
        """
        qname = qualified(info.database, info.name)
        try:
            with self._tx(write=True) as session:
                if session.scalar(select(Function.id).where(
                        Function.database == info.database, Function.name == info.name)) is not None:
                    if if_not_exists:
                        return False
                    raise ObjectExistsError(f"function {qname} already exists; DROP FUNCTION "
                                            f"{qname} first to register it again")
                session.add(Function(
                    database=info.database, name=info.name, kind=info.kind, source=info.source,
                    location=info.location, return_type=info.return_type,
                    parameters=None if info.parameters is None else json.dumps(list(info.parameters)),
                    code_hash=info.code_hash, owner=info.owner, temporary=info.temporary,
                    created_at=now_utc()))
                self._notify(session, "function")
        except Conflict:
            if if_not_exists:
                return False
            raise ObjectExistsError(f"function {qname} already exists") from None
        return True

    def get_function(self, database: str, name: str) -> FunctionInfo | None:
        """The function ``database.name``, or None."""
        with self._tx() as session:
            row = session.scalar(select(Function).where(Function.database == database,
                                                        Function.name == name))
            return None if row is None else _info(row)

    def list_functions(self, database: str | None = None) -> list[FunctionInfo]:
        """The functions of ``database`` (every database when None), sorted by name."""
        with self._tx() as session:
            query = select(Function).order_by(Function.database, Function.name)
            if database is not None:
                query = query.where(Function.database == database)
            return [_info(row) for row in session.scalars(query)]

    def function_users(self, database: str, name: str) -> list[str]:
        """``db.job`` of every job calling the function, sorted."""
        with self._tx() as session:
            return [qualified(db, n) for db, n in self._users(session, database, name)]

    @staticmethod
    def _users(session, database: str, name: str):
        return session.execute(
            select(Job.database, Job.name).join(JobDependency, JobDependency.job_id == Job.id)
            .where(JobDependency.kind == "function", JobDependency.database == database,
                   JobDependency.name == name)
            .distinct().order_by(Job.database, Job.name)).all()

    def drop_function(self, database: str, name: str, if_exists: bool = False) -> bool:
        """Forget a function. True if dropped; False if missing and ``if_exists``.

        Raises:
            ObjectNotFoundError: it does not exist (without ``if_exists``).
            ObjectInUseError: a job calls it; names the jobs.
        """
        qname = qualified(database, name)
        with self._tx(write=True) as session:
            self._lock_names(session, [(database, name)])
            row_id = session.scalar(select(Function.id).where(
                Function.database == database, Function.name == name).with_for_update())
            if row_id is None:
                if if_exists:
                    return False
                raise ObjectNotFoundError(f"function {qname} does not exist")
            users = self._users(session, database, name)
            if users:
                names = ", ".join(qualified(db, n) for db, n in users)
                jobs = "job" if len(users) == 1 else "jobs"
                raise ObjectInUseError(f"cannot drop function {qname}: called by {jobs} {names} "
                                       f"(drop the {jobs} first)")
            session.execute(delete(Function).where(Function.id == row_id))
            self._notify(session, "function")
        return True


def _info(row: Function) -> FunctionInfo:
    return FunctionInfo(database=row.database, name=row.name, kind=row.kind, source=row.source,
                        location=row.location, return_type=row.return_type,
                        code_hash=row.code_hash, owner=row.owner, temporary=bool(row.temporary),
                        created_at=row.created_at,
                        parameters=None if row.parameters is None else tuple(from_json_text(row.parameters, [])))
