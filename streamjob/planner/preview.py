"""A bare ``SELECT ... FROM stream [LIMIT n]``: the shell's transient look at a stream.

A job's query is an ``insert into <table> select ...``; the shell also accepts a bare
SELECT, which runs as a short-lived streaming query whose rows are printed, not stored.
:func:`plan_preview` resolves it with the job planner's machinery (the same column and
object checks, STREAMWINDOW, derived streams, stream-static joins and a CEP ``FROM
PATTERN (...) WITHIN (...)``, errors at their line and column in the statement) and
:func:`streamjob.spark.query.preview_frame` builds it in a Spark session clone with the
same source readers and views (a pattern's match view included) a job uses.

Differences from a job, on purpose:

* the top-level ``LIMIT n`` is not part of the Spark query (a streaming LIMIT is
  stateful); it is the number of rows to show (default :data:`DEFAULT_LIMIT`);
* a Kafka stream is read from its reset strategy
  (``transwarp.consumer.reset.offset.strategy``: ``earliest`` unless the stream says
  otherwise), or from ``reset`` when the caller overrides it; nothing is committed to
  any consumer group;
* malformed records of a stream with ``malformed.policy`` ``skip`` or ``dead-letter``
  are skipped: a preview never writes to a dead-letter table;
* an aggregation runs in ``update`` output mode, so its changing results are shown as
  they change (a job would need a keyed sink for that).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from .. import policy
from .. import properties as jp
from ..catalog import Catalog
from ..connectors import spec as cspec
from ..connectors.sources import stream_source
from ..exceptions import ValidationError
from ..grammar.statements import DEFAULT_DATABASE
from ..home import Home
from .derived import check_window_stream_readers, expand_streams
from .lookup import Lookup
from .plan import Derived, Source, Static, static_tables
from .query import AnalyzedSelect, extract_clauses, select_body
from .text import QueryText, parse
from .timetravel import extract_time_travel, resolve_time_travel

#: Rows shown by a SELECT without LIMIT.
DEFAULT_LIMIT = 20


@dataclass(frozen=True)
class PreviewPlan:
    """A resolved bare SELECT (no Spark objects).

    ``select`` is the analyzed query (its ``select_sql`` over view names, without the
    top-level LIMIT); ``limit`` the rows to show; ``sources``, ``statics`` and
    ``derived`` as in :class:`~streamjob.planner.plan.JobPlan`; ``props`` the effective
    typed job properties of the session (``SET``); ``output_mode`` ``append`` or
    ``update`` (an aggregation); no ``sources``: a query of tables alone, which reads
    a lakehouse table at a version (time travel), run once as a batch."""

    select: AnalyzedSelect
    limit: int
    sources: tuple[Source, ...]
    statics: tuple[Static, ...]
    derived: tuple[Derived, ...]
    props: dict[str, Any]
    output_mode: str
    #: the user functions it calls (FunctionInfo), as :attr:`JobPlan.functions`
    functions: tuple = ()

    @property
    def batch(self) -> bool:
        """True when it reads no stream (tables alone, one at a version): one batch."""
        return not self.sources and not self.derived

    @property
    def columns(self) -> tuple[str, ...]:
        """The output column names as the select names them (``_cN`` when unnamed)."""
        return tuple(c or f"_c{i}" for i, c in enumerate(self.select.output_columns))


def is_select(text: str) -> bool:
    """True when ``text`` (one statement) is a query: it starts with SELECT or WITH,
    after blanks, comments and opening parentheses."""
    from ..grammar.lexical import iter_pieces

    for kind, start, end in iter_pieces(text):
        if kind in ("ws", "comment"):
            continue
        piece = text[start:end].lstrip("(")
        if not piece:
            continue
        word = re.match(r"[A-Za-z_]*", piece).group(0).lower()
        return word in ("select", "with")
    return False


def plan_preview(catalog: Catalog, home: Home, text: str,
                 session_props: dict[str, str] | None = None, reset: str | None = None,
                 default_database: str = DEFAULT_DATABASE) -> PreviewPlan:
    """Resolve a bare SELECT against the catalog.

    Args:
        catalog: the catalog.
        home: the streamjob home (default locations of file tables).
        text: the statement (a trailing ``;`` is allowed).
        session_props: the session's ``SET`` values (``spark.sql.*`` settings, records
            per batch).
        reset: a reset strategy for every Kafka stream read (``earliest``, ``latest``,
            ``committed`` or a timestamp in ms), instead of each stream's own.

    Raises:
        ValidationError: not one SELECT, a syntax error, an unknown stream, table or
            column, a bad STREAMWINDOW, no stream read, a LIMIT that is not a whole
            number, a PATTERN the job planner refuses (at its line and column in
            ``text``); a Kafka stream to be read from ``committed`` offsets without a
            consumer group.
    """
    text = text.rstrip().removesuffix(";")
    lookup = Lookup(catalog)
    qt = QueryText(text, None, lookup.functions(default_database))
    policy.check_text(qt, text, "query", calls=False)  # as written
    blanked, clauses, pattern = extract_clauses(qt)
    blanked, travels = extract_time_travel(qt, blanked)
    statements = parse(qt, blanked, "query")
    if len(statements) != 1 or not isinstance(statements[0], (exp.Query, exp.Subquery)):
        raise qt.error("expected one 'select ...' (an insert runs as a streamjob: "
                       "CREATE STREAMJOB j AS (\"insert into t select ...\"))")
    select = statements[0]
    limit = _take_limit(qt, select)
    named: dict[tuple[str, str], int] = {}  # how often each name is read (time travel)
    for t in select.find_all(exp.Table):
        key = ((t.db or default_database).lower(), t.name.lower())
        named[key] = named.get(key, 0) + 1
    try:
        body = select_body(qt, select, clauses, pattern, lookup, default_database,
                           streams_needed=not travels)
    except ValidationError as exc:
        if exc.message.startswith("the query reads no stream"):
            exc.message = ("the query reads no stream; a SELECT in the shell shows the rows of "
                           "a stream as they arrive: name one in FROM (or read a lakehouse "
                           "table at a version: FROM t VERSION AS OF n)")
            exc.args = (exc.message,)
        raise
    props = jp.values({}, session_props)
    proctime = {w.view for w in body.windows if w.proctime}
    bases, derived_streams = expand_streams(lookup, body.references, proctime)
    check_window_stream_readers(body, (st for st, _, _ in derived_streams))
    sources = tuple(_source(st, view, view in proctime, reset) for st, view in bases)
    derived = tuple(Derived(st, view, sql, view in proctime) for st, view, sql in derived_streams)
    statics = static_tables(lookup, home, body.references)
    if travels:
        statics = resolve_time_travel(qt, travels, body.references, statics, named,
                                      default_database)
    from .checks import check_reads

    check_reads(home.policy, sources, statics)  # the admin's rules for everyone
    # Spark runs session window aggregations in append (or complete) mode only
    mode = "append" if body.sessions or not body.aggregate else "update"
    return PreviewPlan(body, limit, sources, tuple(statics), derived, props, mode,
                       tuple(lookup.called[k] for k in sorted(lookup.called)))


def _take_limit(qt: QueryText, select: exp.Expr) -> int:
    """Remove the top-level LIMIT from ``select``; returns its count (the default if none).

    Raises:
        ValidationError: a LIMIT that is not a whole number >= 0.
    """
    node = select.args.get("limit")
    if node is None:
        return DEFAULT_LIMIT
    value = node.args.get("expression") or node.this
    text = value.sql() if isinstance(value, exp.Expr) else str(value)
    if not text.isdigit():
        raise qt.error(f"LIMIT must be a whole number of rows, got '{text}'", qt.node_span(node))
    select.set("limit", None)
    return int(text)


def _source(stream, view: str, proctime: bool, reset: str | None) -> Source:
    """A source of the preview: the stream's connector spec, its reset strategy replaced
    by ``reset`` if given, no dead-letter target (malformed records are skipped) and only
    the stream's own consumer group (read by the ``committed`` strategy, never written)."""
    sp = cspec.source_spec(stream.name, stream.properties, stream.row_format)
    sp, group_id = stream_source(sp).preview(reset, stream.qualified_name)
    return Source(stream, view, sp, proctime, group_id)
