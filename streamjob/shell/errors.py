"""How the shell prints an error: one line, ``Error: [SOURCE:]LINE:COL: message``, with
the offending line of the input and a caret under the column when the error has one; a
bug (not a :class:`~streamjob.exceptions.StreamJobError`) as ``Error: internal error``."""

from __future__ import annotations

from ..client.splitter import Piece, position_in
from ..exceptions import StreamJobError


def error_text(exc: BaseException, piece: Piece | None = None, text: str = "",
               source: str | None = None, debug: bool = False) -> str:
    """The text printed for ``exc`` raised by ``piece`` of the input ``text``: with
    ``source`` (a script), its position in the script, else in the statement. ``debug``:
    the full trace is printed beside it, so a bug's line does not ask for ``--debug``."""
    if isinstance(exc, StreamJobError):
        message = " ".join(exc.message.split()) or type(exc).__name__
        where = ""
        if exc.line is not None and exc.column is not None:
            line, col = exc.line, exc.column
            if source is not None and piece is not None:
                line, col = position_in(text, piece.offset, line, col)
            where = f"{source}:{line}:{col}: " if source else f"{line}:{col}: "
        elif source is not None and piece is not None:
            line, col = position_in(text, piece.offset, 1, 1)
            where = f"{source}:{line}:{col}: "
        line_text = f"Error: {where}{message}"
        caret = _caret(text, piece, exc, source)
        if caret:
            line_text += "\n" + caret
    else:
        line_text = f"Error: internal error: {type(exc).__name__}: {' '.join(str(exc).split())}"
        if not debug:
            line_text += " (run with --debug for the full trace)"
    return line_text


def _caret(text: str, piece: Piece | None, exc: StreamJobError, source: str | None) -> str:
    """The offending line of the input and a caret under the error's column (as the
    CLI prints parse errors), or "" when the error has no position in ``text``."""
    if exc.line is None or exc.column is None or not text:
        return exc.snippet or ""
    line, col = exc.line, exc.column
    if piece is not None:
        line, col = position_in(text, piece.offset, line, col)
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return exc.snippet or ""
    return f"{lines[line - 1]}\n{' ' * (col - 1)}^"
