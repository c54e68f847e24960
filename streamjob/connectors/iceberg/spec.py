"""What ``CREATE TABLE t (...) STORED AS ICEBERG [LOCATION 'warehouse'] [PARTITIONED BY
(...)] [TBLPROPERTIES (...)]`` and ``CREATE STREAM s (...) STORED AS ICEBERG ...``
declare: the Iceberg table's spec, its identifier and its TBLPROPERTIES in one place (as
a Flink table factory holds its identifier and options).

The Iceberg table is ``<"iceberg.namespace">.<"iceberg.table">`` (defaults: the StreamSQL
database and the table's or stream's own name) in the catalog of
``"iceberg.catalog.uri"``: a SQLAlchemy URL (``sqlite:///...``,
``postgresql+psycopg://...``: pyiceberg's SQL catalog) or an ``http(s)://`` REST
catalog; without it, a pyiceberg SQL catalog in streamjob's own catalog database
(:mod:`.catalog`). Its files live in ``<LOCATION>/<namespace>.db/<table>`` (LOCATION is
the warehouse; without one, the table's directory in the home's warehouse); only local
paths and ``file:`` URIs so far.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Mapping
from urllib.parse import unquote, urlparse

from ... import properties as registry
from ...exceptions import ValidationError
from ..keys import check_primary_key
from ..reach import KafkaTopic, Reach

STORED_AS = "iceberg"
"""The identifier: ``STORED AS ICEBERG``."""
SCOPE = "iceberg table"
"""The connector scope of a table's TBLPROPERTIES in the property registry."""
STREAM_SCOPE = "iceberg stream"
"""The connector scope of a stream's TBLPROPERTIES (``"source"="iceberg"``)."""
CATALOG_URI, NAMESPACE, TABLE = "iceberg.catalog.uri", "iceberg.namespace", "iceberg.table"


def _local(loc: str) -> str:
    """A local directory of a path or ``file:`` URI."""
    return unquote(urlparse(loc).path) if loc.startswith("file:") else str(Path(loc))


@dataclass(frozen=True)
class IcebergTableRef:
    """Where an Iceberg table is: ``catalog_uri`` (None: streamjob's catalog database),
    ``namespace`` and ``name`` (its identifier ``namespace.name``) and ``location``,
    the table's directory (a local path or ``file:`` URI)."""

    catalog_uri: str | None
    namespace: str
    name: str
    location: str

    @property
    def identifier(self) -> str:
        """``namespace.name``."""
        return f"{self.namespace}.{self.name}"

    @property
    def path(self) -> str:
        """The table's directory as a local absolute path."""
        return os.path.abspath(_local(self.location))

    def reach(self, path_key: str) -> Reach:
        """The directory (under ``path_key``) and a SQL catalog's URL
        (``"iceberg.catalog.uri"``; a REST catalog's host is checked as a database
        server's, :func:`streamjob.planner.checks.check_table`)."""
        urls = ((self.catalog_uri, '"iceberg.catalog.uri"', CATALOG_URI),) \
            if self.catalog_uri else ()
        return Reach(paths=((self.location, "LOCATION", path_key),), urls=urls)

    def where(self) -> str:
        """The table as messages name it (the catalog URL masked)."""
        from ...sensitive import mask_url

        cat = mask_url(self.catalog_uri) if self.catalog_uri else "the streamjob catalog"
        return f"Iceberg table {self.identifier} in {cat}"


@dataclass(frozen=True)
class IcebergTableSpec:
    """An Iceberg table written through pyiceberg (:mod:`.sink`): ``ref`` where it is,
    ``partitioned_by`` its identity partition columns (lower-cased, in order),
    ``primary_key`` (``"primary.key"``) makes update-mode jobs upsert each micro-batch
    on it (pyiceberg's upsert); ``optimize_ms``, ``vacuum_ms`` (ms, None: never) and
    ``vacuum_retain_hours`` the maintenance the server runs on a schedule
    (``"optimize.interval"``, ``"vacuum.interval"``, ``"vacuum.retain.hours"``, default
    Iceberg's 120 h, :mod:`streamjob.executor.schedule`)."""

    ref: IcebergTableRef
    partitioned_by: tuple[str, ...] = ()
    primary_key: tuple[str, ...] = ()
    optimize_ms: int | None = None
    vacuum_ms: int | None = None
    vacuum_retain_hours: int = 120

    label: ClassVar[str] = "an Iceberg"
    on_files: ClassVar[bool] = True
    static_readable: ClassVar[bool] = True

    @property
    def location(self) -> str:
        """The table's directory."""
        return self.ref.location

    @property
    def updates_in_place(self) -> bool:
        """Update mode upserts each micro-batch on the primary key."""
        return bool(self.primary_key)

    def check_columns(self, columns, table: str) -> None:
        """The primary-key columns must be declared ``columns`` of ``table``.

        Raises:
            ValidationError: ``key`` ``"primary.key"``.
        """
        check_primary_key(self.primary_key, columns, table)

    def reach(self) -> Reach:
        return self.ref.reach("location")

    def kafka_topic(self) -> KafkaTopic | None:
        return None


