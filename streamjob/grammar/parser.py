"""StreamSQL script parser: source text -> frozen statement dataclasses.

The grammar lives in ``streamsql.lark`` (LALR(1), lark's contextual lexer); it is built
once, on first use, and kept for the life of the process. :func:`parse_script` turns a
whole script into a list of :mod:`~streamjob.grammar.statements` objects;
:func:`parse_statement` parses exactly one statement. Every failure, whatever the
input, is a :class:`~streamjob.exceptions.ParseError` carrying the 1-based line and
column of the offending text, that text, a snippet with a caret, and a sentence a
user can act on.

Decisions worth knowing (see also the grammar file's header):

* A keyword is recognised only where the grammar accepts one, so ``comment``,
  ``year`` or ``start`` are ordinary names elsewhere; a name that *is* a keyword in
  its position (``DESCRIBE stream``) needs backquotes.
* Unquoted identifiers, property keys, SET/RESET keys, column types and ``STORED AS``
  formats are lower-cased; backquoted names keep their case; property values are kept
  as written (string literals unescaped).
* String literals use Hive's escapes: ``\\n \\t \\r \\b \\0 \\Z \\\\ \\' \\"``, three
  octal digits (``'\\001'``), ``\\uXXXX``; ``\\%`` and ``\\_`` keep their backslash (LIKE
  patterns); any other ``\\c`` is ``c``. A doubled quote inside a literal is one quote.
* ``CREATE STREAM s AS <query>``: the query is the raw source text up to the ``;``,
  with one pair of enclosing parentheses removed (``AS (SELECT ...)``).
* ``SET k = v``: ``v`` is the rest of the statement with comments removed, trimmed, and
  unquoted when it is a single string literal. ``SET k`` without ``=`` is an error.
* A statement keyword at the start of a line inside a raw tail (``AS SELECT ...`` or a
  SET value) is reported as a missing ``;`` rather than swallowed into the query.
"""

from __future__ import annotations

from pathlib import Path

from lark import Lark
from lark.exceptions import LarkError, UnexpectedInput

from streamjob.exceptions import ParseError
from streamjob.grammar.errors import from_lark
from streamjob.grammar.lexical import Lines, terminal_keyword, word_at
from streamjob.grammar.limits import check_text
from streamjob.grammar.statements import Statement
from streamjob.grammar.transform import Builder

__all__ = ["next_keywords", "parse_script", "parse_statement"]

_GRAMMAR_FILE = Path(__file__).with_name("streamsql.lark")


class _AlwaysLexNames:
    """Postlexer that only asks the contextual lexer to try IDENT in every state."""

    always_accept = ("IDENT",)

    def process(self, stream):
        return stream


_PARSER: Lark | None = None


def _parser() -> Lark:
    global _PARSER
    if _PARSER is None:
        _PARSER = Lark(
            _GRAMMAR_FILE.read_text(encoding="utf-8"),
            parser="lalr",
            lexer="contextual",
            postlex=_AlwaysLexNames(),
            propagate_positions=True,
            maybe_placeholders=False,
        )
    return _PARSER


# --------------------------------------------------------------------------- public API


_TERMINAL_KEYWORDS: dict[str, str] | None = None


def next_keywords(text: str) -> frozenset[str] | None:
    """The keywords (upper case) the grammar accepts right after ``text``, the beginning
    of a script (its statements so far and the start of one more): what the shell's
    completer offers after ``CREATE``, ``SHOW``, ``ROW FORMAT`` ... (lark's interactive
    parser: the terminals its LALR state accepts). None when ``text`` is no such
    beginning (it does not lex or parse so far); a query's SQL is no part of the
    grammar (it is a raw tail)."""
    global _TERMINAL_KEYWORDS
    parser = _parser()
    if _TERMINAL_KEYWORDS is None:
        _TERMINAL_KEYWORDS = {t.name: w for t in parser.terminals if (w := terminal_keyword(t))}
    try:
        interactive = parser.parse_interactive(text)
        interactive.exhaust_lexer()
        accepted = interactive.accepts()
    except (LarkError, RecursionError):
        return None
    return frozenset(w for name in accepted if (w := _TERMINAL_KEYWORDS.get(name)))



def parse_script(text: str, source: str | None = None) -> list[Statement]:
    """Parse a StreamSQL script into its statements, in order.

    Args:
        text: the script. Statements end with ``;`` (optional after the last one);
            empty statements and comments are skipped.
        source: the script's name (a path, ``<stdin>``), carried into errors.

    Returns:
        One :class:`~streamjob.grammar.statements.Statement` subclass instance per
        statement, each with ``position`` (its first keyword) and ``text`` (its source
        without the ``;``, stripped). A script with no statements gives ``[]``.

    Raises:
        ParseError: for any input that is not a valid script, with ``line``,
            ``column``, ``text``, ``snippet`` and ``source`` set. Nothing else escapes.
        TypeError: if ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_script() needs a str, not {type(text).__name__}")
    if text.startswith("\ufeff"):  # a byte-order mark; keep the columns where they are
        text = " " + text[1:]
    check_text(text, source)
    lines = Lines(text)
    try:
        tree = _parser().parse(text)
        return Builder(text, lines, source).script(tree)
    except ParseError as exc:
        if exc.source is None:
            exc.source = source
        raise
    except UnexpectedInput as exc:
        raise from_lark(exc, _parser(), text, lines, source) from None
    except LarkError as exc:
        raise ParseError(f"cannot parse the script: {exc}", 1, 1, "", lines.snippet(1, 1), source) from None
    except RecursionError:
        raise ParseError("the script is nested too deeply to parse", 1, 1, "", lines.snippet(1, 1), source) from None
    except Exception as exc:  # a bug here must still reach the user as a parse error
        raise ParseError(
            f"cannot parse the script ({type(exc).__name__}: {exc})", 1, 1, "", lines.snippet(1, 1), source
        ) from None


def parse_statement(text: str, source: str | None = None) -> Statement:
    """Parse exactly one statement (a trailing ``;`` is allowed).

    Returns:
        The statement, as :func:`parse_script` would give it.

    Raises:
        ParseError: if the text does not parse, holds no statement, or holds more than
            one (then pointing at the second).
        TypeError: if ``text`` is not a ``str``.
    """
    statements = parse_script(text, source)
    if not statements:
        lines = Lines(text)
        line, column = lines.position(len(text))
        raise ParseError("expected a statement, found none", line, column, "", lines.snippet(line, column), source)
    if len(statements) > 1:
        second = statements[1]
        lines = Lines(text)
        line, column = second.position.line, second.position.column
        word = word_at(text, lines.offset(line, column))
        raise ParseError(
            f"expected exactly one statement, found {len(statements)}",
            line,
            column,
            word,
            lines.snippet(line, column),
            source,
        )
    return statements[0]
