"""EXPLAIN [EXTENDED] [STREAMJOB] j | EXPLAIN [EXTENDED] INSERT INTO ... (issue 18).

Like ksqlDB's ``EXPLAIN <query id | statement>`` and Flink's ``EXPLAIN PLAN FOR``, it
answers for a job that exists (by name) or for a query that is not a job yet (a bare
INSERT, planned as its implicit job would be: the session's SET values, default job
properties). The plain form reads only the catalog, the planner's plan
(:func:`streamjob.planner.plan.plan_job`) and the job's latest checkpoint: it never
starts Spark. ``EXTENDED`` (Spark's ``EXPLAIN EXTENDED``) adds Spark's physical plan
(:func:`streamjob.spark.explain.physical_plan`), starting this process's Spark if it
has none; a dry run (``streamjob check``) leaves it out. Nothing is registered, started
or written.

``EXPLAIN ALTER STREAMJOB j AS (...)`` and ``EXPLAIN CREATE OR REPLACE STREAMJOB``
(issue 30, docs/upgrades.md) answer the upgrade's change class and its reasons, as the
statement itself would classify it, without changing anything
(:meth:`~streamjob.executor.upgrade.UpgradeStatements._explain_change`).
"""

from __future__ import annotations

from typing import Any

from .. import properties as jp
from ..grammar import statements as st
from .result import Result


class ExplainStatements:
    """EXPLAIN of :class:`~streamjob.executor.Executor`."""

    def _do_Explain(self, s: st.Explain) -> Result:
        from ..planner.explain import explain
        from .insert import implicit_job_name

        if s.change is not None:  # EXPLAIN ALTER STREAMJOB j AS (...) (issue 30)
            return self._explain_change(s.change)
        if s.name is not None:
            db, name = self._names(s.name, "job")
            job = self.catalog.require_job(db, name)
            query, props, session, position = (job.query, job.properties,
                                               job.session_properties, None)
        else:
            tdb, tname = self._names(s.target, "table")
            db, name = self._names(st.QualifiedName(implicit_job_name(tdb, tname, s.query)), "job")
            job = self.catalog.get_job(db, name)  # the INSERT's job, if submitted before
            query, props, session, position = s.query, {}, dict(self.session_props), \
                s.query_position
            if job is not None:
                query, props, session = job.query, job.properties, job.session_properties
        plan = self._plan(db, name, query, props, session, position)
        latest = self._latest(job) if job is not None else None
        data = explain(plan, job, latest, jp.effective(props, session))
        if s.extended and not self.dry_run:  # check (--offline too) runs no Spark query
            data["physical_plan"] = self._physical_plan(plan)
        return explain_result(data)

    def _physical_plan(self, plan) -> str:
        from ..planner.bind import bind_job
        from ..spark.explain import physical_plan

        if self.spark is not None:
            session = self.spark()
        else:  # -e, a script: EXPLAIN EXTENDED asked for Spark
            from ..spark.session import spark_session

            session = spark_session(self.home)
        return physical_plan(session, bind_job(plan, read=False))


def _list(value) -> str | None:
    if not value:
        return None
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def explain_result(data: dict[str, Any]) -> Result:
    """The tables of an ``explain`` shape (``data``), one section per part; the physical
    plan as text under its title."""
    ms = lambda v: None if v is None else f"{v} ms"  # noqa: E731
    job = [("job", data["job"] + ("" if data["exists"] else " (not created yet)")),
           ("status", data["status"]), ("output mode", data["output_mode"]),
           ("guarantee", data["guarantee"]), ("why", data["guarantee_reason"])]
    sink = data["sink"]
    cadence = [("trigger interval", ms(data["trigger_interval_ms"]) + (
                    " (streamsql.use.eventmode: back to back)" if data["event_mode"] else "")),
               ("checkpoint interval", ms(data["checkpoint_interval_ms"])
                or "none (morphling.job.enable.checkpoint=false)"),
               ("checkpoints retained", data["checkpoints_retained"]),
               ("checkpoint backend", data["checkpoint_backend"]),
               ("max records per batch", data["max_records_per_batch"] or "no cap")]
    sections = [
        Result(columns=("field", "value"), rows=job, title="streamjob"),
        *[_source(src) for src in data["sources"]],
    ]
    if data["derived_streams"]:
        sections.append(Result(columns=("stream", "query"), title="derived streams",
                               rows=[(d["stream"], d["query"]) for d in data["derived_streams"]]))
    if data["static_tables"]:
        sections.append(Result(columns=("table", "connector", "read"), title="static tables",
                               rows=[tuple(t.values()) for t in data["static_tables"]]))
    sections += [
        Result(columns=("field", "value"), title="sink", rows=[
            ("table", sink["table"]), ("connector", sink["connector"]),
            ("location", sink["location"]), ("write", sink["write"]),
            ("guarantee", sink["guarantee"]), ("rows visible", sink["rows_visible"])]),
        Result(columns=("operator", "keys", "watermark", "retention"), title="state",
               rows=[(o["operator"], _list(o["keys"]), _list(o["watermark"]), o["retention"])
                     for o in data["state"]]),
        Result(columns=("field", "value"), rows=cadence, title="cadence"),
    ]
    if data["physical_plan"] is not None:
        sections.append(Result(title="physical plan (Spark)", text=data["physical_plan"]))
    return Result(title=f"explain {data['job']}", data=data, sections=sections)


def _source(src: dict[str, Any]) -> Result:
    """One source as field/value rows (the keys that apply to its connector)."""
    rows = [("connector", src["connector"]), ("location", src["location"]),
            ("format", src["format"]), ("reset", src["reset"]),
            ("starts from", src["starts_from"]),
            ("starting offsets", _offsets(src["starting_offsets"])),
            ("partitions", _list(src["partitions"])),
            ("consumer group", src["consumer_group"]),
            ("watermark", f"{src['watermark_column']} - {src['watermark_delay']}"
             if src["watermark_column"] else None),
            ("malformed records", src["malformed_policy"])]
    return Result(columns=("field", "value"), title=f"source {src['stream']}",
                  rows=[(k, v) for k, v in rows if v is not None])


def _offsets(offsets) -> str | None:
    if not offsets:
        return None
    return ", ".join(f"{p}: {o}" for p, o in offsets.items())
