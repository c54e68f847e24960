"""Executing statements for the command line, through the invocation's client session
(:mod:`streamjob.client.session`, which also says where a started job runs).

:func:`_execute_text` runs ``-e`` text and StreamSQL files (parsed and checked whole,
then executed one by one, each result printed); :func:`_statement` runs the one statement a verb builds
from its arguments (:func:`_qualified` checks a ``[DB.]NAME`` argument first).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from ..exceptions import StreamJobError, ValidationError
from ..grammar import statements as st
from ..client.render import render

if TYPE_CHECKING:
    from .app import _Context


def _execute_text(text: str, source: str | None, session, as_json: bool = False,
                  previews=None, ends_session: bool = True, on_checked=None) -> None:
    """Apply ``text`` through ``session`` (a :class:`~streamjob.client.session.ClientSession`:
    parsed and checked whole first, so an error there executes nothing), printing each
    statement's result as it is executed; a statement failing while applying stops it
    (located in ``text``, with a note of what took effect). With ``as_json`` each result
    is one JSON document on one line.

    ``previews`` (``-e``): a :class:`Previews` that runs each bare ``SELECT`` of ``text``
    as the shell does (:mod:`streamjob.client.preview`); the statements between two
    SELECTs are applied as one script, in order. Without it a SELECT is the grammar's
    error. ``ends_session``: nothing runs in this session after ``text``, so a ``SET`` as
    its last statement says it applies to nothing (the session ends with the command).
    ``on_checked``: called once, with no arguments, when the first statement has been
    applied, i.e. after the whole script passed its check (``run`` starts Spark then).

    Raises:
        StreamJobError: a statement's error, located in ``text``; later statements and
            SELECTs do not run.
    """
    if previews is not None:  # undecodable bytes, huge lines: refused before any run
        from ..grammar.limits import check_text

        check_text(text, source)
    runs = _runs(text) if previews is not None else [(None, text)]
    for i, (select, part) in enumerate(runs):
        last_run = ends_session and i == len(runs) - 1
        if select is not None:
            previews.run(select, text, source)
            continue
        from ..grammar import parse_script

        statements = parse_script(part, source=source)  # parsed once (issue 19)
        count = len(statements)
        for n, (stmt, result) in enumerate(
                session.execute_script(part, source, statements=statements), 1):
            if on_checked is not None:
                on_checked()
                on_checked = None
            if last_run and n == count and isinstance(stmt, st.SetProperty) \
                    and stmt.key is not None:
                result = replace(result, message=f"{result.message}; {SET_ENDS}")
            render(result, as_json, compact=True)


#: The tail of a SET that is the last statement of its session (``-e``, a file).
SET_ENDS = ("nothing follows it in this command, so it applies to nothing (SET lasts for "
            "the statements after it in the same -e or file, or a shell session)")


def _runs(text: str) -> list[tuple[object, str]]:
    """``text`` cut at its bare SELECTs: ``(Piece, "")`` for a SELECT, ``(None, part)``
    for the statements between, ``part`` being ``text`` with everything else blanked
    (newlines kept), so positions in ``part`` are positions in ``text``."""
    from ..planner.preview import is_select
    from ..client.splitter import Piece, split_input

    split = split_input(text)
    pieces = list(split.pieces)
    if split.rest:
        pieces.append(Piece("sql", split.rest.rstrip(), split.rest_offset))
    if not any(is_select(p.text) for p in pieces):
        return [(None, text)]
    out: list[tuple[object, str]] = []
    group: list = []

    def flush() -> None:
        if group:
            start, end = group[0].offset, group[-1].offset + len(group[-1].text)
            out.append((None, _blank(text[:start]) + text[start:end] + _blank(text[end:])))
            group.clear()

    for p in pieces:
        if is_select(p.text):
            flush()
            out.append((p, ""))
        else:
            group.append(p)
    flush()
    return out


def _blank(text: str) -> str:
    """``text`` with every character but newlines made a blank."""
    return "".join(c if c == "\n" else " " for c in text)


class Previews:
    """The ``SELECT ... FROM stream [LIMIT n]`` previews of ``-e``, run as the shell runs
    them (:func:`streamjob.client.preview.run_select`: up to ``n`` rows, 20 without LIMIT,
    or Ctrl-C; nothing committed or recorded), in this process's Spark (started on the
    first SELECT), with the invocation's session (its SET values). With ``--server`` a
    preview is refused: the server runs no previews, and this process has no catalog.

    Attributes are those :func:`~streamjob.client.preview.run_select` reads of a shell."""

    interactive = False
    reset = None  # each Kafka stream from its own reset strategy (SET of it: the shell's)

    def __init__(self, obj: "_Context", as_json: bool) -> None:
        self._obj, self.as_json = obj, as_json
        self._started = False

    @property
    def catalog(self):
        return self._obj.catalog

    @property
    def home(self):
        return self._obj.home

    @property
    def session_props(self) -> dict[str, str]:
        return self._obj.session.properties

    @property
    def database(self) -> str:
        """The invocation's current database (``USE db`` earlier in the same ``-e``)."""
        return self._obj.session.database

    def spark(self):
        from ..spark.session import spark_session
        from ..shell.terminal import restore_sigint

        spark = spark_session(self.home, self._obj.debug)
        self._started = True
        restore_sigint()  # Ctrl-C stops the preview (pyspark's handler would cancel all)
        return spark

    def echo(self, line: str = "") -> None:
        click.echo(line)

    def run(self, piece, text: str, source: str | None) -> None:
        """Run the SELECT ``piece`` of ``text``; errors are located in ``text``.

        Raises:
            ValidationError: with ``--server``, or the SELECT does not resolve.
            StreamJobError: the query failed.
        """
        from ..client.preview import run_select
        from ..client.splitter import position_in

        try:
            if self._obj.server:
                raise ValidationError(
                    f"a SELECT preview runs Spark in this process over the catalog; through "
                    f"--server {self._obj.server} it is refused (the server runs no previews): "
                    "run it without --server, on a host with the catalog", 1, 1)
            run_select(self, piece.text)
        except StreamJobError as exc:
            if exc.line is not None and exc.column is not None and not exc.source:
                line, column = position_in(text, piece.offset, exc.line, exc.column)
                exc.line = exc.column = exc.snippet = None
                exc.locate(line, column, text, source)
            raise

    def close(self) -> None:
        """Stop Spark if a preview started it."""
        if self._started:
            from ..spark.session import stop_spark

            stop_spark()


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
