"""What a statement returns, for the CLI, the shell and ``--json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence


@dataclass
class Result:
    """A message, and/or a table of ``rows`` under ``columns`` (with a ``title``), and/or
    further ``sections`` (DESCRIBE: one result per part).

    Fields for clients that act on a result (the CLI, the shell), so none parses the
    message: ``object`` the qualified name the statement acted on; ``pending`` True when
    START set the desired state RUNNING but no job manager of this process runs the job
    (a server, or a later ``run``, starts it); ``detail`` the message's tail after the
    outcome (e.g. " from checkpoint 12"); ``runs_in`` where a started job runs, set by
    the client session (:mod:`streamjob.client.session`): ``"here"`` (this process), the
    ``host:pid`` of the job manager holding the catalog's lease, or None; ``database``
    the session's current database after the statement, when it changed it (USE, or DROP
    of the current database); ``text`` StreamSQL text the statement answers with (SHOW
    CREATE), printed as it is; ``records`` an iterator of records delivered while it is
    read (PRINT: dicts with offset, partition, timestamp, key, value), with
    ``columns`` naming their fields.

    ``data``: the result as its object's documented JSON shape (:mod:`streamjob.shapes`,
    docs/json.md), for ``--json`` and the HTTP API; None where the generic form of
    :meth:`to_json` serves."""

    message: str | None = None
    columns: Sequence[str] = ()
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    title: str | None = None
    sections: list["Result"] = field(default_factory=list)
    object: str | None = None
    pending: bool = False
    detail: str = ""
    runs_in: str | None = None
    database: str | None = None
    text: str | None = None
    records: Iterator[dict[str, Any]] | None = None
    data: Any = None

    def to_json(self) -> Any:
        """A JSON-ready value: :attr:`data` when set (the object's shape, docs/json.md);
        SHOW CREATE ``{"statement": text}``; PRINT the list of its records (read to the
        end: its LIMIT bounds it); else a table is a list of row objects, sections a dict
        by title, a bare message ``{"message": ...}``, every key snake_case
        (``"rows in"`` -> ``"rows_in"``)."""
        if self.data is not None:
            return self.data
        if self.records is not None:
            return [dict(r) for r in self.records]
        if self.text is not None:
            return {"statement": self.text}
        if self.sections:
            out: dict[str, Any] = {}
            for sec in self.sections:
                out[snake(sec.title or "result")] = sec.to_json()
            if self.message:
                out["message"] = self.message
            return out
        if self.columns:
            keys = [snake(c) for c in self.columns]
            return [dict(zip(keys, row)) for row in self.rows]
        return {"message": self.message}


def snake(label: str) -> str:
    """A column or section label as a JSON key: ``"rows in"`` -> ``"rows_in"``,
    ``"runs (last 10)"`` -> ``"runs_last_10"``."""
    import re

    return re.sub(r"[^0-9a-z]+", "_", label.lower()).strip("_") or "result"
