"""The HTTP API's wire format: a statement's :class:`~streamjob.executor.Result` and a
:class:`~streamjob.exceptions.StreamJobError` as JSON, and back (for ``--server`` clients).

A result is ``{"message", "title", "columns", "rows", "sections", "object", "pending",
"detail", "runs_in", "data"}`` (``data``: the object's JSON shape, docs/json.md, or null) (rows as lists; datetimes as ISO-8601 text); an error is
``{"type", "message", "line", "column", "text", "snippet", "source"}``: the position and
the highlighted snippet of the statement's text, as the CLI prints them.
"""

from __future__ import annotations

import json
from typing import Any

from ..exceptions import StreamJobError
from ..executor.result import Result


def jsonable(value: Any) -> Any:
    """``value`` with datetimes, dataclasses' odd values and the like as JSON text."""
    return json.loads(json.dumps(value, default=str))


def result_to_wire(result: Result) -> dict[str, Any]:
    """A :class:`Result` as a JSON-ready dict (see the module docstring); PRINT's
    records are read here (its LIMIT, or the API's idle bound, ends them)."""
    return {
        "text": result.text, "database": result.database,
        "records": jsonable([dict(r) for r in result.records]) if result.records is not None else None,
        "message": result.message, "title": result.title,
        "columns": list(result.columns), "rows": jsonable([list(r) for r in result.rows]),
        "sections": [result_to_wire(s) for s in result.sections],
        "object": result.object, "pending": result.pending, "detail": result.detail,
        "runs_in": result.runs_in, "data": jsonable(result.data),
    }


def result_from_wire(data: dict[str, Any]) -> Result:
    """The :class:`Result` of :func:`result_to_wire`'s dict (rows as tuples)."""
    return Result(message=data.get("message"), title=data.get("title"),
                  columns=tuple(data.get("columns") or ()),
                  rows=[tuple(r) for r in data.get("rows") or []],
                  sections=[result_from_wire(s) for s in data.get("sections") or []],
                  object=data.get("object"), pending=bool(data.get("pending")),
                  detail=data.get("detail") or "", runs_in=data.get("runs_in"),
                  text=data.get("text"), database=data.get("database"),
                  records=iter(data["records"]) if data.get("records") is not None else None,
                  data=data.get("data"))


def error_to_wire(exc: StreamJobError) -> dict[str, Any]:
    """A :class:`StreamJobError` as a JSON-ready dict, with its position and snippet."""
    return {"type": type(exc).__name__, "message": exc.message or str(exc),
            "line": exc.line, "column": exc.column, "text": exc.text,
            "snippet": exc.snippet, "source": exc.source, "note": exc.note}


def error_from_wire(data: dict[str, Any]) -> StreamJobError:
    """A :class:`StreamJobError` of the error type the server raised (the root type if
    this client does not know it), with its position and snippet."""
    from .. import exceptions

    kind = getattr(exceptions, str(data.get("type") or ""), None)
    if not (isinstance(kind, type) and issubclass(kind, StreamJobError)):
        kind = StreamJobError
    exc = kind.__new__(kind)
    StreamJobError.__init__(exc, str(data.get("message") or "the server refused the request"),
                            data.get("line"), data.get("column"), data.get("text"),
                            data.get("snippet"), data.get("source"))
    exc.note = data.get("note")
    return exc
