"""Derived streams: ``CREATE STREAM d AS SELECT ...`` — a named view over other streams.

A derived stream projects, filters and unions streams (and may join streams with each
other). It reads only streams, at least one. Every output column needs a name (a column,
or ``expr AS name``), once.

A derived stream may aggregate only over a STREAMWINDOW: a **window stream**, as in
Slipstream (``CREATE STREAM w AS SELECT k, count(*) n FROM s STREAMWINDOW sw AS (LENGTH
'10' SECOND) GROUP BY k``). Each window's result row is emitted once, when the window
closes (event time: the watermark passes the window's end; processing time: a later
micro-batch starts after it, see :mod:`.window`), so a job reading it sees an
append-only stream of final window results (Spark: a windowed aggregation in append
output mode with a watermark). Refused, with the rewrite: an aggregation or DISTINCT
without a STREAMWINDOW (its results change as data arrives and cannot be appended), a
written ``window(...)`` grouping (write it as a STREAMWINDOW), and a select that
aggregates again over the windowed one (aggregate in the job that reads it).

A window stream that selects the ``window`` struct (``struct<start:timestamp,
end:timestamp>``, under any name) has event time on that column
(:meth:`.lookup.Lookup.event_time`): Spark carries the watermark on it, so a job (or
another window stream) may aggregate again over a STREAMWINDOW of the window stream
(Spark 4 chains stateful operators in append mode,
``spark.sql.streaming.statefulOperator.allowMultiple``, default true). Without it, such
a STREAMWINDOW is on processing time. A job that reads a window stream and aggregates
without a STREAMWINDOW is refused (:func:`check_reads_window_streams`): Spark cannot
run a second aggregation after a windowed one in update mode, nor in append mode
without a window on the watermarked column.

Its columns are inferred when it is created (:func:`derive_stream`): an output that
passes a source column through keeps that column's declared type as written; the
``window`` struct is ``struct<start:timestamp,end:timestamp>``; any other expression
gets sqlglot's type annotation over the declared types of what it reads; where that
cannot tell (e.g. a user function), it is recorded as ``string``. The recorded types
serve column resolution and DESCRIBE only: at run time Spark computes the real types,
and a job's results are cast to its sink's declared types anyway.

A job reading ``d`` plans d's SELECT recursively over the views of its inputs
(:func:`expand_streams`); its dependencies include ``d`` and every stream beneath it,
so none of them can be dropped while the job exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from sqlglot import exp
from sqlglot.tokens import TokenType

from ..catalog.records import StreamInfo
from ..exceptions import ValidationError
from ..grammar.statements import Position
from ..columntypes import normalize_type
from ..policy.checked import CheckedSQL
from .lookup import Lookup, direct_references, is_window_stream
from .query import AnalyzedSelect, Reference, analyze_select, view_name
from .text import QueryText, is_window_call, tokenize
from .window import WINDOW_TYPE, aggregates, groups_by_window


@dataclass(frozen=True)
class DerivedStream:
    """The outcome of :func:`derive_stream`.

    ``columns`` are ``{"name", "type"}`` dicts in select-list order (Hive type text);
    ``references`` every stream it reads, directly or through other derived streams,
    as ``(database, name)`` in discovery order; ``select_sql`` the Spark SQL over view
    names (informational; the catalog keeps the query as written)."""

    database: str
    name: str
    columns: tuple[dict[str, str], ...]
    references: tuple[tuple[str, str], ...]
    select_sql: CheckedSQL


def derive_stream(catalog: Any, database: str, name: str, select_text: str,
                  position: Position | None = None) -> DerivedStream:
    """Validate ``CREATE STREAM database.name AS <select_text>`` and infer its columns.

    Unqualified names in the select resolve in ``database`` (the derived stream's own),
    as a job's do in the job's database.

    Raises:
        ValidationError: a syntax error; an unknown stream, table, column or alias; an
            ambiguous column; a table (not a stream) in FROM; no stream read; reading
            itself; an aggregation without a STREAMWINDOW, DISTINCT, a written
            ``window(...)`` grouping, an aggregation over the windowed select; an unnamed
            or duplicate output column,
            each at its line and column in the script (``position`` = where the select
            text starts in it).
    """
    lookup = Lookup(catalog)
    sel = analyze_select(select_text, lookup, position, database)
    qt = QueryText(select_text, position)
    if (database, name) in {(r.database, r.name) for r in sel.references}:
        raise qt.error(f"derived stream {database}.{name} cannot read itself")
    _check_aggregation(qt, sel)
    selects = sel.tree.selects
    seen: set[str] = set()
    for i, out in enumerate(sel.output_columns):
        node = selects[i] if i < len(selects) else None
        if out is None:
            raise qt.error(f"column {i + 1} of derived stream {database}.{name} needs a name: "
                           f"write <expression> AS <name>", qt.node_span(node))
        if out in seen:
            raise qt.error(f"column '{out}' appears twice in derived stream {database}.{name}; "
                           f"rename one with AS", qt.node_span(node))
        seen.add(out)
    types = _infer_types(sel, lookup)
    columns = tuple({"name": n, "type": t} for n, t in zip(sel.output_columns, types))
    refs: list[tuple[str, str]] = []
    for r in sel.references:
        for key in [(r.database, r.name), *sorted(_transitive(lookup, r.database, r.name))]:
            if key not in refs:
                refs.append(key)
    return DerivedStream(database, name, columns, tuple(refs), sel.select_sql)


def stream_references(catalog: Any, stream: StreamInfo) -> set[tuple[str, str]]:
    """Every stream ``stream`` reads, directly or through other derived streams, as
    ``(database, name)``; empty for a source stream. The executor refuses DROP STREAM s
    while some derived stream d has s in ``stream_references(catalog, d)``.

    Never raises for a stored query that no longer parses (it then reads nothing)."""
    return _transitive(Lookup(catalog), stream.database, stream.name)


def _transitive(lookup: Lookup, database: str, name: str, seen=None) -> set[tuple[str, str]]:
    seen = set() if seen is None else seen
    st = lookup.stream(database, name)
    if st is None or not st.is_derived:
        return set()
    out: set[tuple[str, str]] = set()
    for ref in direct_references(st):
        if ref in seen or lookup.kind(*ref) != "stream":
            continue
        seen.add(ref)
        out.add(ref)
        out |= _transitive(lookup, *ref, seen=seen)
    return out


def expand_streams(lookup: Lookup, refs: Iterable[Reference], proctime: set[str] | None = None
                   ) -> tuple[list[tuple[StreamInfo, str]], list[tuple[StreamInfo, str, str]]]:
    """The streams a job's stream references need at run time.

    ``proctime``, if given, gets the view of every stream a window stream beneath the
    job windows on processing time (that view needs the ``__proctime`` column).

    Returns:
        ``(bases, derived)``: source streams as ``(stream, view)``, and derived streams
        as ``(stream, view, select_sql)`` in dependency order (a derived stream after
        every derived stream it reads), each select over the views of its inputs.

    Raises:
        ValidationError: a derived stream whose stored query no longer resolves (a stream
            beneath it changed), or a cycle between derived streams.
    """
    bases: list[tuple[StreamInfo, str]] = []
    derived: list[tuple[StreamInfo, str, str]] = []
    done: set[tuple[str, str]] = set()

    def visit(db: str, name: str, stack: tuple[tuple[str, str], ...]) -> None:
        key = (db, name)
        if key in done:
            return
        if key in stack:
            raise ValidationError(f"derived streams read each other in a cycle: "
                                  f"{' -> '.join('.'.join(k) for k in (*stack, key))}")
        st = lookup.stream(db, name)
        if st is None:
            raise ValidationError(f"stream {db}.{name} no longer exists")
        if st.is_derived:
            try:
                sel = analyze_select(st.query, lookup, None, st.database)
            except ValidationError as exc:
                raise ValidationError(f"derived stream {st.qualified_name} no longer resolves: "
                                      f"{exc.message}") from None
            for r in sel.references:
                visit(r.database, r.name, (*stack, key))
            if proctime is not None:
                proctime.update(w.view for w in sel.windows if w.proctime)
            derived.append((st, view_name(db, name), sel.select_sql))
        else:
            bases.append((st, view_name(db, name)))
        done.add(key)

    for r in refs:
        if r.kind == "stream":
            visit(r.database, r.name, ())
    return bases, derived


def _check_aggregation(qt: QueryText, sel: AnalyzedSelect) -> None:
    """Refuse what a derived stream cannot append (module docstring), at its place."""
    if not sel.aggregate:
        return
    tree = sel.tree
    if any(s.args.get("distinct") for s in tree.find_all(exp.Select)):
        # SELECT DISTINCT: sqlglot keeps no position on it
        tok = next((t for t in tokenize(qt.text) or [] if t.token_type == TokenType.DISTINCT), None)
        raise qt.error("a derived stream cannot aggregate with DISTINCT: its rows change as data "
                       "arrives and cannot be appended to a stream; GROUP BY the columns over a "
                       "STREAMWINDOW (FROM s STREAMWINDOW w AS (LENGTH '10' SECOND) GROUP BY ...) "
                       "to append each window's rows once it closes",
                       qt.token_span(tok) if tok is not None else None)
    if sel.windowed and not sel.windows:
        call = next((n for g in tree.find_all(exp.Group) for n in g.walk()
                     if is_window_call(n)), None)
        raise qt.error("a derived stream groups by a time window with STREAMWINDOW: write FROM s "
                       "STREAMWINDOW w AS (LENGTH '10' SECOND [SLIDE '5' SECOND]) instead of "
                       "window(...) in GROUP BY", qt.node_span(call))
    if not sel.windows:
        span = None
        for kind in (exp.AggFunc, exp.Group):
            node = next(iter(tree.find_all(kind)), None)
            span = span or qt.node_span(node)
        raise qt.error("a derived stream cannot aggregate without a STREAMWINDOW: an "
                       "aggregation's results change as data arrives and cannot be appended to "
                       "a stream; window it (FROM s STREAMWINDOW w AS (LENGTH '10' SECOND)) to "
                       "append each window's result once the window closes, or aggregate in "
                       "the streamjob that reads it", span)
    for select in tree.find_all(exp.Select):
        if aggregates(select) and not groups_by_window(select):
            node = next((n for n in select.find_all(exp.AggFunc)), None) or select.args.get("group")
            raise qt.error("a window stream aggregates once, in the select its STREAMWINDOW "
                           "windows; aggregate its results again in the streamjob (or another "
                           "window stream) that reads it, over a STREAMWINDOW",
                           qt.node_span(node))


def check_window_stream_readers(query: Any, derived: Iterable[StreamInfo]) -> None:
    """Refuse a job (or preview) query that aggregates over a window stream without a
    STREAMWINDOW.

    Args:
        query: the job's :class:`~.query.AnalyzedQuery` (or a preview's AnalyzedSelect):
            ``aggregate``, ``windowed``, ``windows`` and ``select_span`` are read.
        derived: the derived streams beneath it (any order).

    Raises:
        ValidationError: at the select list. Spark 4 refuses a second aggregation after a
            windowed one in update mode ("possible 'correctness' issue due to global
            watermark") and, in append mode, one without a window on the watermarked
            column; a STREAMWINDOW over the window stream (on its ``window`` column, or
            processing time) is what runs.
    """
    if not query.aggregate or query.windows:
        return
    window_streams = [st for st in derived if is_window_stream(st)]
    if not window_streams:
        return
    st = window_streams[0]
    span = query.select_span
    message = (f"the query aggregates over window stream {st.qualified_name}, whose rows are "
               f"final window results; aggregate them again over a STREAMWINDOW (FROM "
               f"{st.name} STREAMWINDOW w AS (LENGTH '1' MINUTE)), on its window column's "
               f"event time if it selects one, else processing time")
    if span is None:
        raise ValidationError(message)
    raise ValidationError(message, line=span.line, column=span.column, text=span.text)


def _infer_types(sel: AnalyzedSelect, lookup: Lookup) -> list[str]:
    """The passed-through source type of each output, else sqlglot's, else string."""
    annotated: list[str | None] = [None] * len(sel.output_columns)
    try:
        from sqlglot.optimizer.annotate_types import annotate_types
        from sqlglot.optimizer.qualify import qualify

        schema = {r.view: {c["name"].lower(): c["type"] for c in lookup.columns(r.database, r.name)}
                  for r in sel.references}
        tree = qualify(sel.tree.copy(), schema=schema, dialect="spark",
                       validate_qualify_columns=False, quote_identifiers=False)
        annotate_types(tree, schema=schema, dialect="spark")
        for i, e in enumerate(tree.selects[:len(annotated)]):
            dt = e.type
            if dt is not None and dt.this not in (exp.DataType.Type.UNKNOWN,
                                                  exp.DataType.Type.NULL):
                annotated[i] = normalize_type(dt.sql(dialect="spark"))
    except Exception:  # noqa: BLE001 - inference is best effort; fall back below
        pass
    if sel.windows:
        for i, e in enumerate(sel.tree.selects[:len(annotated)]):
            if _is_window_struct(e):
                annotated[i] = WINDOW_TYPE
    return [t or a or "string" for a, t in zip(annotated, sel.output_types)]


def _is_window_struct(node: exp.Expr) -> bool:
    """``window`` or ``window AS name`` in a select list: the window struct itself."""
    node = node.this if isinstance(node, exp.Alias) else node
    return isinstance(node, exp.Column) and not node.table and node.name.lower() == "window"
