"""The inner query of a job: ``insert into t select ...``, parsed with sqlglot.

Hive-flavoured StreamSQL is read with sqlglot's ``hive`` dialect and emitted as Spark SQL.
Every table reference is resolved against the catalog: a stream becomes a streaming
source, a table (file or SQL) a static side of a stream-static join. References are
rewritten to per-job temporary view names so one job's views never shadow another's.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError

from ..exceptions import ValidationError
from ..grammar.statements import DEFAULT_DATABASE, Position

AGGREGATES = (exp.AggFunc,)


@dataclass(frozen=True)
class Reference:
    """A table reference in the query: ``kind`` is ``stream`` or ``table``; ``view`` is
    the temporary view name it is rewritten to."""

    kind: str
    database: str
    name: str
    view: str


@dataclass(frozen=True)
class AnalyzedQuery:
    """The outcome of :func:`analyze`.

    ``target`` is the sink table ``(database, name)``; ``target_columns`` the insert's
    column list if it gave one; ``select_sql`` Spark SQL over the view names;
    ``references`` the streams and static tables read; ``aggregate`` is True when the
    query groups or aggregates (a stateful query); ``windowed`` when it groups by a
    ``window(...)``; ``output_columns`` the select list's names (None where a name
    cannot be known without Spark, e.g. ``*``).
    """

    target: tuple[str, str]
    target_columns: tuple[str, ...] | None
    select_sql: str
    references: tuple[Reference, ...]
    aggregate: bool
    windowed: bool
    output_columns: tuple[str | None, ...]

    @property
    def streams(self) -> tuple[Reference, ...]:
        return tuple(r for r in self.references if r.kind == "stream")

    @property
    def statics(self) -> tuple[Reference, ...]:
        return tuple(r for r in self.references if r.kind == "table")


def view_name(database: str, name: str) -> str:
    """The temporary view a reference to ``database.name`` is rewritten to."""
    return f"sj__{database}__{name}"


def analyze(query: str, resolve, position: Position | None = None,
            default_database: str = DEFAULT_DATABASE) -> AnalyzedQuery:
    """Parse and resolve a job's inner query.

    Args:
        query: the text inside ``AS ("...")``.
        resolve: ``resolve(database, name) -> "stream" | "table" | None`` (the catalog).
        position: where the query text starts in the script, to report true positions.

    Raises:
        ValidationError: not an INSERT ... SELECT, a syntax error (with line and column
            in the script), or an unknown stream/table (named).
    """
    try:
        statements = sqlglot.parse(_quote_window_calls(query), read="hive")
    except SqlglotParseError as exc:
        err = exc.errors[0] if exc.errors else {}
        line, col = _script_pos(position, err.get("line"), err.get("col"))
        raise ValidationError(
            f"syntax error in the job's query: {err.get('description', str(exc)).strip()}"
            + (f" near '{err.get('highlight')}'" if err.get("highlight") else ""),
            line=line, column=col, text=err.get("highlight"),
        ) from None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1 or not isinstance(statements[0], exp.Insert):
        line, col = _script_pos(position, 1, 1)
        raise ValidationError(
            "a streamjob's query must be one 'insert into <table> select ...'",
            line=line, column=col,
        )
    insert = statements[0]
    target_node = insert.this
    target_columns = None
    if isinstance(target_node, exp.Schema):
        target_columns = tuple(c.name.lower() for c in target_node.expressions)
        target_node = target_node.this
    if not isinstance(target_node, exp.Table):
        raise ValidationError("the query must insert into a table", *_pos_args(position, query, ""))
    target = ((target_node.db or default_database).lower(), target_node.name.lower())
    if resolve(*target) != "table":
        kind = resolve(*target)
        what = "is a stream; a job writes to a table" if kind == "stream" else "does not exist"
        raise ValidationError(
            f"table {target[0]}.{target[1]} {what}",
            *_pos_args(position, query, target_node.name),
        )

    select = insert.expression
    if select is None:
        raise ValidationError("the insert has no select", *_pos_args(position, query, ""))
    ctes = {c.alias_or_name.lower() for c in select.find_all(exp.CTE)}
    references: dict[tuple[str, str], Reference] = {}
    for table in list(select.find_all(exp.Table)):
        name = table.name.lower()
        if not table.db and name in ctes:
            continue
        db = (table.db or default_database).lower()
        kind = resolve(db, name)
        if kind is None:
            raise ValidationError(
                f"unknown stream or table '{db}.{name}'", *_pos_args(position, query, table.name)
            )
        ref = references.setdefault((db, name), Reference(kind, db, name, view_name(db, name)))
        alias = table.alias or table.name
        table.replace(exp.Table(this=exp.to_identifier(ref.view), alias=exp.TableAlias(
            this=exp.to_identifier(alias))))
    if not any(r.kind == "stream" for r in references.values()):
        raise ValidationError(
            "the query reads no stream; a streamjob needs at least one stream in FROM",
            *_pos_args(position, query, ""),
        )
    aggregate = bool(select.args.get("group")) or any(
        True for _ in select.find_all(*AGGREGATES)) or bool(select.args.get("distinct"))
    windowed = any(
        isinstance(g, exp.Anonymous) and g.name.lower() == "window"
        or (isinstance(g, exp.Func) and g.sql_name().lower() == "window")
        for g in (select.args.get("group").expressions if select.args.get("group") else [])
    )
    outputs = tuple(
        (e.alias_or_name.lower() or None) if not isinstance(e, exp.Star) else None
        for e in select.expressions
    )
    return AnalyzedQuery(
        target=target,
        target_columns=target_columns,
        select_sql=select.sql(dialect="spark"),
        references=tuple(references.values()),
        aggregate=aggregate,
        windowed=windowed,
        output_columns=outputs,
    )


def _quote_window_calls(query: str) -> str:
    """Backquote Spark's ``window(...)`` function, which sqlglot reads as the WINDOW
    keyword; same length is not kept, so this runs only when such a call exists."""
    from sqlglot.tokens import Tokenizer, TokenType

    try:
        tokens = Tokenizer(dialect="hive").tokenize(query)
    except Exception:  # noqa: BLE001 - the parser reports tokenizer errors properly
        return query
    spans = [t for t, nxt in zip(tokens, tokens[1:])
             if t.token_type == TokenType.WINDOW and nxt.token_type == TokenType.L_PAREN]
    for t in reversed(spans):
        query = query[:t.start] + f"`{query[t.start:t.end + 1]}`" + query[t.end + 1:]
    return query


def _script_pos(position: Position | None, line: int | None, col: int | None):
    """Map a 1-based (line, col) inside the query to the script."""
    if line is None:
        return (position.line, position.column) if position else (None, None)
    if position is None:
        return line, col
    if line == 1:
        return position.line, position.column + (col or 1) - 1
    return position.line + line - 1, col


def _pos_args(position: Position | None, query: str, needle: str):
    """(line, column, text) of the first occurrence of ``needle`` in the query."""
    idx = query.lower().find(needle.lower()) if needle else -1
    if idx < 0:
        line, col = _script_pos(position, None, None)
        return line, col, needle or None
    before = query[:idx]
    qline = before.count("\n") + 1
    qcol = idx - (before.rfind("\n") + 1) + 1
    line, col = _script_pos(position, qline, qcol)
    return line, col, needle
