"""Source-text helpers shared by the StreamSQL parser, its transformer and its errors.

* :class:`Lines` maps offsets to 1-based ``(line, column)`` and back, and draws the
  snippet-with-caret shown in every :class:`~streamjob.exceptions.ParseError`.
* :func:`unescape_string` gives the value of a quoted literal (Hive's escapes);
  :func:`ident_value` the name an identifier token stands for.
* :func:`iter_pieces` splits raw SQL (a ``CREATE STREAM ... AS`` query, a ``SET`` value)
  into strings, quoted names, comments, blanks and other text; :func:`trimmed_span` and
  :func:`masked` build on it, :data:`STATEMENT_START_RE` finds a statement keyword at the
  start of a line (a missing ``;``).
* :func:`word_at` is the token-ish text at an offset, quoted in error messages.
* The keyword vocabulary, one place for the parser's errors and the shell's
  highlighting and completion: :data:`GRAMMAR_KEYWORDS` and :data:`STATEMENT_KEYWORDS`
  are read from ``streamsql.lark`` (:func:`vocabulary_of`), so a keyword added to the
  grammar is highlighted and completed with nothing else to edit;
  :data:`QUERY_KEYWORDS` are those of the SQL inside queries (sqlglot reads them, not
  the grammar); :data:`KEYWORDS` is all of them.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from lark import Token

__all__ = [
    "GRAMMAR_KEYWORDS",
    "KEYWORDS",
    "PIECE_RE",
    "QUERY_KEYWORDS",
    "STATEMENT_KEYWORDS",
    "STATEMENT_START_RE",
    "Lines",
    "ident_value",
    "iter_pieces",
    "masked",
    "trimmed_span",
    "unescape_string",
    "Vocabulary",
    "vocabulary_of",
    "word_at",
]

# --------------------------------------------------------------------------- positions


class Lines:
    """Offset <-> 1-based (line, column) for one text; lines end at ``\\n`` as in lark."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1

    def offset(self, line: int, column: int) -> int:
        return self.starts[line - 1] + column - 1

    def snippet(self, line: int, column: int) -> str:
        start = self.starts[line - 1] if 0 < line <= len(self.starts) else 0
        end = self.text.find("\n", start)
        source_line = self.text[start : end if end >= 0 else len(self.text)].rstrip("\r")
        pad = "".join("\t" if ch == "\t" else " " for ch in source_line[: max(column - 1, 0)])
        return f"{source_line}\n{pad}^"


# --------------------------------------------------------------------------- literals

_HIVE_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}
_UNESCAPE_RE = {
    quote: re.compile(r"\\([0-3][0-7]{2}|u[0-9a-fA-F]{4}|[\s\S])|" + quote * 2) for quote in ("'", '"')
}


def _unescape_one(match: re.Match[str]) -> str:
    code = match.group(1)
    if code is None:  # a doubled quote
        return match.group(0)[0]
    if len(code) == 3:  # '\001'
        return chr(int(code, 8))
    if len(code) == 5:  # '\u0001'
        return chr(int(code[1:], 16))
    return _HIVE_ESCAPES.get(code, code)


def unescape_string(literal: str) -> str:
    """The value of a quoted string literal as lexed (``literal`` includes its quotes).

    Hive's rules: ``\\n \\t \\r \\b \\0 \\Z \\\\ \\' \\"``, ``\\NNN`` (three octal
    digits), ``\\uXXXX``; ``\\%`` and ``\\_`` keep the backslash; any other ``\\c`` is
    ``c``; a doubled quote stands for one quote."""
    quote, body = literal[0], literal[1:-1]
    if "\\" not in body and quote * 2 not in body:
        return body
    return _UNESCAPE_RE[quote].sub(_unescape_one, body)


def ident_value(token: Token) -> str:
    if token.type == "QUOTED_IDENT":
        return token.value[1:-1].replace("``", "`")
    return token.value.lower()


