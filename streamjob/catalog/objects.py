"""Catalog methods for streams and tables (one name space per database).

:class:`ObjectsMixin` creates, reads, lists and drops streams and tables. Creating or
dropping takes the per-name lock (:meth:`~CatalogEngine._lock_names`) so that it cannot
race with a job being created on the same name; a drop is refused while any job depends
on the object. Every create and drop notifies catalog watchers (PostgreSQL NOTIFY in
the same transaction; see :mod:`~streamjob.catalog.watch`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select

from streamjob.catalog.engine import CatalogEngine, Conflict, now_utc, qualified
from streamjob.catalog.models import Job, JobDependency, Stream, Table, from_json_text, to_json_text
from streamjob.catalog.records import StreamInfo, TableInfo
from streamjob.exceptions import ObjectExistsError, ObjectInUseError, ObjectNotFoundError

__all__ = ["ObjectsMixin"]


class ObjectsMixin(CatalogEngine):
    """Streams and tables: ``create_*``, ``get_*``, ``list_*``, ``drop_*``."""

    def create_stream(
        self,
        database: str,
        name: str,
        columns: Sequence[Mapping[str, Any]],
        properties: Mapping[str, Any],
        row_format: Mapping[str, Any] | None = None,
        query: str | None = None,
        if_not_exists: bool = False,
    ) -> bool:
        """Register a stream (a source; with ``query``, a derived stream).

        ``columns`` is a list of ``{"name": ..., "type": ...}`` dicts; ``properties`` the
        TBLPROPERTIES; ``row_format`` the ROW FORMAT clause as a dict.

        Returns True if created, False if a stream of that name existed and
        ``if_not_exists``. Raises :class:`ObjectExistsError` if the stream exists (without
        ``if_not_exists``) or if a *table* of that name exists in the database (streams and
        tables share one name space; ``if_not_exists`` does not hide that).
        """
        values = dict(
            columns=[dict(c) for c in columns],
            properties=dict(properties),
            row_format=dict(row_format) if row_format is not None else None,
            query=query,
        )
        return self._create_object(Stream, Table, database, name, values, if_not_exists)

    def create_table(
        self,
        database: str,
        name: str,
        columns: Sequence[Mapping[str, Any]],
        properties: Mapping[str, Any],
        row_format: Mapping[str, Any] | None = None,
        stored_as: str | None = None,
        location: str | None = None,
        if_not_exists: bool = False,
        partitioned_by: Sequence[str] = (),
    ) -> bool:
        """Register a table (a sink, or static data). Same contract as :meth:`create_stream`:
        True if created, False if it existed and ``if_not_exists``; :class:`ObjectExistsError`
        otherwise, and always when a *stream* of that name exists.

        ``partitioned_by`` names the partition columns of a file table, in order (the
        executor checks that they are columns; stored as given)."""
        values = dict(
            columns=[dict(c) for c in columns],
            properties=dict(properties),
            row_format=dict(row_format) if row_format is not None else None,
            stored_as=stored_as,
            location=location,
            partitioned_by=to_json_text([str(c) for c in partitioned_by]),
        )
        return self._create_object(Table, Stream, database, name, values, if_not_exists)

    def _create_object(
        self,
        model: type[Stream] | type[Table],
        other: type[Stream] | type[Table],
        database: str,
        name: str,
        values: dict[str, Any],
        if_not_exists: bool,
    ) -> bool:
        kind, other_kind = model.__tablename__[:-1], other.__tablename__[:-1]
        qname = qualified(database, name)
        try:
            with self._tx(write=True) as session:
                self._lock_names(session, [(database, name)])
                if session.scalar(
                    select(other.id).where(other.database == database, other.name == name)
                ) is not None:
                    raise ObjectExistsError(
                        f"cannot create {kind} {qname}: a {other_kind} of that name exists"
                    )
                if session.scalar(
                    select(model.id).where(model.database == database, model.name == name)
                ) is not None:
                    if if_not_exists:
                        return False
                    raise ObjectExistsError(f"{kind} {qname} already exists")
                session.add(model(database=database, name=name, created_at=now_utc(), **values))
                self._notify(session, kind)
        except Conflict:
            # a concurrent creator won the race (unique constraint)
            if if_not_exists:
                return False
            raise ObjectExistsError(f"{kind} {qname} already exists") from None
        return True

    def get_stream(self, database: str, name: str) -> StreamInfo | None:
        """The stream ``database.name``, or None."""
        with self._tx() as session:
            row = session.scalars(
                select(Stream).where(Stream.database == database, Stream.name == name)
            ).first()
            return self._stream_info(row) if row is not None else None

    def get_table(self, database: str, name: str) -> TableInfo | None:
        """The table ``database.name``, or None."""
        with self._tx() as session:
            row = session.scalars(
                select(Table).where(Table.database == database, Table.name == name)
            ).first()
            return self._table_info(row) if row is not None else None

    def list_streams(self, database: str | None = None) -> list[StreamInfo]:
        """All streams (of ``database`` if given), sorted by database then name."""
        with self._tx() as session:
            stmt = select(Stream).order_by(Stream.database, Stream.name)
            if database is not None:
                stmt = stmt.where(Stream.database == database)
            return [self._stream_info(r) for r in session.scalars(stmt)]

    def list_tables(self, database: str | None = None) -> list[TableInfo]:
        """All tables (of ``database`` if given), sorted by database then name."""
        with self._tx() as session:
            stmt = select(Table).order_by(Table.database, Table.name)
            if database is not None:
                stmt = stmt.where(Table.database == database)
            return [self._table_info(r) for r in session.scalars(stmt)]

    def drop_stream(self, database: str, name: str, if_exists: bool = False) -> bool:
        """Drop a stream. Returns True if dropped, False if missing and ``if_exists``.

        Raises :class:`ObjectNotFoundError` if missing (without ``if_exists``), and
        :class:`ObjectInUseError` naming the job(s) if any job depends on it, e.g.
        ``cannot drop stream default.flights: used by job default.delays (drop the job first)``.
        """
        return self._drop_object(Stream, Table, database, name, if_exists)

    def drop_table(self, database: str, name: str, if_exists: bool = False) -> bool:
        """Drop a table; same contract as :meth:`drop_stream`."""
        return self._drop_object(Table, Stream, database, name, if_exists)

    def _drop_object(
        self,
        model: type[Stream] | type[Table],
        other: type[Stream] | type[Table],
        database: str,
        name: str,
        if_exists: bool,
    ) -> bool:
        kind, other_kind = model.__tablename__[:-1], other.__tablename__[:-1]
        qname = qualified(database, name)
        with self._tx(write=True) as session:
            self._lock_names(session, [(database, name)])
            row_id = session.scalar(
                select(model.id).where(model.database == database, model.name == name).with_for_update()
            )
            if row_id is None:
                if if_exists:
                    return False
                hint = ""
                if session.scalar(
                    select(other.id).where(other.database == database, other.name == name)
                ) is not None:
                    hint = f" ({qname} is a {other_kind}: use DROP {other_kind.upper()})"
                raise ObjectNotFoundError(f"{kind} {qname} does not exist{hint}")
            users = session.execute(
                select(Job.database, Job.name)
                .join(JobDependency, JobDependency.job_id == Job.id)
                .where(
                    JobDependency.kind == kind,
                    JobDependency.database == database,
                    JobDependency.name == name,
                )
                .distinct()
                .order_by(Job.database, Job.name)
            ).all()
            if users:
                names = ", ".join(qualified(db, n) for db, n in users)
                if len(users) == 1:
                    raise ObjectInUseError(
                        f"cannot drop {kind} {qname}: used by job {names} (drop the job first)"
                    )
                raise ObjectInUseError(
                    f"cannot drop {kind} {qname}: used by jobs {names} (drop the jobs first)"
                )
            session.execute(delete(model).where(model.id == row_id))
            self._notify(session, kind)
        return True

    @staticmethod
    def _stream_info(row: Stream) -> StreamInfo:
        return StreamInfo(
            database=row.database,
            name=row.name,
            columns=tuple(dict(c) for c in row.columns or ()),
            properties=dict(row.properties or {}),
            row_format=dict(row.row_format) if row.row_format is not None else None,
            query=row.query,
            created_at=row.created_at,
        )

    @staticmethod
    def _table_info(row: Table) -> TableInfo:
        return TableInfo(
            database=row.database,
            name=row.name,
            columns=tuple(dict(c) for c in row.columns or ()),
            properties=dict(row.properties or {}),
            row_format=dict(row.row_format) if row.row_format is not None else None,
            stored_as=row.stored_as,
            location=row.location,
            created_at=row.created_at,
            partitioned_by=tuple(str(c) for c in from_json_text(row.partitioned_by, [])),
        )
