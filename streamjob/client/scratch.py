"""A scratch copy of a catalog: an in-memory SQLite catalog holding a copy of another's
databases, streams, tables, jobs and retained checkpoints, on which a script is tried before it is
applied (``streamjob check``, and :meth:`streamjob.client.session.ClientSession.execute_script`
before ``submit``, ``run`` and ``-e`` change anything)."""

from __future__ import annotations

from ..catalog import Catalog

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
    for name, *_counts in catalog.list_databases():  # declared ones (USE d needs them)
        scratch.create_database(name, if_not_exists=True)
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
