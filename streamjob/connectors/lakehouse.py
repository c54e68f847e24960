"""What streamjob asks of a *lakehouse table* (issue 32): a table with a transaction
log of numbered versions, written by a sink whose commits carry the job's identity.
Delta Lake (:mod:`.delta`: table versions, app transactions) and Apache Iceberg
(:mod:`.iceberg`: snapshot ids for versions, snapshot summary properties for app
transactions) answer the same questions here, for their spec types:

* :func:`is_lakehouse`: can a preview read the table at a version (time travel);
* :func:`version_as_of`: which version ``VERSION AS OF n`` / ``TIMESTAMP AS OF '...'``
  names, checked against the table's log;
* :func:`batch_version`: which version's commit carries a job's micro-batch (its app
  transaction), for ``DESCRIBE STREAMJOB``;
* :func:`schedule` and :func:`last_maintained`: the server's maintenance schedule of a
  table (its TBLPROPERTIES) and when its log last recorded the maintenance.

Callers outside :mod:`streamjob.connectors` ask these instead of testing spec types.
"""

from __future__ import annotations

from ..exceptions import ConnectorError
from .delta.spec import DeltaTableSpec
from .iceberg.spec import IcebergTableSpec

__all__ = ["FORMATS", "is_lakehouse", "version_as_of", "batch_version", "version_word",
           "schedule", "last_maintained"]

FORMATS = "STORED AS DELTA or ICEBERG"
"""The lakehouse formats, as a message names them."""


def is_lakehouse(spec) -> bool:
    """True for a table spec whose table has versions a preview may read (time travel)."""
    return isinstance(spec, (DeltaTableSpec, IcebergTableSpec))


def version_word(spec) -> str:
    """What a version of the lakehouse table of ``spec`` is called: ``version`` (Delta),
    ``snapshot`` (Iceberg: its snapshot id)."""
    return "snapshot" if isinstance(spec, IcebergTableSpec) else "version"


def version_as_of(spec, kind: str, value: str) -> int:
    """The table version that ``kind`` (``version`` or ``timestamp``) ``value`` names
    for the lakehouse table of ``spec``: a version number (digits) checked against the
    log, or a time (``yyyy-mm-dd[ hh:mm:ss[.fff]]``, UTC, or ms since the epoch): the
    latest version committed at or before it (Delta's ``timestampAsOf``). Of an Iceberg
    table a version is a snapshot id (Iceberg's own ``VERSION AS OF``), and a time names
    the snapshot current then.

    Raises:
        ConnectorError: not a lakehouse table; a value that is no version or time; a
            version or time the table's log does not have (says what it has).
    """
    if isinstance(spec, IcebergTableSpec):
        return _iceberg_as_of(spec, kind, value)
    if not isinstance(spec, DeltaTableSpec):
        raise ConnectorError(f"time travel reads lakehouse tables ({FORMATS}) only")
    from .delta import log as dlog

    if spec.remote:
        raise ConnectorError(f"time travel reads local Delta tables so far, not one at "
                             f"{spec.location}")
    if kind == "version":
        if not value.isdigit():
            raise ConnectorError(f"VERSION AS OF takes a table version (a whole number >= 0), "
                                 f"got '{value}'")
        return dlog.version_as_of(spec.path, int(value))
    return dlog.version_before(spec.path, _as_of_ms(value))


def _as_of_ms(value: str) -> int:
    """The time of ``TIMESTAMP AS OF value`` in ms since the epoch (UTC). Raises
    ConnectorError naming the accepted forms."""
    from .delta.spec import _ms

    try:
        return _ms(value.strip())
    except ValueError:
        raise ConnectorError(f"TIMESTAMP AS OF takes a time ('yyyy-mm-dd[ hh:mm:ss]', UTC, "
                             f"or ms since the epoch), got '{value}'") from None


def _iceberg_as_of(spec, kind: str, value: str) -> int:
    """:func:`version_as_of` of an Iceberg table: a snapshot id, or the snapshot of a
    time."""
    from .iceberg import maintenance as im

    if kind == "version":
        if not value.lstrip("-").isdigit():
            raise ConnectorError(f"VERSION AS OF takes an Iceberg snapshot id (a whole "
                                 f"number), got '{value}'")
        return im.snapshot_as_of(spec.ref, int(value))
    return im.snapshot_before(spec.ref, _as_of_ms(value))


def batch_version(spec, app_id: str, batch_id: int) -> int | None:
    """The version of the lakehouse table of ``spec`` whose commit carries micro-batch
    ``batch_id`` of the job whose marker key is ``app_id`` (its app transaction), None
    when no commit does (not committed yet, or beyond the log's JSON commits) or the
    table is not a lakehouse table. Of an Iceberg table: the id of the snapshot whose
    summary carries the batch.

    Raises:
        ConnectorError: the table's log cannot be read, or is on an object store (not
            read here yet).
    """
    if isinstance(spec, IcebergTableSpec):
        from .iceberg import maintenance as im

        return im.batch_snapshot(spec.ref, app_id, batch_id)
    if not isinstance(spec, DeltaTableSpec):
        return None
    if spec.remote:
        raise ConnectorError(f"the log of a Delta table on an object store ({spec.location}) "
                             "is not read here yet")
    from .delta import log as dlog

    return dlog.transaction_commit(spec.path, app_id, batch_id)


def schedule(spec) -> dict[str, int]:
    """``{"optimize": ms, "vacuum": ms}`` of the maintenance the server runs on the
    lakehouse table of ``spec`` (TBLPROPERTIES ``"optimize.interval"``,
    ``"vacuum.interval"``; only those given), ``{}`` for none or another kind of table;
    ``"retain_hours"`` the scheduled VACUUM's retention when it has one. Delta and
    Iceberg tables alike."""
    if not isinstance(spec, (DeltaTableSpec, IcebergTableSpec)):
        return {}
    out = {k: v for k, v in (("optimize", spec.optimize_ms), ("vacuum", spec.vacuum_ms))
           if v is not None}
    if "vacuum" in out:
        out["retain_hours"] = spec.vacuum_retain_hours
    return out


#: The log's operation names of each maintenance (delta-rs commits ``VACUUM END``).
_OPERATIONS = {"optimize": ("OPTIMIZE",), "vacuum": ("VACUUM END",)}


def last_maintained(spec, what: str) -> int | None:
    """When (ms since the epoch) the table's log last recorded ``what`` (``optimize``,
    ``vacuum``) that changed it, by anyone; None when never, or not a local lakehouse
    table (an object store's log is not read here).

    Of an Iceberg table: ``optimize`` is the newest snapshot whose operation is
    ``replace`` (OPTIMIZE's rewrite); ``vacuum`` is always None, since Iceberg records
    no snapshot for an expiry and its metadata log only lists metadata files (every
    commit adds one), so a restarted server vacuums once at its first check rather
    than writing a property of its own into the table's metadata at each VACUUM.

    Raises:
        ConnectorError: the log cannot be read.
    """
    if isinstance(spec, IcebergTableSpec):
        if what != "optimize":
            return None
        from .iceberg import maintenance as im

        return im.last_replace(spec.ref)
    if not isinstance(spec, DeltaTableSpec) or spec.remote:
        return None
    from .delta import log as dlog

    return dlog.last_operation(spec.path, _OPERATIONS[what])