# Pieces of raw SQL text: strings, quoted names, comments, or one other character.
PIECE_RE = re.compile(
    r"""(?P<str>'(?:[^'\\]|\\[\s\S]|'')*'|"(?:[^"\\]|\\[\s\S]|"")*")"""
    r"""|(?P<name>`(?:[^`]|``)*`)"""
    r"""|(?P<comment>--[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)"""
    r"""|(?P<ws>\s+)"""
    r"""|(?P<other>[^'"`\s\-/]+|[\s\S])"""
)


def iter_pieces(raw: str):
    """Yield ``(kind, start, end)`` over ``raw``; kinds: str, name, comment, ws, other."""
    pos = 0
    while pos < len(raw):
        match = PIECE_RE.match(raw, pos)
        if match is None or match.end() == pos:  # cannot happen with a lexed tail
            yield "other", pos, pos + 1
            pos += 1
            continue
        yield match.lastgroup, match.start(), match.end()
        pos = match.end()


def trimmed_span(raw: str) -> tuple[int, int] | None:
    """Offsets of ``raw`` without leading and trailing blanks and comments (None if
    nothing else is left)."""
    first = last = None
    for kind, start, end in iter_pieces(raw):
        if kind not in ("ws", "comment"):
            first = start if first is None else first
            last = end
    return None if first is None else (first, last)


def masked(raw: str) -> str:
    """``raw`` with strings, quoted names and comments blanked (same length)."""
    chars = list(raw)
    for kind, start, end in iter_pieces(raw):
        if kind in ("str", "name", "comment"):
            chars[start:end] = " " * (end - start)
    return "".join(chars)


STATEMENT_START_RE = re.compile(
    r"(?i)(?<=\n)[ \t\f\v]*("
    r"create\s+(?:stream|streamjob|table|database)\b"
    r"|(?:start|stop|alter)\s+streamjob\b"
    r"|drop\s+(?:stream|streamjob|table|database)\b"
    r"|(?:list|show)\s+streamjobs\b"
    r"|show\s+(?:streams|tables|checkpoints|databases|topics|create)\b"
    r"|(?:describe|desc)\s+(?:stream|streamjob|table)\b"
    r"|set\s+[a-z_][a-z0-9_.]*\s*="
    r"|reset\b"
    r"|insert\s+into\b"
    r"|explain\s+(?:extended|streamjob|insert)\b"
    r")"
)

# --------------------------------------------------------------------------- keywords

GRAMMAR_FILE = Path(__file__).with_name("streamsql.lark")

#: A raw terminal that begins with a keyword (``INSERT_STATEMENT: /insert(?![A-Za-z0-9_])...``).
_LEADING_WORD_RE = re.compile(r"([A-Za-z]+)\(\?!\[A-Za-z0-9_\]\)")


@dataclass(frozen=True)
class Vocabulary:
    """The keywords of a StreamSQL grammar, upper case: ``keywords`` every one it
    spells (``"create"i``, and the leading word of a raw terminal such as
    ``INSERT_STATEMENT``); ``statement_keywords`` those a statement can begin with."""

    keywords: frozenset[str]
    statement_keywords: frozenset[str]


