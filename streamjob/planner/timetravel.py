"""Time travel in a shell preview: ``SELECT ... FROM t VERSION AS OF n`` and ``FROM t
TIMESTAMP AS OF '...'`` (Delta's and Spark's spelling; ``FOR``, ``SYSTEM_VERSION`` and
``SYSTEM_TIME`` accepted as Spark does), on lakehouse tables only
(:mod:`streamjob.connectors.lakehouse`; docs/streamsql.md "Time travel").

:func:`extract_time_travel` takes each clause out of the preview's text (blanked to the
same length, so positions stay true) before the SQL policy parses it: the policy keeps
refusing ``VERSION AS OF`` in jobs and derived streams (a job reads current data), and
everything else of the preview passes its checks as usual. :func:`resolve_time_travel`
then ties each clause to the table it follows, refuses one on a stream or on a table
of another kind at the clause's keyword, and resolves it to a table version read by the
static reader (the same version for the whole preview).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot.tokens import TokenType

from ..connectors import lakehouse
from ..exceptions import ConnectorError
from .text import QueryText, Span, tokenize

__all__ = ["AsOf", "extract_time_travel", "resolve_time_travel"]

_VERSION_WORDS = {"VERSION": "version", "SYSTEM_VERSION": "version",
                  "TIMESTAMP": "timestamp", "SYSTEM_TIME": "timestamp"}
_NAME_TYPES = (TokenType.VAR, TokenType.IDENTIFIER)


@dataclass(frozen=True)
class AsOf:
    """One time-travel clause: the table name before it (``database`` None when
    unqualified, names lower-cased unless quoted), ``kind`` ``version`` or
    ``timestamp``, ``value`` as written (a string's text without its quotes), and the
    spans of its keyword and of its value."""

    database: str | None
    name: str
    kind: str
    value: str
    keyword: Span
    value_span: Span


def extract_time_travel(qt: QueryText, text: str) -> tuple[str, list[AsOf]]:
    """``text`` (the preview's query, maybe already with same-length rewrites) with its
    ``[FOR] VERSION|TIMESTAMP AS OF value`` clauses blanked, and the clauses.

    Only a clause right after a name counts (elsewhere the words are left to the
    parser).

    Raises:
        ValidationError: a clause whose value is not a number or a string literal (at
            the value).
    """
    tokens = tokenize(text)
    if not tokens:
        return text, []
    out, chars = [], list(text)
    i = 0
    while i < len(tokens) - 3:
        t = tokens[i]
        word = t.text.upper()
        if (word not in _VERSION_WORDS or tokens[i + 1].text.upper() != "AS"
                or tokens[i + 2].text.upper() != "OF"):
            i += 1
            continue
        first = i - 1 if i > 0 and tokens[i - 1].token_type == TokenType.FOR else i
        value = tokens[i + 3]
        name_at = first - 1
        if name_at < 0 or tokens[name_at].token_type not in _NAME_TYPES:
            i += 1  # not after a name (`x::timestamp as of`: an alias): the parser's
            continue
        if value.token_type not in (TokenType.NUMBER, TokenType.STRING):
            raise qt.error(f"{word} AS OF takes a literal: a table version (VERSION AS OF "
                           "3) or a time in quotes (TIMESTAMP AS OF '2026-11-28 10:00:00')",
                           qt.token_span(value))
        name_tok = tokens[name_at]
        db = None
        if name_at >= 2 and tokens[name_at - 1].token_type == TokenType.DOT \
                and tokens[name_at - 2].token_type in _NAME_TYPES:
            db = _name(tokens[name_at - 2])
        out.append(AsOf(db, _name(name_tok), _VERSION_WORDS[word], value.text,
                        qt.token_span(tokens[first]), qt.token_span(value)))
        for k in range(tokens[first].start, value.end + 1):
            if chars[k] != "\n":
                chars[k] = " "
        i += 4
    return "".join(chars), out


def _name(token) -> str:
    return token.text if token.token_type == TokenType.IDENTIFIER else token.text.lower()


def resolve_time_travel(qt: QueryText, clauses: list[AsOf], references, statics, tables,
                        default_database: str) -> list:
    """``statics`` (:class:`~streamjob.planner.plan.Static`) with the version each
    clause names set on its table (``as_of``).

    Args:
        references: the query's :class:`~streamjob.planner.query.Reference` list.
        tables: ``{(database, name): how many times the query names it}``.

    Raises:
        ValidationError: at the clause's keyword: a clause on a stream, on a table that
            is not a lakehouse table, on a name that is no table of the catalog (a
            CTE's), on a table the query also reads without it or at another version;
            at its value: a version or time the table's log does not have.
    """
    by_name = {(r.database, r.name): r for r in references}
    chosen: dict[tuple[str, str], tuple[int, AsOf]] = {}
    for c in clauses:
        db = (c.database or default_database).lower()
        key = (db, c.name.lower())
        ref = by_name.get(key)
        word = "VERSION" if c.kind == "version" else "TIMESTAMP"
        if ref is None:
            raise qt.error(f"{word} AS OF reads a lakehouse table of the catalog; "
                           f"'{c.name}' is none", c.keyword)
        if ref.kind != "table":
            raise qt.error(f"time travel ({word} AS OF) reads lakehouse tables "
                           f"({lakehouse.FORMATS}) only: {db}.{c.name} is a stream, whose "
                           "rows a SELECT shows as they arrive", c.keyword)
        static = next(s for s in statics if s.view == ref.view)
        if not lakehouse.is_lakehouse(static.spec):
            raise qt.error(f"time travel ({word} AS OF) reads lakehouse tables "
                           f"({lakehouse.FORMATS}) only: {static.table.qualified_name} is "
                           f"{static.spec.label} table", c.keyword)
        try:
            version = lakehouse.version_as_of(static.spec, c.kind, c.value.strip("'\""))
        except ConnectorError as exc:
            raise qt.error(f"table {static.table.qualified_name}: {exc.message}",
                           c.value_span) from None
        if key in chosen or tables.get(key, 0) > 1:
            raise qt.error(f"table {static.table.qualified_name} is read more than once; a "
                           "preview reads a table at one version: read it once (a CTE can "
                           "name it twice)", c.keyword)
        chosen[key] = (version, c)
    return [replace(s, as_of=chosen[(s.table.database, s.table.name)][0])
            if (s.table.database, s.table.name) in chosen else s for s in statics]
