"""Executing statements for the command line, through the invocation's client session
(:mod:`streamjob.session`, which also says where a started job runs).

:func:`_execute_text` runs ``-e`` text and StreamSQL files (parsed and checked whole,
then executed one by one, each result printed); :func:`_statement` runs the one statement a verb builds
from its arguments (:func:`_qualified` checks a ``[DB.]NAME`` argument first).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..exceptions import StreamJobError
from ..render import render

if TYPE_CHECKING:
    from .app import _Context


def _execute_text(text: str, source: str | None, session, as_json: bool = False) -> None:
    """Apply ``text`` through ``session`` (a :class:`~streamjob.session.ClientSession`:
    parsed and checked whole first, so an error there executes nothing), printing each
    statement's result as it is executed; a statement failing while applying stops it
    (located in ``text``, with a note of what took effect). With ``as_json`` each result
    is one JSON document on one line."""
    for _stmt, result in session.execute_script(text, source):
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
    from ..grammar import parse_statement

    stmt = parse_statement(sql)
    try:
        result = obj.session.execute(stmt)
    except StreamJobError as exc:
        exc.line = exc.column = exc.snippet = None
        raise
    render(result, as_json)