def vocabulary_of(grammar: str) -> Vocabulary:
    """The :class:`Vocabulary` of a lark grammar's text (``start`` its start rule): its
    terminals' words, and the FIRST set of ``start`` (computed over the compiled rules,
    so that a statement added as a new alternative of ``_statement``, or of a rule it
    names, is found).

    Raises:
        lark.exceptions.GrammarError: ``grammar`` is no lark grammar.
    """
    from lark.load_grammar import load_grammar  # lark's own loader (what Lark() calls)

    compiled, _ = load_grammar(grammar, "<streamsql.lark>", None, False)
    terminals, rules, _ = compiled.compile(["start"], set())

    def word(term) -> str | None:
        pattern = term.pattern
        if pattern.type == "str":
            return pattern.value.upper() if pattern.value.isalpha() else None
        match = _LEADING_WORD_RE.match(pattern.value)
        return match.group(1).upper() if match else None

    words = {t.name: word(t) for t in terminals}
    first: dict[str, set[str]] = {}
    nullable: set[str] = set()
    changed = True
    while changed:  # FIRST sets to a fixpoint (LL(1) textbook)
        changed = False
        for rule in rules:
            origin = rule.origin.name
            seen = first.setdefault(origin, set())
            size = len(seen)
            for sym in rule.expansion:
                if sym.is_term:
                    seen.add(sym.name)
                    break
                seen |= first.get(sym.name, set())
                if sym.name not in nullable:
                    break
            else:
                if origin not in nullable:
                    nullable.add(origin)
                    changed = True
            changed = changed or len(seen) != size
    return Vocabulary(frozenset(w for w in words.values() if w),
                      frozenset(w for t in first.get("start", ()) if (w := words.get(t))))


@functools.cache
def _grammar_vocabulary() -> Vocabulary:
    return vocabulary_of(GRAMMAR_FILE.read_text(encoding="utf-8"))


#: Every keyword of ``streamsql.lark`` (upper case).
GRAMMAR_KEYWORDS: frozenset[str] = _grammar_vocabulary().keywords
#: The words a statement begins with, lower case (``create``, ``show``, ``insert`` ...),
#: from ``streamsql.lark``: a missing ``;`` before one is reported as such.
STATEMENT_KEYWORDS: frozenset[str] = frozenset(
    k.lower() for k in _grammar_vocabulary().statement_keywords)

#: Keywords of the SQL inside queries (a job's ``insert into ... select``, a derived
#: stream's query): Hive/Spark SQL's clauses, operators and time units, and StreamSQL's
#: windows (``STREAMWINDOW w AS (LENGTH '1' MINUTE SLIDE ...)``, ``SESSIONWINDOW ... GAP``).
#: Queries are raw text read by sqlglot, so these are not in the grammar.
QUERY_KEYWORDS: tuple[str, ...] = (
    "ALL", "AND", "ANTI", "AS", "ASC", "BETWEEN", "BY", "CASE", "CAST", "CLUSTER", "CROSS",
    "DAY", "DAYS", "DESC", "DISTINCT", "DISTRIBUTE", "ELSE", "END", "EXISTS", "FALSE",
    "FROM", "FULL", "GAP", "GROUP", "HAVING", "HOUR", "HOURS", "IN", "INNER", "INSERT",
    "INTERVAL", "INTO", "IS", "JOIN", "LATERAL", "LEFT", "LENGTH", "LIKE", "LIMIT",
    "MINUTE", "MINUTES", "NOT", "NULL", "ON", "OR", "ORDER", "OUTER", "OVER", "OVERWRITE",
    "PARTITION", "RIGHT", "RLIKE", "SECOND", "SECONDS", "SELECT", "SEMI", "SESSIONWINDOW",
    "SLIDE", "SORT", "STREAMWINDOW", "TABLE", "THEN", "TRUE", "UNION", "USING", "VALUES",
    "VIEW", "WHEN", "WHERE", "WINDOW", "WITH",
)

#: Every keyword (the grammar's and the queries'), upper case, sorted.
KEYWORDS: tuple[str, ...] = tuple(sorted(GRAMMAR_KEYWORDS | set(QUERY_KEYWORDS)))


_WORD_RE = re.compile(r"[A-Za-z0-9_]+")


def word_at(text: str, offset: int) -> str:
    """The token-ish text starting at ``offset`` (a word, a string, or one character)."""
    if offset >= len(text):
        return ""
    match = _WORD_RE.match(text, offset)
    if match:
        return match.group(0)
    match = PIECE_RE.match(text, offset)
    if match and match.lastgroup in ("str", "name"):
        return match.group(0)
    return text[offset]
