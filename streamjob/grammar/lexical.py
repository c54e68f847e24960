"""Source-text helpers shared by the StreamSQL parser, its transformer and its errors.

* :class:`Lines` maps offsets to 1-based ``(line, column)`` and back, and draws the
  snippet-with-caret shown in every :class:`~streamjob.exceptions.ParseError`.
* :func:`unescape_string` gives the value of a quoted literal (Hive's escapes);
  :func:`ident_value` the name an identifier token stands for.
* :func:`tokenize` is StreamSQL's one tokenizer (:class:`SqlToken`: strings, quoted
  names, comments, words ..., unterminated ones too), under the shell's splitter,
  highlighter and completer; :func:`iter_pieces` splits raw SQL (a ``CREATE STREAM ...
  AS`` query, a ``SET`` value) with it into strings, quoted names, comments, blanks and
  other text; :func:`trimmed_span` and
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
    "JAVA_CLASS",
    "is_java_class",
    "GRAMMAR_KEYWORDS",
    "KEYWORDS",
    "QUERY_KEYWORDS",
    "SqlToken",
    "TOKEN_RE",
    "STATEMENT_KEYWORDS",
    "STATEMENT_START_RE",
    "Lines",
    "ident_value",
    "iter_pieces",
    "masked",
    "token_at",
    "tokenize",
    "trimmed_span",
    "unescape_string",
    "Vocabulary",
    "grammar_vocabulary",
    "statement_start_re",
    "terminal_keyword",
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


# --------------------------------------------------------------------------- tokens

#: StreamSQL's tokens, in the order tried: blanks; comments; strings in single or double
#: quotes (Hive's escapes, a doubled quote); backquoted names; numbers; words; one other
#: character. An unterminated string, name or comment is one ``open_*`` token to the end.
TOKEN_RE = re.compile(
    r"""(?P<ws>\s+)
    |(?P<comment>--[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)
    |(?P<open_comment>/\*[\s\S]*)
    |(?P<string>'(?:[^'\\]|\\[\s\S]|'')*'|"(?:[^"\\]|\\[\s\S]|"")*")
    |(?P<open_string>'(?:[^'\\]|\\[\s\S]|'')*\\?|"(?:[^"\\]|\\[\s\S]|"")*\\?)
    |(?P<name>`(?:[^`]|``)*`)
    |(?P<open_name>`(?:[^`]|``)*)
    |(?P<number>[0-9]+(?:\.[0-9]+)?)
    |(?P<word>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<punct>[\s\S])""",
    re.X,
)


@dataclass(frozen=True)
class SqlToken:
    """One token of StreamSQL text (:data:`TOKEN_RE`): the one tokenizer of the shell's
    splitter, highlighter and completer and of the parser's raw-text helpers.

    ``kind``: ``ws``, ``comment``, ``string``, ``name`` (backquoted), ``number``,
    ``word``, ``punct``, or ``open_string``, ``open_name``, ``open_comment``
    (unterminated, running to the end of the input); the shell's splitter adds ``meta``
    (a backslash command line). ``start`` is its offset in the input."""

    kind: str
    text: str
    start: int

    @property
    def end(self) -> int:
        """Offset just past the token."""
        return self.start + len(self.text)

    @property
    def significant(self) -> bool:
        """Not a blank or a comment."""
        return self.kind not in ("ws", "comment", "open_comment")

    @property
    def open(self) -> bool:
        """An unterminated string, backquoted name or comment."""
        return self.kind.startswith("open_")


def token_at(text: str, pos: int) -> SqlToken:
    """The token of ``text`` that starts at offset ``pos`` (< ``len(text)``)."""
    match = TOKEN_RE.match(text, pos)
    return SqlToken(match.lastgroup, match.group(0), pos)


def tokenize(text: str) -> list[SqlToken]:
    """The tokens of ``text``, in order, covering all of it."""
    out: list[SqlToken] = []
    pos = 0
    while pos < len(text):
        out.append(token_at(text, pos))
        pos = out[-1].end
    return out


#: :func:`iter_pieces`' kind of each token kind (the rest are ``other``).
_PIECE_KINDS = {"string": "str", "name": "name", "comment": "comment", "ws": "ws"}


def iter_pieces(raw: str):
    """Yield ``(kind, start, end)`` over ``raw`` (its :func:`tokenize` tokens); kinds:
    str, name, comment, ws, other. An unterminated quote or comment opener is one
    ``other`` character, and what follows it is read on (as the parser's lexer does)."""
    pos = 0
    while pos < len(raw):
        token = token_at(raw, pos)
        if token.open:
            yield "other", pos, pos + 1
            pos += 1
            continue
        yield _PIECE_KINDS.get(token.kind, "other"), pos, token.end
        pos = token.end


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
    #: The two keywords a statement can begin with, when its second token is a keyword
    #: too (``("CREATE", "STREAM")``, ``("SHOW", "TABLES")``, ``("EXPLAIN", "INSERT")``).
    openings: frozenset[tuple[str, str]] = frozenset()


def terminal_keyword(terminal) -> str | None:
    """The keyword a lark terminal definition stands for, upper case: the word of a
    string terminal (``"create"i``), the leading word of a raw one (``INSERT_STATEMENT``),
    else None (``IDENT``, ``STRING``, ``;`` ...)."""
    pattern = terminal.pattern
    if pattern.type == "str":
        return pattern.value.upper() if pattern.value.isalpha() else None
    match = _LEADING_WORD_RE.match(pattern.value)
    return match.group(1).upper() if match else None


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

    words = {t.name: terminal_keyword(t) for t in terminals}
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
                      frozenset(w for t in first.get("start", ()) if (w := words.get(t))),
                      frozenset((words[a], words[b]) for a, b in _first_pairs(rules)
                                if words.get(a) and words.get(b)))


def _first_pairs(rules) -> set[tuple[str, str]]:
    """The first two terminals of the sentences of ``start`` (FIRST_2 over lark's compiled
    ``rules``, to a fixpoint): pairs of terminal names."""
    first2: dict[str, set[tuple[str, ...]]] = {}
    changed = True
    while changed:
        changed = False
        for rule in rules:
            acc: set[tuple[str, ...]] = {()}
            for sym in rule.expansion:
                step = {(sym.name,)} if sym.is_term else first2.get(sym.name, set())
                acc = {(x + y)[:2] for x in acc for y in step}
                if all(len(x) == 2 for x in acc):
                    break
            seen = first2.setdefault(rule.origin.name, set())
            if not acc <= seen:
                seen |= acc
                changed = True
    return {x for x in first2.get("start", ()) if len(x) == 2}


@functools.cache
def grammar_vocabulary() -> Vocabulary:
    """The :class:`Vocabulary` of ``streamsql.lark`` (read once per process, as package
    data: Spark's executors import this module from the shipped zip, where the grammar
    is no file of its own)."""
    from importlib import resources

    text = resources.files(__package__).joinpath(GRAMMAR_FILE.name).read_text(encoding="utf-8")
    return vocabulary_of(text)


#: Every keyword of ``streamsql.lark`` (upper case).
GRAMMAR_KEYWORDS: frozenset[str] = grammar_vocabulary().keywords
#: The words a statement begins with, lower case (``create``, ``show``, ``insert`` ...),
#: from ``streamsql.lark``: a missing ``;`` before one is reported as such.
STATEMENT_KEYWORDS: frozenset[str] = frozenset(
    k.lower() for k in grammar_vocabulary().statement_keywords)

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

def statement_start_re(vocabulary: Vocabulary) -> re.Pattern[str]:
    """A statement's beginning at the start of a line (a missing ``;`` before it): two
    keywords that open a statement (the grammar's :attr:`Vocabulary.openings`), and
    the forms whose second token is no keyword: ``SET key =``, ``RESET``, ``INSERT INTO``."""
    follow: dict[str, set[str]] = {}
    for a, b in vocabulary.openings:
        follow.setdefault(a.lower(), set()).add(b.lower())
    forms = [rf"{a}\s+(?:{'|'.join(sorted(bs))})\b" for a, bs in sorted(follow.items())]
    forms += [r"set\s+[a-z_][a-z0-9_.]*\s*=", r"reset\b", r"insert\s+into\b"]
    return re.compile(r"(?i)(?<=\n)[ \t\f\v]*(" + "|".join(forms) + ")")


#: A statement keyword at the start of a line inside a raw tail (a missing ``;``): see
#: :func:`statement_start_re`.
STATEMENT_START_RE: re.Pattern[str] = statement_start_re(grammar_vocabulary())

#: Every keyword (the grammar's and the queries'), upper case, sorted.
KEYWORDS: tuple[str, ...] = tuple(sorted(GRAMMAR_KEYWORDS | set(QUERY_KEYWORDS)))


_WORD_RE = re.compile(r"[A-Za-z0-9_]+")  # a word as quoted in errors (a number too: 10x)


def word_at(text: str, offset: int) -> str:
    """The token-ish text starting at ``offset`` (a word, a string, or one character)."""
    if offset >= len(text):
        return ""
    match = _WORD_RE.match(text, offset)
    if match:
        return match.group(0)
    token = token_at(text, offset)
    return token.text if token.kind in ("string", "name") else text[offset]


#: A fully qualified Java class name (Hive's ``CREATE FUNCTION f AS 'com.x.Udf'``): at
#: least one package part; ``$`` for nested classes.
JAVA_CLASS = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")


def is_java_class(text: str) -> bool:
    """True when ``text`` is a Java class name (``com.x.Udf``), not a Python reference
    (``module:callable``)."""
    return ":" not in text and JAVA_CLASS.fullmatch(text.strip()) is not None