def _ref(what: str, typed: Mapping, name: str, database: str, location: str | None,
         default_location: str, key: str) -> IcebergTableRef:
    """The :class:`IcebergTableRef` of lower-cased, typed TBLPROPERTIES ``typed``.

    Raises:
        ValidationError: a catalog URI that is neither a SQLAlchemy URL nor http(s); a
            location off the local file system (``key``).
    """
    uri = (typed.get(CATALOG_URI) or "").strip() or None
    if uri is not None:
        scheme = urlparse(uri).scheme.lower()
        if not scheme or "\x00" in uri:
            raise ValidationError(f"{what}: \"iceberg.catalog.uri\" '{uri}' is neither a "
                                  "SQLAlchemy URL (sqlite:///..., postgresql+psycopg://...) "
                                  "nor an http(s):// REST catalog", key=CATALOG_URI,
                                  bad_value=True)
    namespace = (typed.get(NAMESPACE) or database or "default").strip()
    table = (typed.get(TABLE) or name).strip()
    for label, value, k in (("namespace", namespace, NAMESPACE), ("table", table, TABLE)):
        if not value or "." in value or "/" in value or "\x00" in value:
            raise ValidationError(f"{what}: Iceberg {label} '{value}' must be one non-empty "
                                  "name without '.' or '/'", key=k, bad_value=True)
    if location:
        loc = location.rstrip("/") + f"/{namespace}.db/{table}"
    else:
        loc = default_location
    if urlparse(loc).scheme not in ("", "file") or "\x00" in loc:
        raise ValidationError(f"{what}: LOCATION '{location}' is not a local directory; "
                              "Iceberg tables are written to local paths (or file:// URIs) "
                              "so far", key=key, bad_value=True)
    return IcebergTableRef(uri, namespace, table, loc)


def iceberg_table_spec(name: str, p: Mapping[str, str], location: str | None,
                       default_location: str, partitioned_by=(),
                       database: str = "") -> IcebergTableSpec:
    """The spec of Iceberg table ``name`` of StreamSQL database ``database`` from its
    lower-cased TBLPROPERTIES ``p``, its LOCATION (the warehouse; None: the table's
    directory is ``default_location``) and its partition columns.

    Raises:
        ValidationError: a property unknown to Iceberg tables or with a bad value
            (``key`` the property); a LOCATION off the local file system (``key``
            ``location``).
    """
    what = f"Iceberg table '{name}'"
    typed = registry.validate_connector(SCOPE, p, what)
    ref = _ref(what, typed, name, database, location, default_location, "location")
    return IcebergTableSpec(ref, tuple(c.lower() for c in partitioned_by),
                            tuple(dict.fromkeys(typed.get("primary.key", ()))),
                            typed.get("optimize.interval"), typed.get("vacuum.interval"),
                            typed.get("vacuum.retain.hours", 120))


@dataclass(frozen=True)
class IcebergSourceSpec:
    """An Iceberg table read as a stream (:mod:`.source`): ``ref`` where it is,
    ``starting`` where a first start reads from (``earliest``: the current snapshot's
    rows, then the appends after it; ``latest``: only later appends)."""

    ref: IcebergTableRef
    starting: str = "earliest"

    @property
    def location(self) -> str:
        return self.ref.location

    def reach(self) -> Reach:
        return self.ref.reach("path")


def iceberg_source_spec(name: str, p: Mapping[str, str]) -> IcebergSourceSpec:
    """The spec of Iceberg stream ``name`` from its lower-cased TBLPROPERTIES ``p``
    (``CREATE STREAM ... STORED AS ICEBERG [LOCATION 'warehouse']`` is stored as
    ``"source"="iceberg"``, ``"path"`` the table's directory, ``"iceberg.namespace"``
    the database when not given, :func:`streamjob.executor.objects._stored_stream`).

    Raises:
        ValidationError: a property unknown to Iceberg streams or with a bad value; no
            ``"path"``.
    """
    what = f"Iceberg stream '{name}'"
    typed = registry.validate_connector(STREAM_SCOPE, p, what)
    path = typed.get("path")
    if not path:
        raise ValidationError(f"{what} needs its table's directory (STORED AS ICEBERG "
                              "[LOCATION '<warehouse>'])")
    ref = _ref(what, typed, name, "", None, path, "path")
    return IcebergSourceSpec(ref, typed.get("iceberg.starting", "earliest"))
