"""EXPLAIN's reading of a plan (issue 18): what a job reads, from which offsets, what it
writes with which guarantee and why, what state it keeps and on which cadences, as the
``explain`` JSON shape (docs/json.md). No Spark: it reads the :class:`~.plan.JobPlan`
(:func:`~.plan.plan_job`'s output), the job's effective properties and its latest
checkpoint. Spark's physical plan (``EXPLAIN EXTENDED``) is added by the executor.

The state is read from the planned Spark SQL (the job's select and those of the derived
streams beneath it) with sqlglot, as Spark's planner will see it: a GROUP BY or aggregate
is a streaming aggregation (Spark's ``StateStoreSave``), DISTINCT a deduplication, a join
of two streams a stream-stream join (state on both sides); a join with a static table
keeps none.
Secrets never appear: Kafka security settings are left out, URLs masked.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp, parse_one

from ..shapes import EXPLAIN_SOURCE_KEYS
from .sessions import CLOSE_COLUMN
from .window import PROCTIME_COLUMN


def explain(plan, job=None, latest=None, effective: dict | None = None) -> dict[str, Any]:
    """The ``explain`` shape of ``plan``.

    Args:
        plan: a :class:`~.plan.JobPlan`.
        job: the catalog's JobInfo when the job exists (None: a query not yet a job).
        latest: the job's latest checkpoint (CheckpointInfo) or None.
        effective: :func:`streamjob.properties.effective` of the job's properties (for
            the origin of the properties the guarantee follows from); None: all default.
    """
    props = plan.props
    offsets = dict(latest.source_offsets or {}) if latest is not None else {}
    return {
        "job": plan.qualified_name, "exists": job is not None,
        "status": str(job.status) if job is not None else None,
        "query": job.query if job is not None else None,
        "output_mode": plan.output_mode, "guarantee": str(plan.guarantee),
        "guarantee_reason": guarantee_reason(plan, effective or {}),
        "sources": [_source(s, props, offsets, latest) for s in plan.sources],
        "derived_streams": [{"stream": d.stream.qualified_name, "query": d.stream.query}
                            for d in plan.derived],
        "static_tables": [{"table": s.table.qualified_name, "connector": _static_connector(plan, s),
                           "read": "in full at each micro-batch (a stream-static join "
                                   "keeps no state)"} for s in plan.statics],
        "sink": _sink(plan),
        "state": state(plan),
        "trigger_interval_ms": props.trigger_ms, "event_mode": props.event_mode,
        "checkpoint_interval_ms": props.checkpoint_interval_ms if props.checkpoint_enabled else None,
        "checkpoints_retained": props.checkpoints_retained if props.checkpoint_enabled else None,
        "checkpoint_backend": props.checkpoint_backend if props.checkpoint_enabled else None,
        "max_records_per_batch": props.max_records_per_batch,
        "physical_plan": None,
    }


def _origin(effective: dict, name: str) -> str:
    e = effective.get(name)
    return e.origin if e is not None else "default"


def guarantee_reason(plan, effective: dict) -> str:
    """Why the job has its guarantee (DESIGN §6): the two properties it follows from,
    with their origin, and how the sink keeps it."""
    props = plan.props
    ck, fl = "morphling.job.enable.checkpoint", "morphling.result.auto.flush"
    if not props.checkpoint_enabled:
        return (f"{ck}=false ({_origin(effective, ck)}): a temporary checkpoint per attempt, "
                "so each start begins at the sources' reset strategy and a failure may lose "
                "or repeat rows")
    given = (f"{ck}=true ({_origin(effective, ck)}), "
             f"{fl}={'true' if props.auto_flush else 'false'} ({_origin(effective, fl)})")
    sink = _table_sink(plan).describe()
    if props.auto_flush:
        return (f"{given}: rows are written as each micro-batch produces them, without "
                "commit markers; a micro-batch replayed after a failure may write its rows "
                "again" + (" (the upsert on the primary key makes a repeat harmless)"
                           if sink["upsert"] else ""))
    return f"{given}: {sink['commit']}"


def _table_sink(plan):
    """The job's :class:`~streamjob.connectors.sinks.TableSink` (nothing contacted)."""
    from ..connectors.sinks import table_sink

    return table_sink(plan.sink, plan.sink_spec, marker="", job=plan.qualified_name,
                      exactly_once=plan.guarantee == "exactly-once",
                      upsert=plan.output_mode == "update",
                      checkpointed=plan.props.checkpoint_enabled)


