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

import bisect
import difflib
import re
from copy import copy
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

from streamjob.exceptions import ParseError
from streamjob.grammar.statements import (
    AlterStreamJob,
    Column,
    CreateStream,
    CreateStreamJob,
    CreateTable,
    Describe,
    DescribeStreamJob,
    DropStream,
    DropStreamJob,
    DropTable,
    Position,
    QualifiedName,
    ResetProperty,
    RowFormat,
    SetProperty,
    ShowCheckpoints,
    ShowStreamJobs,
    ShowStreams,
    ShowTables,
    StartStreamJob,
    Statement,
    StopStreamJob,
)

__all__ = ["parse_script", "parse_statement"]

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
    lines = _Lines(text)
    try:
        tree = _parser().parse(text)
        return _Builder(text, lines, source).script(tree)
    except ParseError as exc:
        if exc.source is None:
            exc.source = source
        raise
    except UnexpectedInput as exc:
        raise _from_lark(exc, text, lines, source) from None
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
        lines = _Lines(text)
        line, column = lines.position(len(text))
        raise ParseError("expected a statement, found none", line, column, "", lines.snippet(line, column), source)
    if len(statements) > 1:
        second = statements[1]
        lines = _Lines(text)
        line, column = second.position.line, second.position.column
        word = _word_at(text, lines.offset(line, column))
        raise ParseError(
            f"expected exactly one statement, found {len(statements)}",
            line,
            column,
            word,
            lines.snippet(line, column),
            source,
        )
    return statements[0]


# --------------------------------------------------------------------------- positions


class _Lines:
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


def _ident_value(token: Token) -> str:
    if token.type == "QUOTED_IDENT":
        return token.value[1:-1].replace("``", "`")
    return token.value.lower()


# Pieces of raw SQL text: strings, quoted names, comments, or one other character.
_PIECE_RE = re.compile(
    r"""(?P<str>'(?:[^'\\]|\\[\s\S]|'')*'|"(?:[^"\\]|\\[\s\S]|"")*")"""
    r"""|(?P<name>`(?:[^`]|``)*`)"""
    r"""|(?P<comment>--[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)"""
    r"""|(?P<ws>\s+)"""
    r"""|(?P<other>[^'"`\s\-/]+|[\s\S])"""
)


def _pieces(raw: str):
    """Yield ``(kind, start, end)`` over ``raw``; kinds: str, name, comment, ws, other."""
    pos = 0
    while pos < len(raw):
        match = _PIECE_RE.match(raw, pos)
        if match is None or match.end() == pos:  # cannot happen with a lexed tail
            yield "other", pos, pos + 1
            pos += 1
            continue
        yield match.lastgroup, match.start(), match.end()
        pos = match.end()


def _trimmed_span(raw: str) -> tuple[int, int] | None:
    """Offsets of ``raw`` without leading and trailing blanks and comments (None if
    nothing else is left)."""
    first = last = None
    for kind, start, end in _pieces(raw):
        if kind not in ("ws", "comment"):
            first = start if first is None else first
            last = end
    return None if first is None else (first, last)


def _masked(raw: str) -> str:
    """``raw`` with strings, quoted names and comments blanked (same length)."""
    chars = list(raw)
    for kind, start, end in _pieces(raw):
        if kind in ("str", "name", "comment"):
            chars[start:end] = " " * (end - start)
    return "".join(chars)


_STATEMENT_START_RE = re.compile(
    r"(?i)(?<=\n)[ \t\f\v]*("
    r"create\s+(?:stream|streamjob|table)\b"
    r"|(?:start|stop|alter)\s+streamjob\b"
    r"|drop\s+(?:stream|streamjob|table)\b"
    r"|(?:list|show)\s+streamjobs\b"
    r"|show\s+(?:streams|tables|checkpoints)\b"
    r"|(?:describe|desc)\s+(?:stream|streamjob|table)\b"
    r"|set\s+[a-z_][a-z0-9_.]*\s*="
    r"|reset\b"
    r")"
)
_STATEMENT_KEYWORDS = frozenset(
    "create start stop drop alter list show describe desc set reset".split()
)


_WORD_RE = re.compile(r"[A-Za-z0-9_]+")


def _word_at(text: str, offset: int) -> str:
    """The token-ish text starting at ``offset`` (a word, a string, or one character)."""
    if offset >= len(text):
        return ""
    match = _WORD_RE.match(text, offset)
    if match:
        return match.group(0)
    match = _PIECE_RE.match(text, offset)
    if match and match.lastgroup in ("str", "name"):
        return match.group(0)
    return text[offset]


