"""What ``CREATE TABLE t (...) STORED AS DELTA [LOCATION 'dir'] [PARTITIONED BY (...)]
[TBLPROPERTIES (...)]`` declares: the Delta table's spec, its identifier and its
TBLPROPERTIES in one place (as a Flink table factory holds its identifier and options).

The table lives at LOCATION (default: the warehouse directory of the table, as for file
tables): a local path, a ``file:`` URI, or an object store (``s3://``, ``gs://``,
``abfs[s]://``) reached with delta-rs' storage options (``"delta.storage.*"``). Its
TBLPROPERTIES are Delta table configuration set when a job first creates the table
(:data:`CONFIGURATION`), ``"primary.key"``, on which an update-mode job merges, the
storage options, and the server's maintenance schedule; writing is :mod:`.sink`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Mapping
from urllib.parse import unquote, urlparse

from ... import properties as registry
from ...exceptions import ValidationError
from ..keys import check_primary_key
from ..reach import KafkaTopic, Reach

STORED_AS = "delta"
"""The identifier: ``STORED AS DELTA``."""
SCOPE = "delta table"
"""The connector scope of its TBLPROPERTIES in the property registry."""

#: TBLPROPERTIES (registry names, lower-case) -> Delta's configuration keys (Delta's
#: protocol spells them in camel case; names are case-insensitive in StreamSQL).
CONFIGURATION = {"delta.appendonly": "delta.appendOnly",
                 "delta.checkpointinterval": "delta.checkpointInterval",
                 "delta.logretentionduration": "delta.logRetentionDuration"}


OBJECT_STORES = ("s3", "s3a", "gs", "abfs", "abfss")
"""URI schemes of object-store LOCATIONs, written through delta-rs' object stores."""

STORAGE_PREFIX = "delta.storage."
"""TBLPROPERTIES ``delta.storage.<name>`` are delta-rs storage options: ``<name>`` with
dots as underscores, upper-cased (``delta.storage.aws.region`` is ``AWS_REGION``)."""


def storage_key(prop: str) -> str:
    """delta-rs' storage option key of TBLPROPERTY ``prop`` (``delta.storage.aws.region``
    -> ``AWS_REGION``)."""
    return prop[len(STORAGE_PREFIX):].replace(".", "_").upper()


@dataclass(frozen=True)
class DeltaTableSpec:
    """A Delta Lake table at ``location`` (a local directory or ``file:`` URI) written
    through delta-rs, partitioned by ``partitioned_by`` (lower-cased, in order), created
    with Delta table ``configuration`` (``((key, value), ...)``, Delta's spelling);
    ``primary_key`` (``"primary.key"``, lower-cased, in order) makes update-mode jobs
    merge each micro-batch on it. On an object store (``s3://``, ``gs://``, ``abfs[s]://``
    LOCATION), ``storage`` holds delta-rs' storage options (``((KEY, value as written),
    ...)``: a secret as a ``${env:}``/``${file:}`` reference or sealed, resolved only by
    :meth:`storage_options`); ``optimize_ms``, ``vacuum_ms`` and ``vacuum_retain_hours``
    schedule the server's maintenance (None: never)."""

    location: str
    partitioned_by: tuple[str, ...] = ()
    configuration: tuple[tuple[str, str], ...] = ()
    primary_key: tuple[str, ...] = ()
    storage: tuple[tuple[str, str], ...] = ()
    optimize_ms: int | None = None
    vacuum_ms: int | None = None
    vacuum_retain_hours: int = 168

    label: ClassVar[str] = "a Delta"
    on_files: ClassVar[bool] = True

    @property
    def remote(self) -> bool:
        """True on an object store (read and written through delta-rs only)."""
        return urlparse(self.location).scheme in OBJECT_STORES

    @property
    def static_readable(self) -> bool:
        """Its latest snapshot at each micro-batch; a local table only so far."""
        return not self.remote

    def storage_options(self) -> dict[str, str] | None:
        """delta-rs' ``storage_options`` with secret references and sealed values
        resolved under the admin's rules (:func:`streamjob.security.resolve.resolve`;
        resolved values are masked in output from then on); None for a local table.

        Raises:
            PolicyError: a reference outside the admin's rules.
            ConnectorError: a reference that cannot be resolved (names it, never a value).
        """
        if not self.remote:
            return None
        from ...security.resolve import resolve

        return {key: resolve(value, f"delta storage option {key}")
                for key, value in self.storage}

    @property
    def updates_in_place(self) -> bool:
        """Update mode merges each micro-batch on the primary key (Delta's MERGE)."""
        return bool(self.primary_key)

    @property
    def path(self) -> str:
        """The table's directory as a local path (a ``file:`` URI decoded), or an
        object store's URI as written (delta-rs' table URI)."""
        loc = self.location
        if self.remote:
            return loc.rstrip("/")
        if loc.startswith("file:"):
            return unquote(urlparse(loc).path)
        return str(Path(loc))

    def check_columns(self, columns, table: str) -> None:
        """The primary-key columns must be declared ``columns`` of ``table`` (every
        declared type has a Delta type, :func:`streamjob.columntypes.table_arrow_type`;
        partition columns are checked where PARTITIONED BY is).

        Raises:
            ValidationError: ``key`` ``"primary.key"``.
        """
        check_primary_key(self.primary_key, columns, table)

    def reach(self) -> Reach:
        return Reach(paths=((self.location, "LOCATION", "location"),))

    def kafka_topic(self) -> KafkaTopic | None:
        return None


