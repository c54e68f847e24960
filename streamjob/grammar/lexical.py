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
"""

from __future__ import annotations

import bisect
import re

from lark import Token

__all__ = [
    "PIECE_RE",
    "STATEMENT_KEYWORDS",
    "STATEMENT_START_RE",
    "Lines",
    "ident_value",
    "iter_pieces",
    "masked",
    "trimmed_span",
    "unescape_string",
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
STATEMENT_KEYWORDS = frozenset(
    "create start stop drop alter list show describe desc set reset use print insert explain".split()
)


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
