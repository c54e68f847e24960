"""Executing statements for the command line.

:func:`_execute_text` runs ``-e`` text and StreamSQL files (parsed whole, executed one
by one, each result printed); :func:`_statement` runs the one statement a verb builds
from its arguments (:func:`_qualified` checks a ``[DB.]NAME`` argument first). Without a
job manager in this process, :func:`_annotate` says what START/STOP/DROP STREAMJOB
changed (the desired state) and whether a job manager (``streamjob server``, the holder
of the catalog's lease) will act on it.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from ..exceptions import StreamJobError
from ..render import render

if TYPE_CHECKING:
    from .app import _Context


def _execute_text(obj: _Context, text: str, source: str | None, executor,
                  as_json: bool = False) -> None:
    """Parse ``text`` whole (a parse error executes nothing), then execute and print its
    statements one by one, stopping at the first error (located in ``text``). With
    ``as_json`` each result is one JSON document on one line."""
    from ..grammar import parse_script

    for stmt in parse_script(text, source=source):
        try:
            result = executor.execute(stmt)
        except StreamJobError as exc:
            exc.locate(stmt.position.line, stmt.position.column, text, source)
            raise
        if executor.manager is None:
            result = _annotate(obj, stmt, result)
        render(result, as_json, compact=True)


_NAME_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)*`)"
_NAME_RE = re.compile(rf"{_NAME_PART}(?:\.{_NAME_PART})?")


def _qualified(name: str) -> tuple[str, str]:
    """``(database, name)`` of a ``[DB.]NAME`` command argument (default database filled in).

    Raises:
        StreamJobError: ``name`` is not a (backquoted where needed) name.
    """
    if not _NAME_RE.fullmatch(name):
        raise StreamJobError(f"invalid name '{name}': expected NAME or DATABASE.NAME "
                             "(letters, digits and '_'; other names in `backquotes`)")
    from ..grammar import parse_statement

    return parse_statement(f"DESCRIBE {name}").name.resolve()


def _statement(obj: _Context, sql: str, as_json: bool) -> None:
    """Execute one statement the CLI built from a verb's arguments and print its result.
    An error's position in that statement means nothing to the user and is dropped."""
    from ..executor import Executor
    from ..grammar import parse_statement

    stmt = parse_statement(sql)
    try:
        result = Executor(obj.catalog, obj.home).execute(stmt)
    except StreamJobError as exc:
        exc.line = exc.column = exc.snippet = None
        raise
    render(_annotate(obj, stmt, result), as_json)


def _lease_holder(catalog):
    """The job manager holding the catalog's lease (a ServerInfo), or None: none runs,
    or this catalog cannot tell."""
    holder = getattr(catalog, "lease_holder", None)
    if holder is None:
        return None
    try:
        return holder()
    except StreamJobError as exc:  # the statement already succeeded; say what we can
        # the package's logger ("streamjob.cli"), as before the CLI became a package
        logging.getLogger(__package__).warning("cannot read the job manager lease: %s", exc)
        return None


def _server_label(info) -> str:
    """``host:pid`` of a job manager's ServerInfo (else its id or repr)."""
    host, pid = getattr(info, "host", None), getattr(info, "pid", None)
    if host is not None and pid is not None:
        return f"{host}:{pid}"
    return str(getattr(info, "server_id", None) or getattr(info, "id", None) or info)


_NO_SERVER = "no job manager is running: start one with `streamjob server`"


def _annotate(obj: _Context, stmt, result):
    """START STREAMJOB from a client without a job manager only changes the desired
    state: say so, and whether a job manager (`streamjob server`) will start it. (STOP
    and DROP wait for the job manager running the job, see executor.jobs.)"""
    from dataclasses import replace

    if not result.pending:
        return result
    server = _lease_holder(obj.catalog)
    then = f"server {_server_label(server)} starts it" if server else _NO_SERVER
    msg = f"streamjob {result.object}: desired state RUNNING{result.detail}; {then}"
    return replace(result, message=msg)
