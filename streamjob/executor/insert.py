"""A bare ``INSERT INTO t SELECT ...``: an implicit streamjob (issue 18).

Older Slipstream starts a streamjob for an INSERT typed outside CREATE STREAMJOB; LIST
STREAMJOBS then shows it with its SQL, and ``STOP STREAMJOB <id>`` stops it. Slipstream
gives it a generated id and documents none of its form, so streamjob decides:

* the id is ``insert_<8 hex digits>``, the start of the SHA-256 of the target table
  (``db.name``) and the statement's text normalized (comments dropped, blanks collapsed,
  letters outside quotes lower-cased): the same INSERT always has the same id;
* the job is created with default job properties (plus the session's ``SET`` values,
  as CREATE STREAMJOB) and started, as ``CREATE STREAMJOB <id> AS ("<the insert>");
  START STREAMJOB <id>`` would;
* submitting the same INSERT again (a script run twice) starts nothing: the statement
  answers that the job exists and in which state, and how to start, stop or drop it.
  So a resubmitted script never runs a second copy of a job, which would write every
  row twice (DESIGN: nothing doubled silently), and a job the user stopped stays
  stopped until START STREAMJOB says otherwise.
"""

from __future__ import annotations

import hashlib

from ..exceptions import StreamJobError
from ..grammar import statements as st
from ..grammar.lexical import iter_pieces
from .result import Result

IMPLICIT_PREFIX = "insert_"


def normalized(query: str) -> str:
    """``query`` without comments, with each run of blanks one space, and letters
    outside string literals and backquoted names lower-cased (keywords and unquoted
    names are case-insensitive)."""
    out: list[str] = []
    for kind, start, end in iter_pieces(query):
        piece = query[start:end]
        if kind in ("comment", "ws"):
            if out and out[-1] != " ":
                out.append(" ")
        else:
            out.append(piece if kind in ("str", "name") else piece.lower())
    return "".join(out).strip()


def implicit_job_name(database: str, table: str, query: str) -> str:
    """The id of the implicit job of a bare INSERT into ``database.table`` with text
    ``query``: ``insert_`` and 8 hex digits (module docstring)."""
    key = f"{database}.{table}\n{normalized(query)}"
    return IMPLICIT_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]


class InsertStatements:
    """The bare INSERT of :class:`~streamjob.executor.Executor`: its result's ``object``
    is the job (``db.insert_<hex>``); ``detail`` is ``"exists"`` when the job existed
    and nothing was started (the client session then treats it as no START)."""

    def _do_InsertInto(self, s: st.InsertInto) -> Result:
        tdb, tname = self._names(s.target, "table")
        name = implicit_job_name(tdb, tname, s.query)
        qname = st.QualifiedName(name)
        db, _ = self._names(qname, "job")
        job = self.catalog.get_job(db, name)
        if job is not None:
            return Result(
                f"streamjob {db}.{name} runs this INSERT already (status {job.status}, desired "
                f"{job.desired_state}); nothing started. START STREAMJOB {name} to resume it, "
                f"STOP STREAMJOB {name} to stop it, DROP STREAMJOB {name} to remove it",
                object=f"{db}.{name}", detail="exists")
        where = dict(position=s.position, text=s.text, locations=s.locations)
        created = self._do_CreateStreamJob(st.CreateStreamJob(
            name=qname, query=s.query, query_position=s.position, **where))
        try:
            started = self._do_StartStreamJob(st.StartStreamJob(name=qname, **where))
        except StreamJobError as exc:
            if exc.note is None:
                exc.note = (f"streamjob {db}.{name} was created for this INSERT but not started: "
                            f"START STREAMJOB {name} once this is fixed, or DROP STREAMJOB {name}")
            raise
        detail = created.message.split(" created ", 1)[-1] if created.message else ""
        return Result(f"{started.message} for this INSERT {detail}".rstrip(),
                      object=f"{db}.{name}", pending=started.pending, detail=started.detail)
