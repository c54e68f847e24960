"""What streamjob asks of a *lakehouse table* (issue 32): a table with a transaction
log of numbered versions, written by a sink whose commits carry the job's identity.
Delta Lake (:mod:`.delta`) answers today; another format (Iceberg: snapshots for
versions, snapshot summary properties for app transactions) plugs in by answering the
same three questions here, for its spec type:

* :func:`is_lakehouse`: can a preview read the table at a version (time travel);
* :func:`version_as_of`: which version ``VERSION AS OF n`` / ``TIMESTAMP AS OF '...'``
  names, checked against the table's log;
* :func:`batch_version`: which version's commit carries a job's micro-batch (its app
  transaction), for ``DESCRIBE STREAMJOB``.

Callers outside :mod:`streamjob.connectors` ask these instead of testing spec types.
"""

from __future__ import annotations

from ..exceptions import ConnectorError
from .delta.spec import DeltaTableSpec

__all__ = ["FORMATS", "is_lakehouse", "version_as_of", "batch_version"]

FORMATS = "STORED AS DELTA"
"""The lakehouse formats, as a message names them."""


def is_lakehouse(spec) -> bool:
    """True for a table spec whose table has versions a preview may read (time travel)."""
    return isinstance(spec, DeltaTableSpec)


def version_as_of(spec, kind: str, value: str) -> int:
    """The table version that ``kind`` (``version`` or ``timestamp``) ``value`` names
    for the lakehouse table of ``spec``: a version number (digits) checked against the
    log, or a time (``yyyy-mm-dd[ hh:mm:ss[.fff]]``, UTC, or ms since the epoch): the
    latest version committed at or before it (Delta's ``timestampAsOf``).

    Raises:
        ConnectorError: not a lakehouse table; a value that is no version or time; a
            version or time the table's log does not have (says what it has).
    """
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
    from .delta.spec import _ms

    try:
        ms = _ms(value.strip())
    except ValueError:
        raise ConnectorError(f"TIMESTAMP AS OF takes a time ('yyyy-mm-dd[ hh:mm:ss]', UTC, "
                             f"or ms since the epoch), got '{value}'") from None
    return dlog.version_before(spec.path, ms)


def batch_version(spec, app_id: str, batch_id: int) -> int | None:
    """The version of the lakehouse table of ``spec`` whose commit carries micro-batch
    ``batch_id`` of the job whose marker key is ``app_id`` (its app transaction), None
    when no commit does (not committed yet, or beyond the log's JSON commits) or the
    table is not a lakehouse table.

    Raises:
        ConnectorError: the table's log cannot be read.
    """
    if not isinstance(spec, DeltaTableSpec) or spec.remote:  # its log: local tables so far
        return None
    from .delta import log as dlog

    return dlog.transaction_commit(spec.path, app_id, batch_id)