def _static_connector(plan, static) -> str:
    """The connector of a static table, as its sink would name it (``sql``, ``files
    (<format>)``)."""
    from ..connectors.sinks import table_sink

    return table_sink(static.table, static.spec, marker="", job=plan.qualified_name,
                      exactly_once=False).describe()["connector"]


def _watermark(src, props) -> tuple[str | None, str | None]:
    """``(column, delay)`` of a source's watermark: its event time, or the processing
    time column of a STREAMWINDOW without one; ``(None, None)`` without."""
    p = {k.lower(): v for k, v in src.stream.properties.items()}
    if p.get("watermark.column") and p.get("watermark.delay"):
        return p["watermark.column"], props.watermark_delay(p["watermark.delay"])
    if src.proctime:
        return f"{PROCTIME_COLUMN} (processing time)", "0 seconds"
    return None, None


def _source(src, props, offsets: dict, latest) -> dict[str, Any]:
    """One source stream: where it reads, and from which offsets the next start reads."""
    column, delay = _watermark(src, props)
    out = dict.fromkeys(EXPLAIN_SOURCE_KEYS)
    out.update(stream=src.stream.qualified_name, watermark_column=column, watermark_delay=delay)
    out.update(src.source.describe(
        group_id=src.group_id, checkpointed=props.checkpoint_enabled, offsets=offsets,
        dead_letter_table=src.dead_letter_table.qualified_name if src.dead_letter_table else None,
        checkpoint_id=latest.checkpoint_id if latest is not None else None))
    return out


def _sink(plan) -> dict[str, Any]:
    """The sink: its table, connector, how rows are written, the guarantee and when rows
    become visible (:meth:`~streamjob.connectors.sinks.TableSink.visibility`)."""
    sink = _table_sink(plan)
    described = sink.describe()
    return {"table": plan.sink.qualified_name, "connector": described["connector"],
            "location": described["location"], "write": described["write"],
            "guarantee": str(plan.guarantee), "rows_visible": sink.visibility()}


def state(plan) -> list[dict[str, Any]]:
    """The stateful operators of the planned query (module docstring), each with its
    keys (Spark SQL over the stream names), the watermark that bounds it and how long
    its state is kept; ``[]`` for a stateless job."""
    names = {s.view: s.stream.qualified_name for s in (*plan.sources, *plan.derived)}
    streams = set(names)
    names.update({s.view: s.table.qualified_name for s in plan.statics})
    marks = [f"{s.stream.qualified_name}: {c} - {d}" for s in plan.sources
             for c, d in [_watermark(s, plan.props)] if c]
    trees = [parse_one(d.select_sql, read="spark") for d in plan.derived]  # joins of streams
    ops: list[dict[str, Any]] = [_predicate_sessions(w, names, marks)
                                 for w in plan.query.windows if w.kind == "predicate"]
    if plan.query.pattern is not None:
        ops.append(_pattern_state(plan.query.pattern, names, marks))
    else:
        trees.append(parse_one(plan.query.select_sql, read="spark"))
    for select in (s for tree in trees for s in tree.find_all(exp.Select)):
        if not any(t.name in streams for t in select.find_all(exp.Table)):
            continue  # a subquery over static tables only: a batch query, no state
        ops += _joins(select, names, streams, marks)
        group = select.args.get("group")
        aggregates = any(True for a in select.find_all(exp.AggFunc)
                         if a.find_ancestor(exp.Select) is select)
        if group is not None or aggregates:
            keys = [_sql(k, names) for k in (group.expressions if group is not None else [])]
            closes = any(CLOSE_COLUMN in k for k in keys)  # a predicate session's close time
            windowed = closes or any(k.lower().startswith(("window(", "session_window("))
                                     for k in keys)
            what = ("session" if closes or any(k.lower().startswith("session_window(")
                                               for k in keys) else "window")
            ops.append({"operator": "streaming aggregation", "keys": keys,
                        "watermark": marks if windowed and marks else None,
                        "retention": _aggregate_retention(plan, windowed and bool(marks), what)})
        elif select.args.get("distinct"):
            ops.append({"operator": "deduplication (DISTINCT)",
                        "keys": [_sql(e, names) for e in select.expressions],
                        "watermark": None,
                        "retention": "every distinct row, without bound (no watermark ends "
                                     "one): the state grows with the number of distinct rows"})
    return ops


