"""Executing statements for the command line, through the invocation's client session
(:mod:`streamjob.client.session`, which also says where a started job runs).

:func:`execute_text` runs ``-e`` text and StreamSQL files (parsed and checked whole,
then executed one by one, each result printed), :func:`execute_options` the ``-e`` options
with their SELECT previews; :func:`execute_statement` runs the one statement a verb builds
from its arguments (:func:`resolve_name` checks a ``[DB.]NAME`` argument first).
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..exceptions import StreamJobError
from ..grammar import statements as st
from ..client.render import render
from .context import Invocation


def execute_text(text: str, source: str | None, session, as_json: bool = False,
                  previews=None, ends_session: bool = True, on_checked=None) -> None:
    """Apply ``text`` through ``session`` (a :class:`~streamjob.client.session.ClientSession`:
    parsed and checked whole first, so an error there executes nothing), printing each
    statement's result as it is executed; a statement failing while applying stops it
    (located in ``text``, with a note of what took effect). With ``as_json`` each result
    is one JSON document on one line.

    ``previews`` (``-e``): the :class:`~streamjob.client.preview.Previews` that runs each
    bare ``SELECT`` of ``text`` (as the shell does); the statements between two
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
            _preview(previews, select, text, source, as_json)
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


def execute_options(obj: Invocation, statements: tuple[str, ...], as_json: bool) -> None:
    """``streamjob -e STATEMENTS [-e ...]``: each text in turn through the invocation's one
    session (SET carries over), its bare SELECTs run as previews
    (:class:`~streamjob.client.preview.Previews`: in this process's Spark, started on the
    first SELECT and stopped at the end). With ``--server`` a SELECT is refused: the
    server runs no previews, and this process has no catalog.

    Raises:
        StreamJobError: as :func:`execute_text`; later texts do not run.
    """
    from ..client.preview import Previews

    refusal = None if not obj.server else (
        f"a SELECT preview runs Spark in this process over the catalog; through "
        f"--server {obj.server} it is refused (the server runs no previews): "
        "run it without --server, on a host with the catalog")
    previews = Previews(obj.session, lambda: _spark(obj), refusal=refusal)
    try:
        for i, text in enumerate(statements):
            execute_text(text, None, obj.session, as_json=as_json, previews=previews,
                         ends_session=i == len(statements) - 1)
    finally:
        previews.close()


def _spark(obj: Invocation):
    """The process's SparkSession for ``-e``'s previews, Ctrl-C left to Python (so it stops
    the preview; pyspark's handler would cancel every Spark job)."""
    from ..shell.terminal import restore_sigint
    from ..spark.session import spark_session

    spark = spark_session(obj.home, obj.debug)
    restore_sigint()
    return spark


def _preview(previews, piece, text: str, source: str | None, as_json: bool) -> None:
    """Run the SELECT ``piece`` of ``text`` through ``previews``; its errors are located
    in ``text`` (``source`` names the file).

    Raises:
        ValidationError: the preview is refused, or the SELECT does not resolve.
        StreamJobError: the query failed.
    """
    from ..client.splitter import position_in

    try:
        previews.run(piece.text, as_json)
    except StreamJobError as exc:
        if exc.line is not None and exc.column is not None and not exc.source:
            line, column = position_in(text, piece.offset, exc.line, exc.column)
            exc.line = exc.column = exc.snippet = None
            exc.locate(line, column, text, source)
        raise


_NAME_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)*`)"
_NAME_RE = re.compile(rf"{_NAME_PART}(?:\.{_NAME_PART})?")


def resolve_name(name: str) -> tuple[str, str]:
    """``(database, name)`` of a ``[DB.]NAME`` command argument (default database filled in).

    Raises:
        StreamJobError: ``name`` is not a (backquoted where needed) name.
    """
    if not _NAME_RE.fullmatch(name):
        raise StreamJobError(f"invalid name '{name}': expected NAME or DATABASE.NAME "
                             "(letters, digits and '_'; other names in `backquotes`)")
    from ..grammar import parse_statement

    return parse_statement(f"DESCRIBE {name}").name.resolve()


def execute_statement(obj: Invocation, sql: str, as_json: bool) -> None:
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
