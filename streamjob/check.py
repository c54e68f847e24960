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

from .catalog import Catalog
from .home import Home

SCRATCH_URL = "sqlite://"


def scratch_catalog(catalog: Catalog | None) -> Catalog:
    """A new in-memory catalog holding a copy of ``catalog``'s objects, jobs and retained
    checkpoints (jobs get new uids there). ``None``: an empty one.

    Raises:
        CatalogError: the source catalog cannot be read.
    """
    scratch = Catalog(SCRATCH_URL)
    if catalog is None:
        return scratch
    for s in catalog.list_streams():
        scratch.create_stream(s.database, s.name, s.columns, s.properties, s.row_format,
                              query=s.query)
    for t in catalog.list_tables():
        scratch.create_table(t.database, t.name, t.columns, t.properties, t.row_format,
                             stored_as=t.stored_as, location=t.location,
                             partitioned_by=t.partitioned_by)
    for j in catalog.list_jobs():
        scratch.create_job(j.database, j.name, j.query, j.properties, j.dependencies,
                           check_dependencies=False, session_properties=j.session_properties)
        copy = scratch.update_job(j.database, j.name, status=j.status,
                                  desired_state=j.desired_state, attempts=j.attempts,
                                  last_error=j.last_error)
        for c in catalog.list_checkpoints(j.uid):
            scratch.record_checkpoint(
                copy.uid, c.checkpoint_id, started_at=c.started_at, ended_at=c.ended_at,
                duration_ms=c.duration_ms, source_offsets=c.source_offsets,
                input_rows=c.input_rows, state_rows=c.state_rows, status=c.status,
                fingerprint=c.fingerprint, retained=10_000)
    return scratch


@dataclass(frozen=True)
class CheckReport:
    """The outcome of a successful check: how many statements, and one line each."""

    statements: int
    lines: tuple[str, ...]


def check_script(text: str, source: str, catalog: Catalog, home: Home,
                 spark=None) -> CheckReport:
    """Parse and validate every statement of ``text`` (already variable-substituted)
    against ``catalog`` (a scratch copy: see :func:`scratch_catalog`).

    ``spark``: ``() -> SparkSession``; when given, each job's query is also put to
    Spark's streaming analysis over empty inputs (:mod:`.spark.analysis`), so
    what Spark would refuse at START is refused here. It is called at the first
    CREATE/ALTER STREAMJOB only: a script without jobs never starts Spark.

    Raises:
        StreamJobError: the first error, with ``source``, line, column and snippet set.
    """
    from .session import ClientSession

    session = ClientSession(catalog, home, dry_run=True, spark=spark)
    lines = []
    for stmt, result in session.execute_script(text, source):
        first = stmt.text.split(None, 2)
        lines.append(f"{source}:{stmt.position.line}: {' '.join(first[:2]).upper()}: "
                     f"{result.message or 'ok'}")
    return CheckReport(len(lines), tuple(lines))