def _pattern_state(cep, names: dict, marks: list) -> dict[str, Any]:
    """The state of a PATTERN (:mod:`streamjob.spark.cep`): its partial matches and
    buffered events, per key."""
    stream = names.get(cep.view, f"{cep.database}.{cep.stream}")
    keys = [f"{stream}.{k}" for k in cep.key]
    one = ("" if keys else "; no equality between variables (e2.c = e1.c) keys it, so it "
           "runs on one key: one task holds every partial match")
    if cep.proctime:
        retention = (f"per key, events timed by their micro-batch and matched by the next "
                     f"one, partial matches until {cep.within} passes in processing time")
    else:
        retention = (f"per key, events buffered until the watermark passes them (then matched "
                     f"in event-time order), partial matches until the watermark passes their "
                     f"first event + {cep.within}; later events are dropped")
    return {"operator": "CEP pattern (applyInPandasWithState)", "keys": keys,
            "watermark": marks or None, "retention": retention + one}


def _predicate_sessions(w, names: dict, marks: list) -> dict[str, Any]:
    """The per-key operator of a predicate SESSIONWINDOW (:mod:`.sessions`)."""
    spec = w.predicate
    if spec.timeout_ms is not None:
        unended = f"a session never ended is closed {spec.timeout_text} after its last event"
    else:
        unended = ("a session never ended, and its events, stay in state until its END "
                   "(no TIMEOUT): the state grows with unended sessions")
    when = ("a micro-batch after it arrives (processing time)" if w.proctime
            else "the watermark passes it")
    return {"operator": f"predicate sessions: SESSIONWINDOW({spec.describe()})",
            "keys": [f"{names.get(w.view, w.stream)}.{k}" for k in spec.keys],
            "watermark": marks or None,
            "retention": (f"per key, each event until {when}, then the open session's events "
                          f"until it ends; {unended}")}


def _aggregate_retention(plan, windowed: bool, what: str = "window") -> str:
    if windowed and any(s.proctime for s in plan.sources):
        return (f"each {what} until a micro-batch after its end (processing time), then "
                "appended once and dropped")
    if windowed:
        return (f"each {what} until the watermark (the latest event time minus the delay) "
                "passes its end, then appended once and dropped; later events for it are "
                "dropped")
    return ("every key's aggregate, without bound (no watermark ends a key): the state "
            "grows with the number of distinct keys"
            + ("; each micro-batch upserts the keys it changed (output mode update)"
               if plan.output_mode == "update" else ""))


def _joins(select: exp.Select, names: dict, streams: set, marks: list) -> list[dict]:
    """The stream-stream joins of one select (a join with a static table keeps no state)."""
    out = []
    base = select.args.get("from_") or select.args.get("from")  # sqlglot renamed it
    left = [t.name for t in base.find_all(exp.Table)] if base is not None else []
    for join in select.args.get("joins") or []:
        right = [t.name for t in join.find_all(exp.Table)]
        if not (any(v in streams for v in left) and any(v in streams for v in right)):
            left += right
            continue
        on = join.args.get("on")
        keys = [f"{_sql(eq.left, names)} = {_sql(eq.right, names)}"
                for eq in (on.find_all(exp.EQ) if on is not None else ())]
        side = f"{join.side.lower()} " if join.side else ""
        out.append({"operator": f"stream-stream {side}join",
                    "keys": keys, "watermark": marks or None,
                    "retention": ("each side's rows until the watermarks pass the time bounds "
                                  "of the ON condition (without a time bound: kept without "
                                  "bound)" if marks else
                                  "each side's rows, without bound (no stream declares a "
                                  "watermark)")})
        left += right
    return out


def _sql(node, names: dict) -> str:
    """``node`` as Spark SQL, with the job's temporary view names read as stream names."""
    text = re.sub(r"`(window|session_window)`\(", r"\1(", node.sql(dialect="spark"),
                  flags=re.IGNORECASE)
    text = re.sub(r"^(window|session_window)\(", lambda m: m.group(1).lower() + "(", text,
                  flags=re.IGNORECASE)
    for view, name in sorted(names.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(view, name)
    return text

