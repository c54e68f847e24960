"""LIST/SHOW STREAMJOBS, DESCRIBE STREAMJOB, SHOW CHECKPOINTS, DESCRIBE stream/table.

Secrets (passwords, SASL settings, a password inside a URL) are masked (DESIGN §3).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from .. import properties as jp
from .. import shapes
from ..status import live_now
from ..exceptions import ObjectNotFoundError, StreamJobError
from ..grammar import statements as st
from .objects import sink_kind, source_kind
from .result import Result
from streamjob.catalog.records import RunStatus

log = logging.getLogger(__name__)

RUNS_SHOWN = 10


def _ts(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") if value else None


class DescribeStatements:
    """Read-only statements of :class:`~streamjob.executor.Executor`."""

    def _do_ShowStreamJobs(self, s: st.ShowStreamJobs) -> Result:
        rows, data = [], []
        now, live_ids = live_now(self.catalog)
        for job in self.catalog.list_jobs():
            props = jp.values(job.properties, job.session_properties)
            last = self._latest(job)
            data.append(shapes.job_state(job, now, live_ids, last, jp.guarantee(props)))
            rows.append((
                job.qualified_name, job.status, job.desired_state, jp.guarantee(props),
                last.checkpoint_id if last else None, _ts(last.ended_at) if last else None,
                last.input_rows if last else None, job.attempts, job.last_error, job.query,
            ))
        return Result(columns=("job", "status", "desired", "guarantee", "last checkpoint",
                               "checkpoint time", "rows in", "failures", "last error", "sql"),
                      rows=rows, title="streamjobs", data=data)

    def _latest(self, job):
        """The job's latest checkpoint from its backend; None if it has none or its
        backend cannot be reached now (LIST must not fail for one unreachable store)."""
        from ..checkpoint.backends import backend_for_job

        try:
            with backend_for_job(self.catalog, self.home, job, dry_run=self.dry_run) as backend:
                return backend.latest(job)
        except StreamJobError as exc:
            log.warning("job %s: %s", job.qualified_name, exc.message)
            return None

    def _do_ShowCheckpoints(self, s: st.ShowCheckpoints) -> Result:
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        return self._checkpoints(job, f"checkpoints of {db}.{name}")

    def _checkpoints(self, job, title: str) -> Result:
        """The job's retained checkpoints, read from its backend (``morphling.checkpoint.backend``;
        in a dry run from the scratch catalog: nothing external is contacted)."""
        from ..checkpoint.backends import backend_for_job

        with backend_for_job(self.catalog, self.home, job, dry_run=self.dry_run) as backend:
            checkpoints = backend.list(job)
        rows = [(c.checkpoint_id, c.status, _ts(c.started_at), _ts(c.ended_at), c.duration_ms,
                 c.input_rows, c.state_rows, c.source_offsets)
                for c in checkpoints]
        return Result(columns=("checkpoint", "status", "started", "ended", "duration ms",
                               "rows in", "state rows", "source offsets"), rows=rows, title=title,
                      data=[shapes.checkpoint_json(c) for c in checkpoints])

    def _do_DescribeStreamJob(self, s: st.DescribeStreamJob) -> Result:
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        eff = jp.effective(job.properties, job.session_properties)
        values = jp.values(job.properties, job.session_properties)
        try:
            plan = self._plan(db, name, job.query, job.properties, job.session_properties)
            mode, problem = plan.output_mode, None
        except StreamJobError as exc:
            plan, mode, problem = None, None, exc.message
        runs = self.catalog.list_runs(job.uid)
        unavailable = None
        try:
            checkpoints = self._checkpoints(job, "retained checkpoints")
        except StreamJobError as exc:  # an unreachable backend must not hide the rest
            unavailable = exc.message
            checkpoints = Result(columns=("checkpoint", "unavailable"), title="retained checkpoints",
                                 rows=[(None, unavailable)], data=[])
        failures = sum(1 for r in runs if r.status == RunStatus.FAILED)
        overview: list[tuple[str, Any]] = [
            ("name", job.qualified_name), ("status", job.status),
            ("desired state", job.desired_state), ("guarantee", jp.guarantee(values)),
            ("output mode", mode), ("query", job.query),
            ("checkpoint directory", self.home.checkpoint_dir(db, name)
             if values.checkpoint_enabled else "(temporary)"),
            ("created", _ts(job.created_at)), ("updated", _ts(job.updated_at)),
            ("runs", len(runs)), ("failed runs", failures),
            ("failures since last checkpoint", job.attempts), ("last error", job.last_error),
            ("expired checkpoints", job.expired_checkpoints),
        ]
        cadence = _cadence(values, plan)
        overview += cadence
        if problem:
            overview.append(("cannot run now", problem))
        if job.pending_switch:  # docs/upgrades.md, "A switch killed midway"
            sw = job.pending_switch
            overview.append(("pending switch", f"to query version {sw.get('version')} by "
                             f"{sw.get('host')} pid {sw.get('pid')} since {sw.get('at')}"
                             + ("; switched, a start over (its new checkpoint epoch) is "
                                "pending: START STREAMJOB or a server prepares it"
                                if sw.get("phase") == "start_over" else "")))
        props = [(k, jp.display(k, v.value), v.origin) for k, v in eff.items()]
        deps = [(kind, f"{d}.{n}", role) for kind, d, n, role in job.dependencies]
        malformed, missing = _malformed(job, plan), _missing_columns(job)
        # "run": the run's number over the job's life (counting from 1), which keeps
        # increasing; "attempt": 1 at each start or takeover, +1 per failover restart
        first = len(runs) - min(len(runs), RUNS_SHOWN) + 1
        run_rows = [(first + i, r.attempt, r.status, _ts(r.started_at), _ts(r.ended_at),
                     r.cause) for i, r in enumerate(runs[-RUNS_SHOWN:])]
        now, live_ids = live_now(self.catalog)
        latest = checkpoints.data[-1] if checkpoints.data else None
        sink_version = _sink_version(self.home, job, plan, latest)
        if sink_version is not None:
            overview.append(("sink table version", sink_version[1]))
        versions = self.catalog.list_job_versions(job.uid)  # issue 30: oldest first
        data = {
            **shapes.job_state(job, now, live_ids, latest,
                               jp.guarantee(values)),
            "uid": job.uid, "output_mode": mode,
            "checkpoint_directory": str(dict(overview)["checkpoint directory"]),
            "created_at": _ts(job.created_at), "updated_at": _ts(job.updated_at),
            "run_count": len(runs), "failed_runs": failures,
            "expired_checkpoints": job.expired_checkpoints,
            **{key: dict(cadence).get(label) for label, key in _CADENCE_KEYS.items()},
            "cannot_run_now": problem,
            "properties": [dict(zip(("property", "value", "origin"), p)) for p in props],
            "dependencies": [dict(zip(("kind", "name", "role"), d)) for d in deps],
            "runs": shapes.runs_json(runs), "checkpoints": checkpoints.data,
            "checkpoints_unavailable": unavailable,
            "malformed_records": [dict(zip(("stream", "policy", "records"), r))
                                  for r in malformed.rows],
            "missing_columns": [dict(zip(("stream", "column", "batches"), r))
                                for m in missing for r in m.rows],
            "versions": [shapes.version_json(v) for v in versions],
            "sink_table_version": sink_version[0] if sink_version else None,
        }
        return Result(title=f"streamjob {db}.{name}", data=data, sections=[
            Result(columns=("field", "value"), rows=overview, title="streamjob"),
            Result(columns=("property", "value", "origin"), rows=props, title="properties"),
            Result(columns=("kind", "name", "role"), rows=deps, title="dependencies"),
            Result(columns=("run", "attempt", "status", "started", "ended", "cause"),
                   rows=run_rows,
                   title=f"runs (last {RUNS_SHOWN})"),
            checkpoints,
            malformed,
            *missing,
            Result(columns=("version", "created", "by", "change", "query"),
                   rows=[(v.version, _ts(v.created_at), v.principal, v.change, v.query)
                         for v in versions], title="query versions"),
        ])

    def _do_Describe(self, s: st.Describe) -> Result:
        db, name = self._names(s.name, s.kind or "object")
        obj = None
        if s.kind in (None, "stream"):
            obj = self.catalog.get_stream(db, name)
        if obj is None and s.kind in (None, "table"):
            obj = self.catalog.get_table(db, name)
        if obj is None:
            what = s.kind or "stream or table"
            raise ObjectNotFoundError(f"{what} {db}.{name} does not exist")
        info: list[tuple[str, Any]] = [("name", obj.qualified_name), ("kind", obj.kind)]
        if obj.kind == "stream":
            info.append(("source", source_kind(obj)))
            if obj.is_derived:
                info.append(("query", obj.query))
        else:
            info += [("connector", sink_kind(obj)), ("location", obj.location),
                     ("partitioned by", ", ".join(obj.partitioned_by) or None)]
        if obj.row_format:
            info.append(("row format", ", ".join(
                f"{k}={v!r}" for k, v in obj.row_format.items() if k != "delimited" and v)))
        users = sorted({j.qualified_name for j in self.catalog.list_jobs()
                        for kind, d, n, _ in j.dependencies if (kind, d, n) == (obj.kind, db, name)})
        info.append(("used by", ", ".join(users) or None))
        fields = dict(info)
        data: dict[str, Any] = {obj.kind: obj.qualified_name, "kind": obj.kind}
        if obj.kind == "stream":
            data.update(source=fields["source"], query=fields.get("query"))
        else:
            data.update(connector=fields["connector"], location=obj.location,
                        partitioned_by=list(obj.partitioned_by))
        data.update(
            row_format={k: v for k, v in obj.row_format.items() if k != "delimited" and v}
            if obj.row_format else None,
            used_by=users,
            columns=[{"column": c["name"], "type": c["type"]} for c in obj.columns],
            properties=[{"property": k, "value": jp.mask(k, v)} for k, v in obj.properties.items()])
        return Result(title=f"{obj.kind} {db}.{name}", data=data, sections=[
            Result(columns=("column", "type"), title="columns",
                   rows=[(c["name"], c["type"]) for c in obj.columns]),
            Result(columns=("field", "value"), rows=info, title=obj.kind),
            Result(columns=("property", "value"), title="properties",
                   rows=[(k, jp.mask(k, v)) for k, v in obj.properties.items()]),
        ])


#: JSON keys of :func:`_cadence`'s rows.
_CADENCE_KEYS = {"output": "output", "checkpoints": "checkpointing",
                 "rows visible": "rows_visible"}


def _malformed(job, plan) -> Result:
    """Malformed records of each Kafka source (DESIGN §7: never dropped silently): the
    stream's ``"malformed.policy"`` and how many records it has set aside so far (counted
    at each checkpoint; ``fail`` stops the job instead, so its count stays 0)."""
    counts = dict(getattr(job, "malformed_counts", None) or {})
    policies = {}
    for src in (plan.sources if plan is not None else ()):
        policy = src.source.malformed_policy(
            src.dead_letter_table.qualified_name if src.dead_letter_table else None)
        if policy is not None:
            policies[src.stream.qualified_name] = policy
    rows = [(name, policies.get(name), counts.get(name, 0))
            for name in sorted(set(policies) | set(counts))]
    return Result(columns=("stream", "policy", "malformed records"), rows=rows,
                  title="malformed records")


def _missing_columns(job) -> list[Result]:
    """Declared columns that no record of a micro-batch carried (issue 13: a misspelt JSON
    key reads as NULL, so it is counted): one row per stream and column with the number
    of such batches; no section while none was counted."""
    counts = dict(getattr(job, "missing_columns", None) or {})
    rows = [(stream, column, n) for stream in sorted(counts)
            for column, n in sorted(counts[stream].items())]
    if not rows:
        return []
    return [Result(columns=("stream", "column", "batches without it"), rows=rows,
                   title="columns no record carried")]


def _cadence(props, plan) -> list[tuple[str, Any]]:
    """DESCRIBE's rows on when output happens (DESIGN §4, §6): the micro-batch trigger,
    the checkpoint interval, and when the sink's rows become visible (its
    :meth:`~streamjob.connectors.sinks.TableSink.visibility`; omitted when the job cannot
    be planned now)."""
    trigger = ("micro-batches back to back as data arrives (streamsql.use.eventmode)"
               if props.event_mode else
               f"a micro-batch as data arrives, at most every "
               f"{_ms(props.trigger_interval_ms)}")
    rows: list[tuple[str, Any]] = [("output", trigger)]
    if props.checkpoint_enabled:
        every = props.checkpoint_interval_ms
        rows.append(("checkpoints", (
            f"every {_ms(every)}: the micro-batch "
            f"completing after it; {props.checkpoints_retained} retained") if every else
            f"every micro-batch; {props.checkpoints_retained} retained"))
    if plan is not None:
        from ..connectors.sinks import table_sink

        sink = table_sink(plan.sink, plan.sink_spec, marker="", job=plan.qualified_name,
                          exactly_once=plan.guarantee == "exactly-once",
                          upsert=plan.output_mode == "update",
                          checkpointed=props.checkpoint_enabled)
        rows.append(("rows visible", sink.visibility()))
    return rows


def _ms(ms: int) -> str:
    """A duration in ms as people write it: ``500 ms``, ``1.5 s``, ``60 s``, ``10 min``."""
    if ms < 1000:
        return f"{ms} ms"
    if ms % 60_000 == 0 and ms > 60_000:
        return f"{ms // 60_000} min"
    return f"{ms / 1000:g} s"


def _sink_version(home, job, plan, latest: dict | None) -> tuple[int | None, str] | None:
    """``(version, words)``: the version of the job's lakehouse sink table whose commit
    carries the micro-batch of its last checkpoint (the app transaction of the job's
    marker key in the checkpoint directory's epoch, :mod:`streamjob.connectors.lakehouse`);
    None when the sink is no lakehouse table or the job cannot be planned now."""
    from ..connectors import lakehouse

    if plan is None or not lakehouse.is_lakehouse(plan.sink_spec):
        return None
    if latest is None:
        return None, "none yet (no checkpoint)"
    from ..checkpoint import identity
    from ..exceptions import StreamJobError

    batch = latest["checkpoint_id"]
    try:
        ident = identity.read(home.checkpoint_dir(job.database, job.name))
        key = identity.marker_key(job.uid, ident.epoch if ident else "")
        version = lakehouse.batch_version(plan.sink_spec, key, batch)
    except (StreamJobError, OSError) as exc:
        return None, f"unknown: {getattr(exc, 'message', None) or exc}"
    if version is None:
        return None, (f"none: no commit in the table's log carries batch {batch} (not "
                      "written, or older than the log's JSON commits)")
    word = "" if lakehouse.version_word(plan.sink_spec) == "version" else "snapshot "
    return version, f"{word}{version} (the commit of batch {batch}, the last checkpoint)"
