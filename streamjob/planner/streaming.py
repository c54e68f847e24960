"""What Spark's streaming analysis refuses at START, refused at ``check`` and CREATE
STREAMJOB instead, at its line and column, with what to write (issue 13 point 5).

Spark checks a streaming query only when it starts
(``UnsupportedOperationChecker``); a job that passed ``check`` then failed at START.
These rules repeat Spark 4's checks for the forms users write:

* an aggregate with DISTINCT (``count(DISTINCT x)``): "Distinct aggregations are not
  supported on streaming DataFrames/Datasets" -> ``approx_count_distinct(x)``;
* a window function with OVER (``row_number() OVER (...)``): "Non-time-based windows
  are not supported" -> a time window (``window(ts, '1 minute')``) in GROUP BY;
* an aggregate inside another aggregate (``sum(count(*))``): not allowed by Spark's
  analyzer -> a derived stream or a second job;
* ORDER BY: "Sorting is not supported on streaming DataFrames/Datasets, unless it is on
  aggregated DataFrame/Dataset in Complete output mode", a mode jobs never use -> order
  when reading the sink;
* an outer join of two streams without a watermark on both and a time range in ON:
  Spark cannot know when an unmatched row is final -> declare ``"watermark.column"`` and
  ``"watermark.delay"`` on both streams and bound their times in ON.

Queries are checked on the sqlglot tree before the views are renamed. Where a Spark
session is at hand (``check`` unless ``--offline``, ``run``, the shell), everything else
Spark refuses is found by Spark itself (:mod:`streamjob.spark.analysis`).
"""

from __future__ import annotations

from sqlglot import exp

from .lookup import Lookup
from .text import QueryText

__all__ = ["check_streaming"]

_AGGS = (exp.AggFunc,)


def check_streaming(qt: QueryText, select: exp.Expr, streams: dict[int, tuple[str, str]],
                    lookup: Lookup) -> None:
    """Refuse the forms above in a query reading at least one stream.

    Args:
        qt: the query text (positions).
        select: its sqlglot tree (table nodes not yet renamed).
        streams: ``id(table node) -> (db, name)`` of the table nodes that are streams.
        lookup: the catalog (stream watermarks).

    Raises:
        ValidationError: at the offending node, with Spark's reason and the rewrite.
    """
    for agg in select.find_all(*_AGGS):
        if isinstance(agg.this, exp.Distinct) or agg.args.get("distinct"):
            raise qt.error(
                f"{agg.sql(dialect='spark').split('(')[0].lower()}(DISTINCT ...) cannot run on a "
                "stream: Spark does not support distinct aggregations on streaming data; use "
                "approx_count_distinct(...) for counts", qt.node_span(agg))
        inner = next((a for a in agg.find_all(*_AGGS) if a is not agg), None)
        if inner is not None:
            raise qt.error(
                "an aggregate function inside another aggregate cannot be planned; aggregate "
                "in a derived stream or another job first", qt.node_span(inner))
    for ordered in select.find_all(exp.Order):
        if isinstance(ordered.parent, exp.Window):
            continue  # OVER (... ORDER BY ...): refused below with the window function
        raise qt.error(
            "ORDER BY cannot run on a stream: Spark sorts streaming data only in complete "
            "output mode, which a job never uses; order when reading the sink instead",
            _keyword_span(qt, ordered, "order"))
    for window in select.find_all(exp.Window):
        raise qt.error(
            "a window function with OVER (...) cannot run on a stream: Spark supports only "
            "time windows there; group by window(<timestamp>, '<length>') or STREAMWINDOW "
            "instead", qt.node_span(window))
    for join in select.find_all(exp.Join):
        side = (join.args.get("side") or "").upper()
        if side not in ("LEFT", "RIGHT", "FULL") or id(join.this) not in streams:
            continue
        left = _left_stream(join, streams)
        if left is None:
            continue
        right = streams[id(join.this)]
        marks = [lookup.event_time(*s) for s in (left, right)]
        if any(m is None for m in marks) or not _bounds_times(join, marks):
            raise qt.error(
                f"a {side} OUTER join of two streams ({left[0]}.{left[1]}, {right[0]}.{right[1]}) "
                "needs a watermark on both (\"watermark.column\" and \"watermark.delay\") and a "
                "time range between their event times in ON (e.g. r.ts BETWEEN l.ts AND l.ts + "
                "INTERVAL 1 HOUR): Spark cannot otherwise know when an unmatched row is final",
                qt.node_span(join.this))


def _keyword_span(qt: QueryText, node: exp.Expr, keyword: str):
    """The span of ``keyword`` written just before ``node`` (e.g. ORDER of ORDER BY),
    else the node's own span."""
    starts = [n._meta["start"] for n in node.walk()
              if getattr(n, "_meta", None) and "start" in n._meta]
    at = qt.text.lower().rfind(keyword, 0, min(starts)) if starts else -1
    return qt.span(at, at + len(keyword) - 1) if at >= 0 else qt.node_span(node)


def _left_stream(join: exp.Join, streams: dict[int, tuple[str, str]]):
    """The stream on the left of ``join`` (the FROM table of its SELECT), or None."""
    select = join.find_ancestor(exp.Select)
    from_ = (select.args.get("from_") or select.args.get("from")) if select is not None else None
    node = from_.this if from_ is not None else None
    return streams.get(id(node)) if node is not None else None


def _bounds_times(join: exp.Join, marks) -> bool:
    """True if ON compares both sides' event-time columns (a time range)."""
    on = join.args.get("on")
    if on is None:
        return False
    names = {c.name.lower() for c in on.find_all(exp.Column)}
    return all(m[0].lower() in names for m in marks) and any(
        True for _ in on.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between))
