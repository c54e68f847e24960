"""Completion in the shell: keywords, property names and values, catalog names.

:func:`suggest` is pure (text before the cursor + a :class:`Names` snapshot -> a list of
:class:`Suggestion`), so it is tested without a terminal; :class:`ShellCompleter` adapts
it to prompt_toolkit. What is offered depends on where the cursor is in the statement
being typed:

* at a statement's start: the statement keywords; after ``CREATE``, ``DROP``, ``SHOW``
  ... the keywords that may follow;
* inside ``TBLPROPERTIES(...)``: connector property names (those of streams after
  ``CREATE STREAM``, of tables after ``CREATE TABLE``); inside ``JOBPROPERTIES(...)`` and
  after ``SET``/``RESET``: job property names; after ``"name"=``: the property's values
  when it has a fixed set (choices, true/false). A name is completed in the quoting the
  user started (``"to`` -> ``"topic"``), quoted when nothing was typed yet;
* in a query (a SELECT, or the quoted query of a streamjob), where a column goes: the
  columns of the streams and tables it reads (:mod:`.columns`), as pgcli does;
* after ``START/STOP/DROP/ALTER/DESCRIBE/EXPLAIN STREAMJOB`` and ``SHOW CHECKPOINTS FOR
  STREAMJOB``: job names; after ``EXPLAIN [EXTENDED]``: EXTENDED, INSERT, STREAMJOB and
  job names; after ``DROP/DESCRIBE STREAM``: streams; ``... TABLE``: tables;
  after ``DESCRIBE``: all three; after ``FROM``/``JOIN``: streams and tables; after
  ``INTO``: tables — also inside the quoted query of ``CREATE STREAMJOB ... AS ("...")``;
* in a meta command: the commands, and after ``\\d`` the catalog names;
* elsewhere: any keyword starting with what was typed.

Keywords are offered in the case the user types in (lower case after lower case).
Catalog names (and columns) are those of the last :meth:`Names.load` (the shell reloads
them after every statement); names outside the ``default`` database are qualified
``db.name``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from prompt_toolkit.completion import Completer, Completion

from ..grammar.parser import next_keywords
from .columns import expects_column, references
from .lexer import KEYWORDS, STATEMENT_KEYWORDS  # the grammar's (grammar/lexical.py)
from ..client.splitter import Token, split_input, tokenize

__all__ = ["Names", "ShellCompleter", "Suggestion", "suggest", "META_COMMANDS",
           "PREVIEW_RESET_KEY"]

#: Meta commands and what they do (``\\help`` prints this).
META_COMMANDS = {
    "\\?": "this help (also \\help, help)",
    "\\help": "this help",
    "\\q": "quit (also quit, exit, Ctrl-D)",
    "\\l": "list streamjobs (LIST STREAMJOBS)",
    "\\status": "jobs: state, rate, batch, last checkpoint, lag, error (streamjob status)",
    "\\d": "\\d: list streams, tables and streamjobs; \\d NAME: describe one",
    "\\i": "\\i FILE: run the statements of FILE",
    "\\timing": "toggle printing how long each statement took",
    "\\json": "toggle JSON output",
    "\\x": "\\x [on|off|auto]: tables one field per line (auto: when wider than the terminal)",
    "\\pager": "\\pager on|off: results longer than the terminal through $PAGER (less -SRXF)",
}

#: The shell's own SET key: where a SELECT starts reading Kafka streams.
PREVIEW_RESET_KEY = "transwarp.consumer.reset.offset.strategy"

#: Keywords that follow a keyword inside a query's SQL (no part of the grammar, whose
#: statements' keywords come from :func:`streamjob.grammar.parser.next_keywords`).
_QUERY_FOLLOW = {
    "GROUP": ("BY",),
    "ORDER": ("BY",),
    "INSERT": ("INTO",),
}


@dataclass(frozen=True)
class Suggestion:
    """One completion: replace the ``start`` characters before the cursor (``start`` <=
    0) with ``text``; ``display`` and ``meta`` are what the menu shows."""

    text: str
    start: int
    display: str | None = None
    meta: str = ""


@dataclass
class Names:
    """A snapshot of the catalog's names for completion (``name``, or ``db.name``
    outside the default database); ``columns``: lower-cased stream or table name ->
    its declared ``(column, type)`` pairs."""

    streams: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    columns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    databases: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, catalog) -> "Names":
        """Read the names of every stream, table and streamjob from ``catalog``."""
        def name(obj) -> str:
            return obj.name if obj.database == "default" else f"{obj.database}.{obj.name}"

        streams, tables = catalog.list_streams(), catalog.list_tables()
        columns = {name(o).lower(): [(str(c.get("name")), str(c.get("type", "")))
                                     for c in getattr(o, "columns", None) or ()]
                   for o in [*streams, *tables]}
        list_databases = getattr(catalog, "list_databases", None)  # not over the HTTP API
        return cls(sorted(name(s) for s in streams), sorted(name(t) for t in tables),
                   sorted(name(j) for j in catalog.list_jobs()), columns,
                   [row[0] for row in list_databases()] if list_databases else [])


def _registries():
    from ..properties import CONNECTOR, JOB

    return JOB, CONNECTOR


def suggest(text: str, names: Names, after: str = "") -> list[Suggestion]:
    """What to offer when completing at the end of ``text`` (the input before the
    cursor; ``after``, the input after it, tells which objects a query reads); see the
    module docstring."""
    tokens = tokenize(text)
    if tokens and tokens[-1].kind == "meta":
        return _meta(tokens[-1].text, names)
    return _statement(tokenize(text[split_input(text).rest_offset:]), names, after)


def _meta(line: str, names: Names) -> list[Suggestion]:
    command, space, arg = line.partition(" ")
    if not space:
        return [Suggestion(c, -len(command), meta=META_COMMANDS[c])
                for c in META_COMMANDS if c.startswith(command.lower())]
    if command.lower() == "\\d":
        prefix = arg.lstrip()
        return _names(prefix, [("stream", names.streams), ("table", names.tables),
                               ("streamjob", names.jobs)])
    return []


def _prefix(tokens: list[Token]) -> tuple[str, list[Token]]:
    """The name or word being typed at the end of ``tokens`` (a dotted ``db.na`` whole,
    a backquoted name begun) and the tokens before it; ``""`` after a blank or a sign."""
    if not tokens or tokens[-1].kind not in ("word", "number", "open_name"):
        return "", tokens
    j = len(tokens) - 1
    while j >= 2 and tokens[j - 1].text == "." and tokens[j - 2].kind in ("word", "name"):
        j -= 2
    return "".join(t.text for t in tokens[j:]), tokens[:j]


def _statement(tokens: list[Token], names: Names, after: str = "") -> list[Suggestion]:
    last = tokens[-1] if tokens else None
    if last is not None and last.kind == "open_string":
        return _in_string(tokens, names, after)
    if last is not None and last.kind in ("comment", "open_comment", "string", "name"):
        return []  # right after a closing quote or inside a comment
    prefix, before = _prefix(tokens)
    sig = [t for t in before if t.significant]
    words = [t.text.upper() if t.kind == "word" else t.text for t in sig]
    plist = _property_list(sig)
    if plist is not None:
        return _property(plist, sig, prefix, quote=None)
    if words and words[0] in ("SET", "RESET"):
        return _set(words, sig, prefix)
    found = _names_after(words, sig, prefix, names)
    if found is not None:
        return found
    if words and words[0] in ("SELECT", "WITH"):
        rest = []
        for t in tokenize(after):
            if t.text == ";" and t.kind == "punct":
                break
            rest.append(t)
        return _columns(sig, prefix, names, [t for t in rest if t.significant]) \
            + _keywords(words, prefix, sig)
    return _keywords(words, prefix, sig)


def _columns(sig: list[Token], prefix: str, names: Names,
             after: list[Token]) -> list[Suggestion]:
    """The columns of the objects the query (``sig``, the cursor, ``after``) reads, where
    a column goes; after ``x.`` those of the object named or aliased ``x``."""
    if not prefix and len(sig) >= 2 and sig[-1].text == "." \
            and sig[-2].kind in ("word", "name"):  # "alias." before anything is typed
        prefix, sig = sig[-2].text + ".", sig[:-2]
    if not expects_column(sig, prefix):
        return []
    qualifier, _, typed = prefix.rpartition(".")
    qualifier = qualifier.strip("`").lower()
    out: list[Suggestion] = []
    seen: set[str] = set()
    for name, alias in references(sig + after):
        if qualifier and qualifier not in (alias, name, name.rpartition(".")[2]):
            continue
        for col, kind in names.columns.get(name, ()):
            low = col.lower()
            if low.startswith(typed.lower()) and low != typed.lower() and low not in seen:
                seen.add(low)
                out.append(Suggestion(col, -len(typed), meta=f"{kind} ({name})".strip()))
    return out


def _case(prefix: str, sig: list[Token]) -> Callable[[str], str]:
    """Keywords in the user's case: lower if the prefix (or, without one, the last
    keyword typed) is lower case."""
    sample = prefix or next((t.text for t in reversed(sig) if t.kind == "word"), "")
    return str.lower if sample and sample.islower() else str.upper


def _keywords(words: list[str], prefix: str, sig: list[Token]) -> list[Suggestion]:
    """Keywords to offer: a statement's first words; in a statement, after a word, those
    the grammar accepts next (:func:`~streamjob.grammar.parser.next_keywords`); in a
    query, :data:`_QUERY_FOLLOW`; else, with a prefix typed, any keyword."""
    case = _case(prefix, sig)
    following = _grammar_next(words, sig)
    if not words:
        options: Iterable[str] = STATEMENT_KEYWORDS
    elif following:
        options = sorted(following)
    elif words[-1] in _QUERY_FOLLOW:
        options = _QUERY_FOLLOW[words[-1]]
    elif prefix:
        options = KEYWORDS
    else:
        return []
    up = prefix.upper()
    return [Suggestion(case(k), -len(prefix), meta="keyword") for k in options
            if k.startswith(up) and k != up]


def _grammar_next(words: list[str], sig: list[Token]) -> frozenset[str] | None:
    """The keywords the grammar accepts after the statement typed so far (``sig``), when
    it is a statement of the grammar (not a query) and its last token a word."""
    if not words or words[0] in ("SELECT", "WITH") or sig[-1].kind != "word":
        return None
    return next_keywords(" ".join(t.text for t in sig) + " ")


def _names(prefix: str, groups: list[tuple[str, list[str]]]) -> list[Suggestion]:
    low = prefix.lower().replace("`", "")
    out = []
    for kind, items in groups:
        for n in items:
            short = n.rpartition(".")[2]
            if n.lower().startswith(low) or (low and "." not in low and short.lower().startswith(low)):
                out.append(Suggestion(n, -len(prefix), meta=kind))
    return out


def _names_after(words: list[str], sig: list[Token], prefix: str,
                 names: Names) -> list[Suggestion] | None:
    """Catalog names where the statement expects one, else None."""
    streams = ("stream", names.streams)
    tables = ("table", names.tables)
    jobs = ("streamjob", names.jobs)
    w = [x for x in words if x not in ("IF", "EXISTS")]  # DROP STREAMJOB IF EXISTS j
    if not w:
        return None
    head = w[0]
    if w[-1] == "STREAMJOB" and head in ("START", "STOP", "DROP", "ALTER", "DESCRIBE", "DESC",
                                         "SHOW", "EXPLAIN"):
        return _names(prefix, [jobs])
    if head == "EXPLAIN" and w[-1] in ("EXPLAIN", "EXTENDED"):  # EXPLAIN [EXTENDED] j
        return _keywords(w, prefix, sig) + _names(prefix, [jobs])
    if head == "SHOW" and w[1:3] == ["CREATE", "STREAM"] and len(w) == 3:
        return _names(prefix, [streams])
    if head == "SHOW" and w[1:3] == ["CREATE", "TABLE"] and len(w) == 3:
        return _names(prefix, [tables])
    if (head == "USE" and len(w) == 1) or (w[-1] == "DATABASE" and head == "DROP"):
        return _names(prefix, [("database", names.databases)])
    if head == "PRINT" and len(w) == 1:
        return _names(prefix, [streams, tables])
    if head == "PRINT" and w[-1] == "FROM":
        return _keywords(w, prefix, sig)  # FROM BEGINNING (FROM 'host:port' is typed)
    if len(w) == 2 and head in ("DROP", "DESCRIBE", "DESC") and w[-1] == "STREAM":
        return _names(prefix, [streams])
    if len(w) == 2 and head in ("DROP", "DESCRIBE", "DESC") and w[-1] == "TABLE":
        return _names(prefix, [tables])
    if len(w) == 1 and head in ("DESCRIBE", "DESC"):
        return _keywords(w, prefix, sig) + _names(prefix, [streams, tables, jobs])
    if w[-1] in ("FROM", "JOIN") and head != "START":  # START ... FROM CHECKPOINT n
        return _names(prefix, [streams, tables])
    if w[-1] == "INTO":
        return _names(prefix, [tables])
    return None


def _property_list(sig: list[Token]) -> str | None:
    """``TBLPROPERTIES`` or ``JOBPROPERTIES`` when the cursor is inside its unclosed
    ``(...)``, else None."""
    stack: list[int] = []
    for i, t in enumerate(sig):
        if t.kind == "punct" and t.text == "(":
            stack.append(i)
        elif t.kind == "punct" and t.text == ")" and stack:
            stack.pop()
    if not stack or stack[-1] == 0:
        return None
    owner = sig[stack[-1] - 1]
    word = owner.text.upper() if owner.kind == "word" else ""
    return word if word in ("TBLPROPERTIES", "JOBPROPERTIES") else None


def _scope_filter(sig: list[Token]) -> Callable[[tuple[str, ...]], bool]:
    words = [t.text.upper() for t in sig[:2] if t.kind == "word"]
    if words[:2] == ["CREATE", "STREAM"]:
        return lambda scopes: any(s.endswith("stream") for s in scopes)
    if words[:2] == ["CREATE", "TABLE"]:
        return lambda scopes: any(s.endswith("table") for s in scopes)
    return lambda scopes: True


def _property_names(owner: str, sig: list[Token]) -> list[tuple[str, str]]:
    job, connector = _registries()
    if owner == "JOBPROPERTIES":
        return [(p.name, "job property") for p in job]
    keep = _scope_filter(sig)
    return [(p.name, " / ".join(p.scopes)) for p in connector if keep(p.scopes)]


def _lookup(name: str):
    job, connector = _registries()
    return job.get(name) or connector.get(name)


def _values(name: str) -> list[str]:
    prop = _lookup(name)
    if prop is None:
        return []
    if prop.kind == "bool":
        return ["true", "false"]
    if prop.kind == "choice":
        return list(prop.choices)
    return []


def _offer(items: list[tuple[str, str]], prefix: str, quote: str | None,
           quote_if_empty: bool) -> list[Suggestion]:
    """Names ``items`` (``(name, meta)``) completing ``prefix``: inside an open string
    (``quote``) the rest of the name and the closing quote; unquoted as typed; quoted when
    nothing was typed and ``quote_if_empty``."""
    low = prefix.lower()
    out = []
    for name, meta in items:
        if not name.startswith(low):
            continue
        if quote:
            out.append(Suggestion(name + quote, -len(prefix), display=name, meta=meta))
        elif not prefix and quote_if_empty:
            out.append(Suggestion(f'"{name}"', 0, display=name, meta=meta))
        else:
            out.append(Suggestion(name, -len(prefix), meta=meta))
    return out


def _property(owner: str, sig: list[Token], prefix: str, quote: str | None) -> list[Suggestion]:
    """Inside TBLPROPERTIES(...)/JOBPROPERTIES(...): a name after ``(`` or ``,``, a value
    after ``name =``."""
    prev = sig[-1] if sig else None
    if prev is not None and prev.kind == "punct" and prev.text in ("(", ","):
        return _offer(_property_names(owner, sig), prefix, quote, True)
    if prev is not None and prev.kind == "punct" and prev.text == "=":
        return _offer([(v, "value") for v in _values(_key_before(sig[:-1]))], prefix, quote, True)
    return []


def _key_before(sig: list[Token]) -> str:
    """The property name that ends ``sig``: a quoted string, or an unquoted dotted name
    (``kafka.broker.list``, several tokens), lower-cased."""
    if sig and sig[-1].kind == "string":
        return sig[-1].text[1:-1].lower()
    parts: list[str] = []
    for t in reversed(sig):
        touching = not parts or t.end == parts[-1].start
        if touching and (t.kind in ("word", "number") or t.text == "."):
            parts.append(t)
        else:
            break
    return "".join(t.text for t in reversed(parts)).lower()


def _set(words: list[str], sig: list[Token], prefix: str) -> list[Suggestion]:
    """``SET name = value`` / ``RESET name``: job property names (and the shell's
    :data:`PREVIEW_RESET_KEY`), then values."""
    job, _ = _registries()
    if len(sig) == 1:
        items = [(p.name, "job property") for p in job]
        return _offer(items + [(PREVIEW_RESET_KEY, "where SELECT starts reading")], prefix,
                      None, False)
    if words[0] == "SET" and sig[-1].text == "=" and "=" not in words[:-1]:
        return _offer([(v, "value") for v in _values(_key_before(sig[:-1]))], prefix, None, False)
    return []


def _in_string(tokens: list[Token], names: Names, after: str = "") -> list[Suggestion]:
    """The cursor is inside an unterminated string: a property name or value, or the
    quoted query of ``CREATE STREAMJOB ... AS ("...")``."""
    string = tokens[-1]
    quote, content = string.text[0], string.text[1:]
    sig = [t for t in tokens[:-1] if t.significant]
    plist = _property_list(sig)
    if plist is not None:
        if re.search(r"[^A-Za-z0-9_.]", content):
            return []
        return _property(plist, sig, content, quote)
    words = [t.text.upper() for t in sig if t.kind == "word"]
    if words[:2] == ["CREATE", "STREAMJOB"] and "AS" in words:
        inner = [t for t in tokenize(content)]
        rest = after[:after.index(quote)] if quote in after else after
        return _query_names(inner, names, [t for t in tokenize(rest) if t.significant])
    return []


def _query_names(tokens: list[Token], names: Names,
                 after: list[Token] = ()) -> list[Suggestion]:
    """Completion inside a job's query text: names after FROM/JOIN/INTO, columns where a
    column goes, else keywords."""
    if tokens and tokens[-1].kind not in ("ws", "word", "number", "punct"):
        return []
    prefix, before = _prefix(tokens)
    sig = [t for t in before if t.significant]
    words = [t.text.upper() for t in sig if t.kind == "word"]
    found = _names_after(words[-1:], sig, prefix, names) if words and words[-1] in (
        "FROM", "JOIN", "INTO") else None
    if found is not None:
        return found
    columns = _columns(sig, prefix, names, list(after))
    return columns + (_keywords(words or ["?"], prefix, sig) if prefix else [])


class ShellCompleter(Completer):
    """prompt_toolkit completer over :func:`suggest`; ``names`` returns the current
    :class:`Names` snapshot (the shell refreshes it after each statement)."""

    def __init__(self, names: Callable[[], Names]) -> None:
        self.names = names

    def get_completions(self, document, complete_event):
        """Yield prompt_toolkit ``Completion`` objects for the text before the cursor."""
        for s in suggest(document.text_before_cursor, self.names(),
                         document.text_after_cursor):
            yield Completion(s.text, start_position=s.start, display=s.display or s.text,
                             display_meta=s.meta)
