"""Lark errors -> :class:`~streamjob.exceptions.ParseError`.

:func:`from_lark` turns an ``UnexpectedInput`` raised by lark into an error a user can
act on: the 1-based line and column of the offending text, that text, a snippet with a
caret, and a message naming what the parser would really accept there (computed by
trial-feeding a copy of the LALR parser), a "did you mean" for a misspelt keyword, and
dedicated messages for unterminated strings/names/comments, a missing ``;`` and an
unquoted STREAMJOB query.
"""

from __future__ import annotations

import re
from copy import copy

from lark import Lark, Token
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

from streamjob.exceptions import ParseError
from streamjob.grammar.lexical import STATEMENT_KEYWORDS, Lines, token_at, word_at
from ..nearest import nearest

__all__ = ["from_lark", "suggest", "unexpected", "unexpected_end"]

_DESCRIPTIVE = {
    "IDENT": "a name",
    "QUOTED_IDENT": "a name",
    "STRING": "a quoted string",
    "INT": "a number",
    "KEY": "a property name",
    "VALUE_WORD": "a value",
    "SET_VALUE": "a value",
    "AS_QUERY": "a query (SELECT ...)",
    "$END": "end of script",
}
_PUNCTUATION_ORDER = [",", ")", "(", "=", ";", ".", "<", ">", ":"]


def _expected_names(parser: Lark, terminal_names) -> list[str]:
    keywords, punctuation, descriptive = set(), set(), []
    by_name = {t.name: t for t in parser.terminals}
    for name in terminal_names:
        if name in _DESCRIPTIVE:
            label = _DESCRIPTIVE[name]
            if label not in descriptive:
                descriptive.append(label)
            continue
        term = by_name.get(name)
        if term is None or term.pattern.type != "str":
            continue
        value = term.pattern.value
        if value.isalpha():
            keywords.add(value.upper())
        else:
            punctuation.add(value)
    descriptive_order = list(dict.fromkeys(_DESCRIPTIVE.values()))
    return (
        sorted(keywords)
        + [f"'{p}'" for p in _PUNCTUATION_ORDER if p in punctuation]
        + sorted(descriptive, key=descriptive_order.index)
    )


def _expected_terminals(exc: UnexpectedInput) -> set[str]:
    """The terminals the parser would really accept where it stopped.

    The LALR table of a state lists lookaheads merged from every context that shares
    the state; feeding each candidate to a copy of the parser keeps only those that
    lead somewhere in this context."""
    state = getattr(exc, "state", None)
    try:
        conf = copy(state.parse_conf)
        conf.callbacks = {}
        candidates = [t for t in conf.states[state.state_stack[-1]] if t.isupper()]
    except (AttributeError, KeyError, IndexError, TypeError):
        expected = getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ()
        return set(expected)
    accepted = set()
    for terminal in candidates:
        trial = type(state)(conf, state.lexer, list(state.state_stack), list(state.value_stack))
        try:
            trial.feed_token(Token(terminal, ""), is_end=terminal == "$END")
        except (UnexpectedToken, AssertionError, KeyError):
            continue
        accepted.add(terminal)
    return accepted or set(candidates)


def _describe_expected(names: list[str], limit: int = 6) -> str:
    if not names:
        return ""
    if len(names) == 1:
        return f", expected {names[0]}"
    shown = names[:limit]
    more = ", ..." if len(names) > limit else ""
    return ", expected one of: " + ", ".join(shown) + more


def suggest(word: str, keywords) -> str | None:
    """The keyword (of ``keywords``, upper case) ``word`` is most likely a misspelling of,
    or None: ``word`` must be a bare word (letters, ``_``) and not a keyword itself, and
    the nearest keyword (:func:`streamjob.nearest.nearest`, 0.6) (``FORM`` -> FROM,
    ``SELEC`` -> SELECT, ``whre`` -> WHERE)."""
    keywords = [k for k in keywords if k.isalpha() and k.isupper()]
    if not word or not keywords or not re.fullmatch(r"[A-Za-z_]+", word) or word.upper() in keywords:
        return None
    return nearest(word, keywords)


def _suggestion(word: str, keywords) -> str:
    close = suggest(word, keywords)
    return f" (did you mean {close}?)" if close else ""