# --------------------------------------------------------------------------- tree -> dataclasses


class _Builder:
    """Turns the lark tree of one script into statement dataclasses."""

    def __init__(self, text: str, lines: _Lines, source: str | None) -> None:
        self.text = text
        self.lines = lines
        self.source = source

    # -- helpers

    def error(self, message: str, offset: int, length_text: str | None = None) -> ParseError:
        line, column = self.lines.position(offset)
        text = length_text if length_text is not None else _word_at(self.text, offset)
        return ParseError(message, line, column, text, self.lines.snippet(line, column), self.source)

    def position(self, offset: int) -> Position:
        return Position(*self.lines.position(offset))

    def script(self, tree: Tree) -> list[Statement]:
        statements = []
        for node in tree.children:
            self.text_end: int | None = None  # set by statements ending in a raw tail
            cls, fields = getattr(self, "_" + node.data)(node)
            meta = node.meta
            end = meta.end_pos if self.text_end is None else self.text_end
            statements.append(
                cls(
                    **fields,
                    position=Position(meta.line, meta.column),
                    text=self.text[meta.start_pos : end].strip(),
                )
            )
        return statements

    def name(self, tree: Tree) -> QualifiedName:
        parts = [_ident_value(ident.children[0]) for ident in tree.children]
        if len(parts) == 2:
            return QualifiedName(parts[1], parts[0])
        return QualifiedName(parts[0])

    @staticmethod
    def find(tree: Tree, data: str) -> Tree | None:
        for child in tree.children:
            if isinstance(child, Tree) and child.data == data:
                return child
        return None

    def properties(self, tree: Tree) -> tuple[tuple[str, str], ...]:
        plist = tree.children[0]
        pairs = []
        for prop in plist.children:
            key, value = prop.children
            key_text = unescape_string(key.value) if key.type == "STRING" else key.value
            value_text = unescape_string(value.value) if value.type == "STRING" else value.value
            pairs.append((key_text.lower(), value_text))
        return tuple(pairs)

    def columns(self, tree: Tree) -> tuple[Column, ...]:
        seen: dict[str, Token] = {}
        columns = []
        for column in tree.children:
            ident_tok = column.children[0].children[0]
            name = _ident_value(ident_tok)
            if name.lower() in seen:
                raise self.error(f"column '{name}' is declared twice", ident_tok.start_pos)
            seen[name.lower()] = ident_tok
            columns.append(Column(name, self.type_text(column.children[1])))
        return tuple(columns)

    def type_text(self, tree: Tree) -> str:
        out = [tree.children[0].value.lower()]
        for part in tree.children[1:]:
            if part.data == "type_params":
                out.append("(" + ",".join(tok.value.lstrip("0") or "0" for tok in part.children) + ")")
            else:
                args = []
                for arg in part.children:
                    if arg.data == "struct_field":
                        ident_tok = arg.children[0].children[0]
                        field_name = _ident_value(ident_tok)
                        if ident_tok.type == "QUOTED_IDENT":
                            field_name = "`" + field_name.replace("`", "``") + "`"
                        args.append(f"{field_name}:{self.type_text(arg.children[1])}")
                    else:
                        args.append(self.type_text(arg))
                out.append("<" + ",".join(args) + ">")
        return "".join(out)

    def row_format(self, tree: Tree) -> RowFormat:
        values = {}
        for clause in tree.children:
            token = clause.children[0]
            value = unescape_string(token.value)
            if value == "":
                raise self.error("a delimiter cannot be empty", token.start_pos)
            values[clause.data] = value
        return RowFormat(values.get("fields_terminated"), values.get("lines_terminated"))

    def clauses(self, tree: Tree, allowed: dict[str, str]) -> dict[str, Tree]:
        found: dict[str, Tree] = {}
        for child in tree.children:
            if isinstance(child, Tree) and child.data in allowed:
                if child.data in found:
                    raise self.error(f"duplicate {allowed[child.data]} clause", child.meta.start_pos)
                found[child.data] = child
        return found

    # -- statements (each returns a dict of fields plus the class)

    _TABLE_CLAUSES = {
        "row_format": "ROW FORMAT",
        "stored_as": "STORED AS",
        "location": "LOCATION",
        "tblproperties": "TBLPROPERTIES",
        "object_comment": "COMMENT",
    }

    def _create_stream(self, tree: Tree):
        found = self.clauses(tree, self._TABLE_CLAUSES)
        return CreateStream, dict(
            name=self.name(self.find(tree, "qualified_name")),
            columns=self.columns(self.find(tree, "column_list")),
            if_not_exists=self.find(tree, "if_not_exists") is not None,
            row_format=self.row_format(found["row_format"]) if "row_format" in found else None,
            properties=self.properties(found["tblproperties"]) if "tblproperties" in found else (),
        )

    def _create_table(self, tree: Tree):
        found = self.clauses(tree, self._TABLE_CLAUSES)
        return CreateTable, dict(
            name=self.name(self.find(tree, "qualified_name")),
            columns=self.columns(self.find(tree, "column_list")),
            if_not_exists=self.find(tree, "if_not_exists") is not None,
            row_format=self.row_format(found["row_format"]) if "row_format" in found else None,
            stored_as=_ident_value(found["stored_as"].children[0].children[0]).lower()
            if "stored_as" in found
            else None,
            location=unescape_string(found["location"].children[0].value) if "location" in found else None,
            properties=self.properties(found["tblproperties"]) if "tblproperties" in found else (),
        )

    def _create_stream_as(self, tree: Tree):
        token = tree.children[-1]
        start, end = self.raw_tail(token)
        start, end = self.strip_parens(start, end)
        return CreateStream, dict(
            name=self.name(self.find(tree, "qualified_name")),
            if_not_exists=self.find(tree, "if_not_exists") is not None,
            as_select=self.text[start:end],
            as_select_position=self.position(start),
        )

    def _create_streamjob(self, tree: Tree):
        token = next(c for c in tree.children if isinstance(c, Token) and c.type == "STRING")
        query = unescape_string(token.value)
        if not query.strip():
            raise self.error("the query of a STREAMJOB is empty", token.start_pos, token.value)
        jobprops = self.find(tree, "jobproperties")
        return CreateStreamJob, dict(
            name=self.name(self.find(tree, "qualified_name")),
            query=query,
            query_position=self.position(token.start_pos + 1),
            if_not_exists=self.find(tree, "if_not_exists") is not None,
            properties=self.properties(jobprops) if jobprops is not None else (),
        )

    def _start_streamjob(self, tree: Tree):
        checkpoint = next((c for c in tree.children if isinstance(c, Token) and c.type == "INT"), None)
        if checkpoint is not None and len(checkpoint.value.lstrip("0")) > 18:
            raise self.error("the checkpoint id is too large", checkpoint.start_pos)
        return StartStreamJob, dict(
            name=self.name(self.find(tree, "qualified_name")),
            from_checkpoint=int(checkpoint.value) if checkpoint is not None else None,
        )

    def _stop_streamjob(self, tree: Tree):
        return StopStreamJob, dict(name=self.name(self.find(tree, "qualified_name")))

    def _drop_streamjob(self, tree: Tree):
        return DropStreamJob, dict(
            name=self.name(self.find(tree, "qualified_name")),
            if_exists=self.find(tree, "if_exists") is not None,
        )

    def _alter_streamjob(self, tree: Tree):
        return AlterStreamJob, dict(
            name=self.name(self.find(tree, "qualified_name")),
            properties=self.properties(self.find(tree, "jobproperties")),
        )

    def _show_streamjobs(self, tree: Tree):
        return ShowStreamJobs, {}

    def _describe_streamjob(self, tree: Tree):
        return DescribeStreamJob, dict(name=self.name(self.find(tree, "qualified_name")))

    def _show_checkpoints(self, tree: Tree):
        return ShowCheckpoints, dict(name=self.name(self.find(tree, "qualified_name")))

    def _show_streams(self, tree: Tree):
        return ShowStreams, {}

    def _show_tables(self, tree: Tree):
        return ShowTables, {}

    def _describe(self, tree: Tree):
        kind = None
        if self.find(tree, "kind_stream") is not None:
            kind = "stream"
        elif self.find(tree, "kind_table") is not None:
            kind = "table"
        return Describe, dict(name=self.name(self.find(tree, "qualified_name")), kind=kind)

    def _drop_stream(self, tree: Tree):
        return DropStream, dict(
            name=self.name(self.find(tree, "qualified_name")),
            if_exists=self.find(tree, "if_exists") is not None,
        )

    def _drop_table(self, tree: Tree):
        return DropTable, dict(
            name=self.name(self.find(tree, "qualified_name")),
            if_exists=self.find(tree, "if_exists") is not None,
        )

    def _set_property(self, tree: Tree):
        tokens = [c for c in tree.children if isinstance(c, Token)]
        key = next((t for t in tokens if t.type == "KEY"), None)
        if key is None:
            return SetProperty, {}
        value_token = next((t for t in tokens if t.type == "SET_VALUE"), None)
        value = ""
        if value_token is not None:
            start, end = self.raw_tail(value_token)
            raw = self.text[start:end]
            pieces = [(k, s, e) for k, s, e in _pieces(raw) if k != "comment"]
            value = "".join(raw[s:e] for _, s, e in pieces).strip()
            meaningful = [(k, s, e) for k, s, e in pieces if k != "ws"]
            if len(meaningful) == 1 and meaningful[0][0] == "str":
                value = unescape_string(raw[meaningful[0][1] : meaningful[0][2]])
        return SetProperty, dict(key=key.value.lower(), value=value)

    def _reset_property(self, tree: Tree):
        key = next((c for c in tree.children if isinstance(c, Token) and c.type == "KEY"), None)
        return ResetProperty, dict(key=key.value.lower() if key is not None else None)

    # -- raw tails

    def raw_tail(self, token: Token) -> tuple[int, int]:
        """Offsets of a raw tail token without leading/trailing blanks and trailing
        comments; raises "missing ';'" if a statement keyword starts one of its lines."""
        raw = token.value
        match = _STATEMENT_START_RE.search(_masked(raw))
        if match is not None:
            offset = token.start_pos + match.start(1)
            word = _word_at(self.text, offset)
            raise self.error(
                f"missing ';' between statements: '{word}' on line "
                f"{self.lines.position(offset)[0]} starts a new statement",
                offset,
                word,
            )
        first, last = _trimmed_span(raw) or (0, 0)
        self.text_end = token.start_pos + last
        return token.start_pos + first, token.start_pos + last

    def strip_parens(self, start: int, end: int) -> tuple[int, int]:
        """Remove one pair of parentheses enclosing the whole query, if there is one."""
        raw = self.text[start:end]
        if not raw.startswith("("):
            return start, end
        depth = 0
        for kind, s, e in _pieces(raw):
            if kind != "other":
                continue
            for i, ch in enumerate(raw[s:e], s):
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        if i != len(raw) - 1:
                            return start, end  # (a) UNION (b): not one enclosing pair
                        span = _trimmed_span(raw[1:i])
                        if span is None:
                            raise self.error("the query after AS is empty", start, "(")
                        return start + 1 + span[0], start + 1 + span[1]
        raise self.error("missing ')' to close the query after AS", start, "(")


