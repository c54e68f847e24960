"""The inner query of a job (``insert into t select ...``) or of a derived stream
(``select ...``), parsed with sqlglot and resolved against the catalog.

Hive-flavoured StreamSQL is read with sqlglot's ``hive`` dialect and emitted as Spark SQL.
Every table reference is resolved against the catalog: a stream becomes a streaming
source, a table (file or SQL) a static side of a stream-static join. Every column is
resolved against the declared columns (:mod:`.columns`), Slipstream's STREAMWINDOW
becomes Spark's ``window(...)`` grouping (:mod:`.window`), and references are rewritten
to per-job temporary view names so one job's views never shadow another's.

Errors are :class:`~streamjob.exceptions.ValidationError` at the offending name's true
line and column in the script (``position`` is where the query text starts in it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from .. import policy
from .pattern import extract_pattern

from ..grammar.statements import DEFAULT_DATABASE, Position
from .cep import analyze_pattern
from .columns import CatalogSource, ColumnResolver, OutputColumn
from .lookup import Lookup
from .positions import add_positions, position_topics
from .streaming import check_streaming
from .text import QueryText, Span, is_window_call, parse
from .window import (PROCTIME_COLUMN, StreamWindow, WindowClause, add_window_group, aggregates,
                     extract_windows, groups_by_session, groups_by_window, window_table)

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
class AnalyzedSelect:
    """A resolved SELECT (the body of a job's insert, or a derived stream's query).

    ``select_sql`` is Spark SQL over the view names (checked by :mod:`streamjob.policy`); ``references`` the streams and
    tables read; ``aggregate`` True when it groups, aggregates or is DISTINCT;
    ``windowed`` when it groups by ``window(...)`` (written or from STREAMWINDOW);
    ``windows`` the STREAMWINDOWs applied; ``output_columns`` the select list's names
    (None for an unnamed expression); ``output_types`` the declared type of each output
    that passes a source column through (else None); ``arity_known`` False when a ``*``
    could not be expanded; ``sessions`` True when it groups by ``session_window(...)``
    (written or from SESSIONWINDOW) or by predicate sessions (appended, never
    updated). ``tree`` is the rewritten sqlglot tree (not compared)."""

    select_sql: policy.CheckedSQL
    references: tuple[Reference, ...]
    aggregate: bool
    windowed: bool
    windows: tuple[StreamWindow, ...]
    output_columns: tuple[str | None, ...]
    output_types: tuple[str | None, ...]
    arity_known: bool
    sessions: bool = False
    select_span: Span | None = field(default=None, compare=False)
    tree: exp.Expr | None = field(default=None, compare=False, repr=False)
    pattern: Any = None


@dataclass(frozen=True)
class AnalyzedQuery:
    """The outcome of :func:`analyze`.

    ``target`` is the sink table ``(database, name)``; ``target_columns`` the insert's
    column list if it gave one (``target_spans`` where each stands in the script);
    ``select_span`` where the select list starts. Other fields as in
    :class:`AnalyzedSelect`; ``output_columns`` are known for ``*`` too (expanded)."""

    target: tuple[str, str]
    target_columns: tuple[str, ...] | None
    select_sql: policy.CheckedSQL
    references: tuple[Reference, ...]
    aggregate: bool
    windowed: bool
    output_columns: tuple[str | None, ...]
    windows: tuple[StreamWindow, ...] = ()
    output_types: tuple[str | None, ...] = ()
    arity_known: bool = True
    sessions: bool = False
    target_spans: tuple[Span, ...] = field(default=(), compare=False)
    select_span: Span | None = field(default=None, compare=False)
    pattern: Any = None  # a CEP query's planner.cep.CepPlan

    @property
    def streams(self) -> tuple[Reference, ...]:
        return tuple(r for r in self.references if r.kind == "stream")

    @property
    def statics(self) -> tuple[Reference, ...]:
        return tuple(r for r in self.references if r.kind == "table")


def view_name(database: str, name: str) -> str:
    """The temporary view a reference to ``database.name`` is rewritten to."""
    return f"sj__{database}__{name}"


def analyze(query: str, lookup: Lookup, position: Position | None = None,
            default_database: str = DEFAULT_DATABASE) -> AnalyzedQuery:
    """Parse and resolve a job's inner query.

    Args:
        query: the text inside ``AS ("...")``.
        lookup: the catalog (:class:`~streamjob.planner.lookup.Lookup`).
        position: where the query text starts in the script, to report true positions.
        default_database: the database of unqualified names (the job's).

    Raises:
        ValidationError: not an INSERT ... SELECT, a syntax error, an unknown stream,
            table, column or alias, an ambiguous column, a bad STREAMWINDOW (see
            :func:`.window.extract_windows`; also on a static table, without an
            aggregation, or with a written ``window(...)`` grouping), each at its line
            and column in the script.
    """
    qt = QueryText(query, position, lookup.functions(default_database))
    policy.check_text(qt, query, "job's query", calls=False)  # as written
    text, clauses, pattern = extract_clauses(qt)
    statements = parse(qt, text, "job's query")
    if len(statements) != 1 or not isinstance(statements[0], exp.Insert):
        raise qt.error("a streamjob's query must be one 'insert into <table> select ...'")
    insert = statements[0]
    target_node = insert.this
    target_columns, target_spans = None, ()
    if isinstance(target_node, exp.Schema):
        target_columns = tuple(c.name.lower() for c in target_node.expressions)
        target_spans = tuple(qt.node_span(c) for c in target_node.expressions)
        target_node = target_node.this
    if not isinstance(target_node, exp.Table):
        raise qt.error("the query must insert into a table")
    target = ((target_node.db or default_database).lower(), target_node.name.lower())
    kind = lookup.kind(*target)
    if kind != "table":
        what = "is a stream; a job writes to a table" if kind == "stream" else "does not exist"
        raise qt.error(f"table {target[0]}.{target[1]} {what}", qt.node_span(target_node.this))
    select = insert.expression
    if not isinstance(select, (exp.Query, exp.Subquery)):
        raise qt.error("the insert has no select")
    body = select_body(qt, select, clauses, pattern, lookup, default_database)
    lookup.note_calls(called_functions(qt, insert))
    return AnalyzedQuery(
        target=target, target_columns=target_columns, select_sql=body.select_sql,
        references=body.references, aggregate=body.aggregate, windowed=body.windowed,
        output_columns=body.output_columns, windows=body.windows,
        output_types=body.output_types, arity_known=body.arity_known, sessions=body.sessions,
        target_spans=target_spans, select_span=body.select_span, pattern=body.pattern,
    )


def called_functions(qt: QueryText, tree: exp.Expr) -> tuple:
    """The user functions (:class:`~streamjob.catalog.records.FunctionInfo`) ``tree``
    calls, by name."""
    names = {node.name.lower() for node in tree.find_all(exp.Anonymous)}
    return tuple(qt.functions[n] for n in sorted(names & qt.functions.keys()))


def extract_clauses(qt: QueryText) -> tuple[str, list[WindowClause], Any]:
    """The text of a job's query or a shell preview's SELECT (``qt``) with its window
    clauses (:func:`.window.extract_windows`) and its ``PATTERN (...) WITHIN (...)``
    (:func:`.pattern.extract_pattern`) taken out: ``(text, clauses, pattern)``, the
    pattern None when there is none.

    Raises:
        ValidationError: as those two; a PATTERN with a STREAMWINDOW or SESSIONWINDOW (a
            match is its own window), at the window's keyword.
    """
    text, clauses = extract_windows(qt)
    text, pattern = extract_pattern(qt, text)
    if pattern is not None and clauses:
        raise qt.error(f"a PATTERN query has no {clauses[0].word}: a match is its own "
                       f"window (WITHIN)", clauses[0].keyword)
    return text, clauses, pattern


def select_body(qt: QueryText, select: exp.Expr, clauses: list[WindowClause], pattern,
                lookup: Lookup, default_database: str,
                streams_needed: bool = True) -> AnalyzedSelect:
    """The analyzed select of a job's query or a shell preview (``clauses`` and
    ``pattern`` from :func:`extract_clauses`): over the pattern's matches
    (:func:`.cep.analyze_pattern`, its ``pattern`` the CepPlan) when there is one, else
    :func:`analyze_body` (``streams_needed`` False: a preview that time-travels may read
    tables alone).

    Raises:
        ValidationError: as :func:`.cep.analyze_pattern` or :func:`analyze_body`.
    """
    if pattern is not None:
        return _pattern_body(qt, select, pattern, lookup, default_database)
    return analyze_body(qt, select, clauses, lookup, default_database, "job", streams_needed)


def _pattern_body(qt: QueryText, select: exp.Expr, pattern, lookup: Lookup,
                  default_database: str) -> AnalyzedSelect:
    """The select over a PATTERN (:func:`.cep.analyze_pattern`) as an AnalyzedSelect."""
    cs = analyze_pattern(qt, select, pattern, lookup, default_database, view_name)
    ref = Reference("stream", cs.plan.database, cs.plan.stream, cs.plan.view)
    return AnalyzedSelect(
        select_sql=cs.select_sql, references=(ref,), aggregate=False, windowed=False,
        windows=(), output_columns=cs.output_columns, output_types=cs.output_types,
        arity_known=True, select_span=cs.select_span, tree=cs.tree, pattern=cs.plan)


def analyze_select(text: str, lookup: Lookup, position: Position | None = None,
                   default_database: str = DEFAULT_DATABASE,
                   what: str = "derived stream") -> AnalyzedSelect:
    """Parse and resolve a standalone SELECT (a derived stream's query).

    It must read at least one stream. A STREAMWINDOW is resolved as in a job's query
    (a window stream; whether the derived stream may aggregate is decided by
    :mod:`.derived`).

    Raises:
        ValidationError: as :func:`analyze`, or not one SELECT.
    """
    qt = QueryText(text, position, lookup.functions(default_database))
    policy.check_text(qt, text, f"{what}'s query", calls=False)  # as written
    blanked, clauses = extract_windows(qt)
    _, pattern = extract_pattern(qt, blanked)
    if pattern is not None:
        raise qt.error(f"a {what} cannot read a PATTERN: match it in a streamjob's INSERT "
                       f"(CREATE STREAMJOB ... AS (\"insert into t select ... from "
                       f"PATTERN (...) WITHIN (...)\"))", pattern.keyword)
    statements = parse(qt, blanked, f"{what}'s query")
    if len(statements) != 1 or not isinstance(statements[0], (exp.Query, exp.Subquery)):
        raise qt.error(f"a {what} is defined by one 'select ...'")
    session = next((c for c in clauses if c.kind != "stream"), None)
    if session is not None:
        raise qt.error(f"a {what} cannot use SESSIONWINDOW yet: group by sessions in the "
                       f"streamjob that reads it", session.keyword)
    return analyze_body(qt, statements[0], clauses, lookup, default_database, what)


def analyze_body(qt: QueryText, select: exp.Expr, clauses: list[WindowClause], lookup: Lookup,
                 default_database: str, what: str, streams_needed: bool = True) -> AnalyzedSelect:
    """The analysis of one select (a job's, a derived stream's or a preview's: ``what``
    names it in errors) with its window ``clauses`` taken out: the relations it reads
    through ``lookup``, its rendered Spark SQL and its windows.

    Raises:
        ValidationError: at the offending text's line and column (an unknown relation,
            a refused function or construct).
    """
    lookup.note_calls(called_functions(qt, select))
    ctes = {c.alias_or_name.lower() for c in select.find_all(exp.CTE)}
    tables: dict[int, CatalogSource] = {}
    refs: dict[tuple[str, str], Reference] = {}
    nodes: list[tuple[exp.Table, Reference]] = []
    for table in list(select.find_all(exp.Table)):
        name = table.name.lower()
        if not name or (not table.db and name in ctes):
            continue
        db = (table.db or default_database).lower()
        kind = lookup.kind(db, name)
        if kind is None:
            raise qt.error(f"unknown stream or table '{db}.{name}'", qt.node_span(table.this))
        if kind == "table" and what != "job":
            raise qt.error(f"a {what} reads only streams, and {db}.{name} is a table",
                           qt.node_span(table.this))
        ref = refs.setdefault((db, name), Reference(kind, db, name, view_name(db, name)))
        tables[id(table)] = CatalogSource(kind, db, name, lookup.columns(db, name))
        nodes.append((table, ref))
    if streams_needed and not any(r.kind == "stream" for r in refs.values()):
        reader = "a streamjob" if what == "job" else f"a {what}"
        raise qt.error(f"the query reads no stream; {reader} needs at least one stream in FROM")

    pending = [_place_window(qt, c, select, tables, lookup) for c in clauses]
    pseudo = set()
    if any(c.kind == "stream" for c in clauses) or any(
            is_window_call(n) and n.name.lower() == "window"
                      for n in select.find_all(exp.Anonymous)):
        pseudo.add("window")
    if any(c.kind != "stream" for c in clauses) or any(
            is_window_call(n) and n.name.lower() == "session_window"
            for n in select.find_all(exp.Anonymous)):
        pseudo.add("session_window")
    resolver = ColumnResolver(qt, tables, pseudo)
    outputs = resolver.resolve(select) or []
    check_streaming(qt, select, {i: (t.database, t.name) for i, t in tables.items()
                                 if t.kind == "stream"}, lookup)
    for target_select, alias, window in pending:
        add_window_group(target_select, alias, window)
    for table, ref in nodes:
        alias = table.args.get("alias")
        alias = alias.copy() if isinstance(alias, exp.TableAlias) else exp.TableAlias(
            this=exp.to_identifier(table.name))
        table.replace(exp.Table(this=exp.to_identifier(ref.view), alias=alias))

    _cross_lateral_joins(select)
    scalar = {n for n, f in qt.functions.items() if f.kind == "python"}
    if scalar:  # a failing record's position in the function's error (issue 31)
        add_positions(select, position_topics(refs.values(), lookup), scalar)

    aggregate = any(True for s in select.find_all(exp.Select) if s.args.get("group")) or any(
        True for _ in select.find_all(*AGGREGATES)) or any(
        bool(s.args.get("distinct")) for s in select.find_all(exp.Select))
    windowed = any(groups_by_window(s) for s in select.find_all(exp.Select))
    return AnalyzedSelect(
        select_sql=policy.render(qt, select, "job's query" if what == "job" else f"{what}'s query"),
        references=tuple(refs.values()),
        aggregate=aggregate,
        windowed=windowed,
        windows=tuple(w for _, _, w in pending),
        output_columns=tuple(o.name for o in outputs),
        output_types=tuple(o.type for o in outputs),
        arity_known=resolver.arity_known,
        sessions=groups_by_session(select) or any(c.kind == "predicate" for c in clauses),
        select_span=_select_span(qt, select, outputs),
        tree=select,
    )


def _cross_lateral_joins(tree: exp.Expr) -> None:
    """``JOIN LATERAL f(...) t ON TRUE`` (sqlglot writes a bare ``JOIN LATERAL`` so) as
    ``CROSS JOIN LATERAL f(...) t``: the same rows, and the form Spark runs on a stream
    (an inner lateral join with a condition is decorrelated into an aggregation, which
    a stream refuses without a watermark). The SQL policy admits no other condition or
    side on a lateral join (:mod:`streamjob.policy.nodes`)."""
    for join in list(tree.find_all(exp.Join)):
        on = join.args.get("on")
        if isinstance(join.this, exp.Lateral) and not join.this.args.get("view") \
                and isinstance(on, exp.Boolean) and on.this is True and not join.side:
            join.set("on", None)
            join.set("kind", "CROSS")


def _place_window(qt: QueryText, clause: WindowClause, tree: exp.Expr,
                  tables: dict[int, CatalogSource], lookup: Lookup):
    """Check a STREAMWINDOW/SESSIONWINDOW against the tree; returns (select, alias,
    StreamWindow)."""
    kw = clause.word
    table = window_table(clause, tree)
    info = tables.get(id(table)) if table is not None else None
    if info is None:
        example = ("SESSIONWINDOW w AS (GAP '30' SECOND)" if clause.kind == "session"
                   else "STREAMWINDOW w AS (LENGTH '10' SECOND)")
        raise qt.error(f"{kw} must follow a stream in FROM or JOIN, as in FROM s {example}",
                       clause.keyword)
    if info.kind != "stream":
        raise qt.error(f"{kw} applies to a stream, and {info.database}.{info.name} is a "
                       f"static table", clause.keyword)
    select = table.find_ancestor(exp.Select)
    if select is None or not aggregates(select):
        raise qt.error(f"{kw} needs an aggregation: add GROUP BY or an aggregate function",
                       clause.keyword)
    if groups_by_window(select):
        call = next(n.name.lower() for n in select.args["group"].walk() if is_window_call(n))
        raise qt.error(f"the query groups by {call}(...) and has a {kw}; keep one of them",
                       clause.keyword)
    try:
        event_time = lookup.event_time(info.database, info.name)
    except Exception as exc:  # noqa: BLE001 - a ValidationError: place it at the clause
        raise qt.error(getattr(exc, "message", str(exc)), clause.keyword) from None
    struct = "window" if clause.kind == "stream" else "session_window"
    if any(c["name"].lower() == struct for c in info.columns):
        for col in select.find_all(exp.Column):
            if (col.table or col.name).lower() == struct and not col.db:
                raise qt.error(
                    f"stream {info.database}.{info.name} has a column named {struct}, and this "
                    f"query's {kw} makes a new {struct}: Spark reads {struct} here as the "
                    f"stream's column; select it under another name in {info.name} "
                    f"({struct} AS win)", qt.node_span(col))
    alias = table.alias_or_name
    predicate = None
    if clause.kind == "predicate":
        predicate = _predicate(qt, clause, table, info, tables)
    window = StreamWindow(
        name=clause.name, database=info.database, stream=info.name,
        view=view_name(info.database, info.name), alias=alias,
        time_column=event_time[0] if event_time else PROCTIME_COLUMN,
        proctime=event_time is None,
        length=clause.length.spark if clause.length else "",
        slide=clause.slide.spark if clause.slide else None, kind=clause.kind, predicate=predicate)
    return select, alias, window


def _predicate(qt: QueryText, clause: WindowClause, table: exp.Table, info: CatalogSource,
               tables: dict[int, CatalogSource]):
    """Resolve a predicate SESSIONWINDOW (:func:`.sessions.resolve`) in a query that
    reads that one stream, once: its view is replaced by the sessionized stream, whose
    watermark policy (:mod:`streamjob.spark.sessions`) assumes no other stream."""
    from .sessions import resolve

    streams = [(t.database, t.name) for t in tables.values() if t.kind == "stream"]
    if len(streams) > 1:
        raise qt.error(f"a query with a predicate SESSIONWINDOW reads one stream, once "
                       f"({info.database}.{info.name}); join other streams in a derived stream "
                       f"or another job", clause.keyword)
    names = {table.name.lower(), table.alias_or_name.lower()}
    return resolve(qt, clause.predicate, info.columns, names)


def _select_span(qt: QueryText, select: exp.Expr, outputs: list[OutputColumn]) -> Span | None:
    for o in outputs:
        span = qt.node_span(o.node)
        if span is not None:
            return span
    return qt.node_span(select)