def unexpected(word: str, expected=(), keywords=None, where: str = "") -> str:
    """The one wording of a syntax error at a token, for statements (:func:`from_lark`)
    and queries (:mod:`streamjob.planner.text`) alike:
    ``unexpected 'WORD'{where}, expected one of: ... (did you mean KEYWORD?)``.

    ``expected`` names what would be accepted there (keywords upper case, punctuation
    quoted, descriptions); the did-you-mean is over ``keywords`` (default: the keywords
    among ``expected``). ``where`` follows the word (`` in the job's query``)."""
    expected = list(expected)
    return (f"unexpected {_quote(word)}{where}{_describe_expected(expected)}"
            f"{_suggestion(word, expected if keywords is None else keywords)}")


def unexpected_end(of: str = "script", expected=()) -> str:
    """``unexpected end of {of}, expected ...`` (the text ran out where more was needed)."""
    return f"unexpected end of {of}{_describe_expected(list(expected))}"


def from_lark(exc: UnexpectedInput, parser: Lark, text: str, lines: Lines, source: str | None) -> ParseError:
    """The :class:`ParseError` for ``exc``, raised by ``parser`` on ``text``.

    ``lines`` indexes ``text``; ``source`` (the script's name) is carried into the error.
    Always returns an error (never raises), whatever kind of lark error ``exc`` is.
    """
    expected_terms = _expected_terminals(exc)
    names = _expected_names(parser, expected_terms)

    offset = None
    if isinstance(exc, UnexpectedCharacters):
        offset = exc.pos_in_stream
    elif isinstance(exc, UnexpectedToken) and exc.token.type != "$END" and exc.token.start_pos is not None:
        offset = exc.token.start_pos
    if offset is not None and offset < len(text):
        unterminated = _unterminated(text, offset, lines, source)
        if unterminated is not None:
            return unterminated

    if isinstance(exc, UnexpectedCharacters):
        line, column = lines.position(offset)
        word = word_at(text, offset)
        return ParseError(
            unexpected(word, names, keywords=()),
            line,
            column,
            word,
            lines.snippet(line, column),
            source,
        )

    if isinstance(exc, UnexpectedToken):
        token = exc.token
        if token.type == "$END":
            end_line, end_column = lines.position(token.end_pos or 0)
            return ParseError(
                unexpected_end("script", names),
                end_line,
                end_column,
                "",
                lines.snippet(end_line, end_column),
                source,
            )
        offset = token.start_pos if token.start_pos is not None else 0
        line, column = lines.position(offset)
        snippet = lines.snippet(line, column)
        word = token.value if token.type in ("STRING", "QUOTED_IDENT") else word_at(text, offset)
        if "SEMICOLON" in expected_terms and word.lower() in STATEMENT_KEYWORDS:
            return ParseError(
                f"missing ';' between statements: {_quote(word)} starts a new statement",
                line,
                column,
                word,
                snippet,
                source,
            )
        if expected_terms == {"STRING"} and word.lower() in ("insert", "select", "with", "from"):
            return ParseError(
                f"unexpected {_quote(word)}: the query of a STREAMJOB is a quoted string, "
                'as in AS ("insert into t select ...")',
                line,
                column,
                word,
                snippet,
                source,
            )
        message = unexpected(word, names)
        return ParseError(message, line, column, word, snippet, source)

    if isinstance(exc, UnexpectedEOF):
        line, column = lines.position(len(text))
        return ParseError(
            unexpected_end("script", names), line, column, "", lines.snippet(line, column), source
        )

    line = getattr(exc, "line", None) or 1
    column = getattr(exc, "column", None) or 1
    if not isinstance(line, int) or line < 1 or line > len(lines.starts):
        line, column = 1, 1
    return ParseError(f"cannot parse the script: {exc}", line, column, "", lines.snippet(line, column), source)


def _unterminated(text: str, offset: int, lines: Lines, source: str | None) -> ParseError | None:
    """A ParseError if a string, quoted name or comment opens at ``offset`` and never closes."""
    char = text[offset]
    kind = token_at(text, offset).kind
    if char in "'\"" and kind != "string":
        message = "unterminated string starting here"
    elif char == "`" and kind != "name":
        message = "unterminated quoted name starting here"
    elif text.startswith("/*", offset) and kind != "comment":
        message = "unterminated comment starting here"
    else:
        return None
    line, column = lines.position(offset)
    rest = text[offset:].split("\n", 1)[0]
    return ParseError(message, line, column, rest, lines.snippet(line, column), source)


def _quote(word: str) -> str:
    if "\n" in word:
        word = word.split("\n", 1)[0] + "..."
    if len(word) > 40:
        word = word[:37] + "..."
    if not word.isprintable():
        word = word.encode("unicode_escape").decode("ascii")
    return "'" + word + "'" if "'" not in word else '"' + word + '"'