# --------------------------------------------------------------------------- lark errors -> ParseError

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


def _suggestion(word: str, names: list[str]) -> str:
    keywords = [n for n in names if n.isalpha() and n.isupper()]
    if not word or not keywords or not re.fullmatch(r"[A-Za-z_]+", word):
        return ""
    close = difflib.get_close_matches(word.upper(), keywords, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _from_lark(exc: UnexpectedInput, text: str, lines: _Lines, source: str | None) -> ParseError:
    parser = _parser()
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
        word = _word_at(text, offset)
        return ParseError(
            f"unexpected {_quote(word)}{_describe_expected(names)}",
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
                f"unexpected end of script{_describe_expected(names)}",
                end_line,
                end_column,
                "",
                lines.snippet(end_line, end_column),
                source,
            )
        offset = token.start_pos if token.start_pos is not None else 0
        line, column = lines.position(offset)
        snippet = lines.snippet(line, column)
        word = token.value if token.type in ("STRING", "QUOTED_IDENT") else _word_at(text, offset)
        if "SEMICOLON" in expected_terms and word.lower() in _STATEMENT_KEYWORDS:
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
        message = f"unexpected {_quote(word)}{_describe_expected(names)}{_suggestion(word, names)}"
        return ParseError(message, line, column, word, snippet, source)

    if isinstance(exc, UnexpectedEOF):
        line, column = lines.position(len(text))
        return ParseError(
            f"unexpected end of script{_describe_expected(names)}", line, column, "", lines.snippet(line, column), source
        )

    line = getattr(exc, "line", None) or 1
    column = getattr(exc, "column", None) or 1
    if not isinstance(line, int) or line < 1 or line > len(lines.starts):
        line, column = 1, 1
    return ParseError(f"cannot parse the script: {exc}", line, column, "", lines.snippet(line, column), source)


def _unterminated(text: str, offset: int, lines: _Lines, source: str | None) -> ParseError | None:
    """A ParseError if a string, quoted name or comment opens at ``offset`` and never closes."""
    char = text[offset]
    match = _PIECE_RE.match(text, offset)
    kind = match.lastgroup if match else None
    if char in "'\"" and kind != "str":
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