def delta_table_spec(name: str, p: Mapping[str, str], location: str | None,
                     default_location: str, partitioned_by=()) -> DeltaTableSpec:
    """The spec of Delta table ``name`` from its lower-cased TBLPROPERTIES ``p``, its
    LOCATION (None: ``default_location``) and its partition columns.

    Raises:
        ValidationError: a property unknown to Delta tables or with a bad value (``key``
            the property); a LOCATION on another file system than the local one (``key``
            ``location``).
    """
    typed = registry.validate_connector(SCOPE, p, f"Delta table '{name}'")
    loc = location or default_location
    scheme = urlparse(loc).scheme.lower()
    if scheme not in ("", "file") + OBJECT_STORES:
        raise ValidationError(
            f"Delta table '{name}': LOCATION '{loc}' is neither a local directory nor an "
            f"object store ({', '.join(s + '://' for s in OBJECT_STORES)})", key="location",
            bad_value=True)
    if scheme in OBJECT_STORES and not urlparse(loc).netloc:
        raise ValidationError(f"Delta table '{name}': LOCATION '{loc}' names no bucket or "
                              "container", key="location", bad_value=True)
    storage = tuple(sorted((storage_key(k), str(v)) for k, v in typed.items()
                           if k.startswith(STORAGE_PREFIX)))
    if storage and scheme not in OBJECT_STORES:
        raise ValidationError(f"Delta table '{name}': \"delta.storage.*\" options are for a "
                              "LOCATION on an object store (s3://, gs://, abfs://)",
                              key=next(k for k in typed if k.startswith(STORAGE_PREFIX)))
    config = []
    for key, value in typed.items():
        if key not in CONFIGURATION:
            continue
        if key == "delta.logretentionduration":
            value = f"interval {max(1, value // 1000)} seconds"  # Delta's interval text
        elif isinstance(value, bool):
            value = str(value).lower()
        config.append((CONFIGURATION[key], str(value)))
    return DeltaTableSpec(loc, tuple(c.lower() for c in partitioned_by), tuple(config),
                          tuple(dict.fromkeys(typed.get("primary.key", ()))), storage,
                          typed.get("optimize.interval"), typed.get("vacuum.interval"),
                          typed.get("vacuum.retain.hours", 168))


STREAM_SCOPE = "delta stream"
"""The connector scope of a Delta stream's TBLPROPERTIES (``"source"="delta"``)."""


@dataclass(frozen=True)
class DeltaSourceSpec:
    """A Delta Lake table at ``location`` (a local directory or ``file:`` URI) read as a
    stream by :mod:`.source` (``CREATE STREAM s (...) STORED AS DELTA LOCATION 'dir'``,
    stored as ``"source"="delta"``, ``"path"``): ``starting_version`` (``latest`` or a
    version as text; None: the current snapshot first), ``starting_timestamp`` (ms
    since the epoch, or None), ``max_files`` per micro-batch, and Delta's policies for
    commits that remove data (``ignore_deletes``, ``ignore_changes``,
    ``skip_change_commits``)."""

    location: str
    starting_version: str | None = None
    starting_timestamp: int | None = None
    max_files: int = 1000
    ignore_deletes: bool = False
    ignore_changes: bool = False
    skip_change_commits: bool = False

    @property
    def path(self) -> str:
        """The table's directory as a local path (a ``file:`` URI decoded)."""
        loc = self.location
        if loc.startswith("file:"):
            return unquote(urlparse(loc).path)
        return str(Path(loc))

    def reach(self) -> Reach:
        return Reach(paths=((self.location, "LOCATION", "path"),))


def _ms(text: str) -> int:
    """ms since the epoch of ``startingtimestamp`` text (digits: ms; a date or date and
    time: UTC)."""
    import datetime as _dt

    if text.isdigit():
        return int(text)
    value = _dt.datetime.fromisoformat(text.upper().replace("T", " ") if "t" in text else text)
    return int(value.replace(tzinfo=_dt.timezone.utc).timestamp() * 1000)


def delta_source_spec(name: str, p: Mapping[str, str]) -> DeltaSourceSpec:
    """The spec of Delta stream ``name`` from its lower-cased TBLPROPERTIES ``p``.

    Raises:
        ValidationError: a property unknown to Delta streams or with a bad value; no
            ``"path"``; a path on another file system than the local one; both
            ``startingversion`` and ``startingtimestamp`` (Delta refuses both too).
    """
    typed = registry.validate_connector(STREAM_SCOPE, p, f"Delta stream '{name}'")
    loc = typed.get("path")
    if not loc:
        raise ValidationError(f"Delta stream '{name}' needs its table: STORED AS DELTA "
                              "LOCATION '<dir>' (or TBLPROPERTIES(\"path\"=...))")
    if urlparse(loc).scheme not in ("", "file") or "\x00" in loc:
        raise ValidationError(
            f"Delta stream '{name}': '{loc}' is not a local directory; Delta tables are "
            "read from local paths (or file:// URIs) so far", key="path", bad_value=True)
    if "startingversion" in typed and "startingtimestamp" in typed:
        raise ValidationError(f"Delta stream '{name}': \"startingVersion\" and "
                              "\"startingTimestamp\" exclude each other (Delta's rule)",
                              key="startingtimestamp")
    ts = typed.get("startingtimestamp")
    return DeltaSourceSpec(loc, typed.get("startingversion"),
                           _ms(ts) if ts is not None else None,
                           typed.get("maxfilespertrigger", 1000),
                           typed.get("ignoredeletes", False), typed.get("ignorechanges", False),
                           typed.get("skipchangecommits", False))
