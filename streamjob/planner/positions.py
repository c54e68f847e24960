"""Hidden position arguments for user functions over a Kafka source (issue 31,
"Failures name the function"; the contract is :mod:`streamjob.udf.positions`).

A scalar Python function called in a select whose FROM reads exactly one Kafka source
stream (directly, not through a derived stream or a subquery) gets three arguments
after the user's: ``'<mark><topic>'``, ``<alias>.__sj_partition``,
``<alias>.__sj_offset``. The stream's reader adds those hidden columns for such a job
(:func:`streamjob.planner.bind.bind_job`), and the function's wrapper takes them off
again, so the function sees its own arguments only, and an exception names the failing
record: ``topic t partition 0 offset 137``.

Calls are left alone where a row is not one record: a select with GROUP BY, DISTINCT,
an aggregate or a window function (the hidden columns would change what it groups or
be refused as not grouped), and a select reading several Kafka streams (a join: which
record failed is not one position) or none. Their errors name the micro-batch's offset
ranges, as before. Argument counts and types are checked before this rewrite, so
``check`` and EXPLAIN's errors are about the user's arguments only.
"""

from __future__ import annotations

from sqlglot import exp

from ..udf.positions import MARK, OFFSET_COLUMN, PARTITION_COLUMN

__all__ = ["add_positions", "position_topics"]

#: Nodes that make a select's rows other than one per record.
_GROUPING = (exp.AggFunc, exp.Window)


def _own(select: exp.Select, node: exp.Expr) -> bool:
    return node.find_ancestor(exp.Select) is select


def _tables(select: exp.Select) -> list[exp.Table]:
    """The tables ``select`` reads in its own FROM and JOINs (not in subqueries)."""
    found = []
    first = select.args.get("from_", select.args.get("from"))  # sqlglot's key by version
    sources = [first] + list(select.args.get("joins") or [])
    for s in sources:
        if s is not None and isinstance(s.this, exp.Table):
            found.append(s.this)
    return found


def add_positions(tree: exp.Expr, topics: dict[str, str], functions: set[str]) -> int:
    """Give each call of ``functions`` (lower-case names of scalar Python functions) in
    ``tree`` (a planned select, its tables already replaced by views) the hidden
    position arguments, where its select reads one Kafka source with positions:
    ``topics`` maps such a source's view name (lower case) to its topic. Returns how
    many calls were given them."""
    if not topics or not functions:
        return 0
    done = 0
    for select in list(tree.find_all(exp.Select)):
        if select.args.get("group") or select.args.get("distinct") or any(
                _own(select, n) for n in select.find_all(*_GROUPING)):
            continue
        kafka = [t for t in _tables(select) if t.name.lower() in topics]
        if len(kafka) != 1:
            continue
        table = kafka[0]
        alias = table.alias_or_name
        for call in list(select.find_all(exp.Anonymous)):
            if call.name.lower() not in functions or not _own(select, call):
                continue
            call.append("expressions", exp.Literal.string(MARK + topics[table.name.lower()]))
            call.append("expressions", exp.column(PARTITION_COLUMN, table=alias, quoted=True))
            call.append("expressions", exp.column(OFFSET_COLUMN, table=alias, quoted=True))
            done += 1
    return done


def position_topics(refs, lookup) -> dict[str, str]:
    """``{view name: topic}`` of the source streams among ``refs`` (the planner's
    :class:`~streamjob.planner.query.Reference` s) whose reader can add each record's
    position (a Kafka stream that is not tolerant: its ``position_topic``)."""
    from ..connectors import spec as cspec
    from ..connectors.sources import stream_source

    topics = {}
    for ref in refs:
        if ref.kind != "stream":
            continue
        st = lookup.stream(ref.database, ref.name)
        if st is None or st.is_derived:
            continue
        try:
            topic = stream_source(cspec.source_spec(st.name, st.properties,
                                                    st.row_format)).position_topic
        except Exception:  # noqa: BLE001 - an invalid stream is refused where it is planned
            continue
        if topic is not None:
            topics[ref.view.lower()] = topic
    return topics
