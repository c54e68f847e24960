"""Query text -> sqlglot tree, and positions in that text -> positions in the script.

A query (a job's ``insert into ... select ...`` or a derived stream's ``select ...``) is a
piece of a script: ``position`` is where its first character stands in the script. Every
rewrite done on the text before sqlglot reads it keeps the length of what it replaces,
so the offsets sqlglot records on the nodes (``meta`` start/end of identifiers, function
names and literals) are offsets into the text as the user wrote it, and an error can point
at the true line and column. (An escape inside the script's string literal, such as
``\"``, is one character longer in the script than in the query: positions after one on
the same line are off by that much.)
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, Tokenizer, TokenType

from ..exceptions import ValidationError
from ..grammar.statements import Position

#: Spark's ``window(...)`` function is read by sqlglot as the WINDOW keyword; calls are
#: renamed to this placeholder of the same length before parsing, and back after.
WINDOW_PLACEHOLDER = "_sjwin"


@dataclass(frozen=True)
class Span:
    """A place in the script: 1-based ``line`` and ``column``, and the ``text`` there as
    written (None when unknown)."""

    line: int | None
    column: int | None
    text: str | None = None


class QueryText:
    """The text of one query and where it starts in the script.

    Args:
        text: the query as written.
        position: the script position of its first character (None: report positions
            relative to the query itself).
    """

    def __init__(self, text: str, position: Position | None) -> None:
        self.text = text
        self.position = position

    def pos(self, offset: int) -> tuple[int | None, int | None]:
        """Script ``(line, column)`` of a 0-based offset into the query."""
        offset = max(0, min(offset, len(self.text)))
        before = self.text[:offset]
        qline = before.count("\n") + 1
        qcol = offset - (before.rfind("\n") + 1) + 1
        return script_pos(self.position, qline, qcol)

    def span(self, start: int, end: int) -> Span:
        """The span of the query's characters ``start..end`` (inclusive)."""
        line, col = self.pos(start)
        return Span(line, col, self.text[start:end + 1] or None)

    def token_span(self, token: Token) -> Span:
        """The span of one token."""
        return self.span(token.start, token.end)

    def node_span(self, node: exp.Expr | None) -> Span | None:
        """The span a parsed node covers (from the offsets sqlglot kept on it and its
        descendants), or None when sqlglot kept none."""
        if node is None:
            return None
        starts, ends = [], []
        for n in node.walk():
            meta = getattr(n, "_meta", None)  # read without creating an empty meta
            if meta and "start" in meta:
                starts.append(meta["start"])
                ends.append(meta["end"])
        if not starts:
            return None
        start, end = min(starts), max(ends)
        end = max(end, start)
        depth = self.text[start:end + 1].count("(") - self.text[start:end + 1].count(")")
        while depth > 0 and end + 1 < len(self.text):  # close a call's parentheses
            end += 1
            depth += {"(": 1, ")": -1}.get(self.text[end], 0)
        return self.span(start, end)

    def start(self) -> Span:
        """The span of the query's first character."""
        line, col = script_pos(self.position, None, None)
        if line is None:
            line, col = 1, 1
        return Span(line, col, None)

    def error(self, message: str, span: Span | None = None) -> ValidationError:
        """A ValidationError at ``span`` (the query's start when None)."""
        span = span or self.start()
        return ValidationError(message, line=span.line, column=span.column, text=span.text)


def script_pos(position: Position | None, line: int | None, col: int | None):
    """Map a 1-based (line, col) inside the query to the script."""
    if line is None:
        return (position.line, position.column) if position else (None, None)
    if position is None:
        return line, col
    if line == 1:
        return position.line, position.column + (col or 1) - 1
    return position.line + line - 1, col


def tokenize(text: str) -> list[Token] | None:
    """The query's tokens (Hive dialect), or None when it cannot be tokenized (the
    parser then reports the error properly)."""
    try:
        return Tokenizer(dialect="hive").tokenize(text)
    except (TokenError, Exception):  # noqa: BLE001
        return None


def parse(qt: QueryText, text: str, what: str) -> list[exp.Expr]:
    """Parse ``text`` (the query with same-length rewrites) into statements.

    Spark's ``window(...)`` calls come back as ``Anonymous`` nodes named ``window``.

    Raises:
        ValidationError: a syntax error, at its line and column in the script.
    """
    from .functions import check_calls

    check_calls(qt, tokenize(text), what)
    text = _rename_window_calls(text)
    try:
        statements = sqlglot.parse(text, read="hive")
    except SqlglotParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        highlight = err.get("highlight")
        col = err.get("col")
        if col is not None and highlight and "\n" not in highlight and col >= len(highlight):
            col = col - len(highlight) + 1  # sqlglot gives the token's last column; show its first
        line, col = script_pos(qt.position, err.get("line"), col)
        if highlight:
            highlight = highlight.replace(WINDOW_PLACEHOLDER, "window")
        raise ValidationError(
            f"syntax error in the {what}: {err.get('description', str(exc)).strip()}"
            + (f" near '{highlight}'" if highlight else ""),
            line=line, column=col, text=highlight,
        ) from None
    except TokenError as exc:
        line, col = script_pos(qt.position, 1, 1)
        raise ValidationError(f"syntax error in the {what}: {exc}", line=line, column=col) from None
    except RecursionError:
        raise too_deep(qt, what) from None
    statements = [s for s in statements if s is not None]
    for s in statements:
        for node in list(s.find_all(exp.Anonymous)):
            if node.name.lower() == WINDOW_PLACEHOLDER:
                node.set("this", exp.to_identifier("window", quoted=True))
    return statements


def too_deep(qt: QueryText, what: str) -> ValidationError:
    """The error for a query whose expressions nest too deeply for the planner (Python's
    recursion limit), at the query's first character (docs/reliability.md: limits)."""
    line, col = script_pos(qt.position, 1, 1)
    return ValidationError(
        f"the {what} nests its expressions too deeply to plan; split it (e.g. into a derived "
        "stream) or flatten long chains of operators",
        line=line, column=col,
    )


def is_window_call(node: exp.Expr) -> bool:
    """True for Spark's ``window(...)`` / ``session_window(...)`` time-window functions."""
    return isinstance(node, exp.Anonymous) and node.name.lower() in ("window", "session_window")


def _rename_window_calls(text: str) -> str:
    """Rename ``window(`` calls to the same-length placeholder (positions stay true)."""
    tokens = tokenize(text)
    if not tokens:
        return text
    for t, nxt in zip(tokens, tokens[1:]):
        if t.token_type == TokenType.WINDOW and nxt.token_type == TokenType.L_PAREN \
                and t.end - t.start + 1 == len(WINDOW_PLACEHOLDER):
            text = text[:t.start] + WINDOW_PLACEHOLDER + text[t.end + 1:]
    return text
