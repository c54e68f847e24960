"""``streamjob check FILE.sql``: a dry run of a script against a scratch copy of the catalog.

Every statement is parsed and validated in order, exactly as ``submit`` would execute
it, but against an in-memory SQLite copy of the catalog (streams, tables, jobs with
their properties and states, retained checkpoints), so later statements see earlier
CREATEs and DROPs, and START/STOP/DROP STREAMJOB are checked (job exists, plans,
``FROM CHECKPOINT n`` is retained) without running anything or removing any
checkpoint. The real catalog is only read.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import Catalog
from ..home import Home
from .scratch import SCRATCH_URL, scratch_catalog

__all__ = ["SCRATCH_URL", "CheckReport", "check_script", "scratch_catalog"]


@dataclass(frozen=True)
class CheckReport:
    """The outcome of a successful check: how many statements, one line each, and the
    ``note: ...`` lines of properties accepted without effect (always printed)."""

    statements: int
    lines: tuple[str, ...]
    notes: tuple[str, ...] = ()


def check_script(text: str, source: str, catalog: Catalog, home: Home,
                 spark=None) -> CheckReport:
    """Parse and validate every statement of ``text`` (already variable-substituted)
    against ``catalog`` (a scratch copy: see :func:`scratch_catalog`).

    ``spark``: ``() -> SparkSession``; when given, each job's query is also put to
    Spark's streaming analysis over empty inputs (:mod:`streamjob.spark.analysis`), so
    what Spark would refuse at START is refused here. It is called at the first
    CREATE/ALTER STREAMJOB only: a script without jobs never starts Spark.

    Raises:
        StreamJobError: the first error, with ``source``, line, column and snippet set.
    """
    from .session import ClientSession

    session = ClientSession(catalog, home, dry_run=True, spark=spark)
    lines, notes = [], []
    for stmt, result in session.execute_script(text, source):
        first = stmt.text.split(None, 2)
        lines.append(f"{source}:{stmt.position.line}: {' '.join(first[:2]).upper()}: "
                     f"{result.message or 'ok'}")
        notes += [f"{source}:{stmt.position.line}: {n}" for n in (result.message or "").splitlines()
                  if n.startswith("note: ")]
    return CheckReport(len(lines), tuple(lines), tuple(notes))
