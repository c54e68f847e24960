"""Shadow runs (issue 30 point 4; docs/upgrades.md "Shadow runs"): ``ALTER STREAMJOB j AS
(...) WITH SHADOW [JOBPROPERTIES(...)]``, ``SHOW SHADOW``, ``PROMOTE SHADOW`` and
``DISCARD SHADOW FOR STREAMJOB j``.

The shadow itself runs in :mod:`.shadow_run` (the new query from the live job's latest
checkpoint into scratch sinks, the old query replayed over the same input range, the two
outputs compared by :mod:`.shadow_diff`). It runs where this statement runs with a
Spark session: a server (the HTTP API, ``--server URL``) or ``streamjob run``'s shell,
beside the live job, as one more Spark query, without a lease of its own.

Roles (DESIGN §9, docs/security.md): a shadow, PROMOTE and DISCARD need the rights of
ALTER STREAMJOB (an operator or the admin; a viewer may SHOW SHADOW). The new query is
planned and checked as CREATE STREAMJOB's is (the admin's policy, Spark's analysis).
"""

from __future__ import annotations

import datetime as _dt

from .. import crashpoint
from ..checkpoint import fingerprint
from ..exceptions import AccessDeniedError, JobError, StreamJobError
from ..grammar import statements as st
from . import shadow_run
from .result import Result
from streamjob.catalog.records import DesiredState, Role


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


class ShadowStatements:
    """Shadow-run statements of :class:`~streamjob.executor.Executor` (module docstring)."""

    def _may_shadow(self, what: str) -> None:
        """Raise AccessDeniedError for a viewer (DESIGN §9: ALTER's rights)."""
        if getattr(self, "role", Role.ADMIN) is Role.VIEWER:
            raise AccessDeniedError(f"a viewer may only SHOW SHADOW: {what} needs an operator "
                                    "(the rights of ALTER STREAMJOB)")

    def _shadow_plans(self, job, query: str, position=None):
        """``(old plan, new plan, ChangeClass)`` of replacing ``job``'s query by ``query``:
        planned, checked and classified as ALTER STREAMJOB ... AS does
        (:meth:`~streamjob.executor.upgrade.UpgradeStatements._plan_upgrade`,
        docs/upgrades.md): the admin's policy, Spark's analysis of the new query, the
        checkpoints against the current query.

        Raises:
            ValidationError / PropertyError / SqlPolicyError / AccessDeniedError: the new
                query is refused.
            ChangedLogic: the checkpoints were not taken by the current query.
        """
        return self._plan_upgrade(job, query, dict(job.properties), position)

    def _require_shadow(self, job) -> tuple[str, dict]:
        """``(folder, record)`` of ``job``'s shadow. A dry run (``streamjob check``) reads
        no shadow: the script's own ALTER ... WITH SHADOW ran no shadow, so a dry run
        gets an empty compared record instead.

        Raises:
            JobError: the job has no shadow (not in a dry run).
        """
        location = shadow_run.folder(self.home, job.database, job.name)
        if self.dry_run:
            return location, {"status": "compared", "job": job.qualified_name,
                              "query": job.query, "comparison": {}}
        record = shadow_run.read_record(location)
        if record is None or record.get("job_uid") not in (None, job.uid):
            raise JobError(f"streamjob {job.qualified_name} has no shadow: ALTER STREAMJOB "
                           f"{job.name} AS (...) WITH SHADOW runs one")
        return location, record

    def _do_AlterShadow(self, s: st.AlterShadow) -> Result:
        self._may_shadow("ALTER STREAMJOB ... WITH SHADOW")
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        lim = shadow_run.limits(st.props(s.properties))
        location = shadow_run.folder(self.home, db, name)
        existing = None if self.dry_run else shadow_run.read_record(location)
        if existing is not None and existing.get("status") in ("running", "compared"):
            raise JobError(f"streamjob {db}.{name} has a shadow already (of {existing.get('at')}"
                           f" UTC): PROMOTE SHADOW or DISCARD SHADOW FOR STREAMJOB {name} first")
        old, new, change = self._shadow_plans(job, s.query, s.query_position)
        kind = change.kind.value
        if kind == "incompatible":
            raise JobError(f"the new query of {db}.{name} cannot keep the job's state "
                           f"({'; '.join(change.reasons)}), so a shadow cannot run from its "
                           "checkpoint; ALTER it FROM EARLIEST | TIMESTAMP instead")
        if not old.props.checkpoint_enabled:
            raise JobError(f"streamjob {db}.{name} has morphling.job.enable.checkpoint=false: "
                           "a shadow starts from the job's latest checkpoint")
        before = [src.stream.qualified_name for src in old.sources]
        after = [src.stream.qualified_name for src in new.sources]
        if before != after:
            raise JobError(f"the new query reads {', '.join(after)} where the job reads "
                           f"{', '.join(before)}: a shadow compares two queries over the same "
                           "input, so both must read the same streams")
        from ..planner import checks

        for copy in shadow_run.scratch_copies(new, old, name):  # a kind without: refused
            # the copies reach what a declaration of them would: the admin's policy decides
            checks.check_scratch(self.home.policy, f"table {new.sink.qualified_name} (the "
                                 f"shadow's scratch {copy.name})", copy.reach(), self.confined)
        if self.dry_run:
            return Result(f"a shadow of streamjob {db}.{name} can run")
        spark = self.spark() if self.spark is not None else None
        if spark is None:
            raise JobError("a shadow runs beside the job, in a process with Spark: send the "
                           "statement to the server (--server URL) or run it in `streamjob "
                           "run`'s shell")
        record = {"job_uid": job.uid, "job": f"{db}.{name}", "query": s.query,
                  "old_query": job.query, "properties": dict(st.props(s.properties)),
                  "status": "running", "at": _now(), "by": getattr(self, "principal", None),
                  "change": change.as_json()}
        shadow_run.write_record(location, record)
        try:
            report = shadow_run.run_shadow(spark, self.home, self.catalog, job, old, new, lim,
                                           location, state="kept")
        except Exception as exc:
            record.update(status="failed", error=str(exc))
            shadow_run.write_record(location, record)
            raise
        record.update(status="compared", ended=_now(), **report)
        shadow_run.write_record(location, record)
        return Result(f"shadow of streamjob {db}.{name} compared: " + _summary(record),
                      object=f"{db}.{name}", data=record)

    def _do_ShowShadow(self, s: st.ShowShadow) -> Result:
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        _location, record = self._require_shadow(job)
        cmp = record.get("comparison") or {}
        rows = [(what, (cmp.get(key) or {}).get("count"),
                 len((cmp.get(key) or {}).get("samples") or []))
                for what, key in (("only in the old query's output", "only_old"),
                                  ("only in the new query's output", "only_new"),
                                  ("changed values", "changed"))]
        rows.append(("same", cmp.get("same"), 0))
        title = (f"shadow of {db}.{name} ({record.get('status')}; batches "
                 f"{_batches(record)}; {_keyed(cmp)})")
        return Result(columns=("difference", "rows", "samples"), rows=rows, title=title,
                      data=record)

    def _do_DiscardShadow(self, s: st.DiscardShadow) -> Result:
        self._may_shadow("DISCARD SHADOW")
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        location, record = self._require_shadow(job)
        if self.dry_run:
            return Result(f"the shadow of streamjob {db}.{name} can be discarded")
        dropped = self._discard_shadow(location, record)
        return Result(f"shadow of streamjob {db}.{name} discarded"
                      + (f"; scratch {', '.join(dropped)} dropped" if dropped else ""),
                      object=f"{db}.{name}")

    def _discard_shadow(self, location: str, record: dict) -> list[str]:
        """Drop a shadow's scratch copies and its folder; returns the copies dropped
        (their names: ``table t__shadow_j``, ``topic ...``, ``directory ...``)."""
        dropped = shadow_run.drop_scratch(shadow_run.recorded_copies(self.catalog, record))
        shadow_run.cleanup(location, self.home.checkpoint_root)
        return dropped

    def _drop_shadow(self, job) -> None:
        """DROP STREAMJOB: discard the job's shadow, if it has one."""
        location = shadow_run.folder(self.home, job.database, job.name)
        record = shadow_run.read_record(location)
        if record is not None and record.get("job_uid") in (None, job.uid):
            self._discard_shadow(location, record)

    def _do_PromoteShadow(self, s: st.PromoteShadow) -> Result:
        self._may_shadow("PROMOTE SHADOW")
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        location, record = self._require_shadow(job)
        if record.get("status") != "compared":
            raise JobError(f"the shadow of streamjob {db}.{name} is {record.get('status')}: "
                           "only a compared shadow can be promoted (DISCARD it)")
        done = job.query == record["query"]  # a PROMOTE killed after its switch: finish it
        if not done:
            _old, new, change = self._shadow_plans(job, record["query"])
        if self.dry_run:
            return Result(f"the shadow of streamjob {db}.{name} can be promoted")
        running = self._is_running(job)
        if done:
            switch = {"checkpoint": None, "source_offsets": None,
                      "version": len(self.catalog.list_job_versions(job.uid))}
        else:
            if running:  # as ALTER's: a graceful stop, with the pending switch recorded
                self._stop_for_upgrade(job)
                crashpoint.reached("promote.stopped")
            try:
                switch = self._switch_query(job, record["query"], new, change,
                                            run_again=running)
            except StreamJobError as exc:  # before the switch: the old query runs on
                if running:
                    self._restart_after_failed_switch(s, exc, job.uid)
                raise
            if running:
                crashpoint.reached("promote.switched")
        started = ""
        if running and not done:  # a finished switch's job runs where it is hosted
            started = self._do_StartStreamJob(st.StartStreamJob(name=s.name)).message or ""
        dropped = self._discard_shadow(location, record)
        return Result(f"streamjob {db}.{name} now runs the shadow's query"
                      + (f" from checkpoint {switch.get('checkpoint')}" if not done else "")
                      + (f" ({started})" if started else "")
                      + (f"; scratch {', '.join(dropped)} dropped" if dropped else ""),
                      object=f"{db}.{name}", data={"job": f"{db}.{name}", **switch,
                                                    "dropped": dropped})

    def _switch_query(self, job, query: str, plan, change, run_again: bool = False) -> dict:
        """Make ``query`` (planned as ``plan``, classified as ``change``) the stopped
        ``job``'s query from its last checkpoint, as ALTER STREAMJOB ... AS does
        (docs/upgrades.md): the new fingerprint accepted beside the stored one
        (:func:`~streamjob.checkpoint.fingerprint.plan_change`), then, in one catalog
        transaction, the query, dependencies and next version (recording who promoted
        it), the pending switch cleared and, with ``run_again``, the desired state
        RUNNING. A PROMOTE killed before that transaction leaves the old query with its
        pending switch, which the next job host resumes (the old query runs on); one
        killed after it leaves the new query wishing to run; PROMOTE again finishes it
        (the shadow's record stays until the end). Returns ``{"checkpoint": id,
        "source_offsets": {...}, "version": n}`` of the switch point.

        Raises:
            ObjectNotFoundError: the job was dropped meanwhile.
        """
        from ..checkpoint.backends import backend_for_plan

        if plan.props.checkpoint_enabled:
            fingerprint.plan_change(self.home.checkpoint_dir(job.database, job.name),
                                    fingerprint.of_plan(plan))
        _job, version = self.catalog.replace_job_query(
            job.uid, query, dict(job.properties), plan.dependencies, principal=self.principal,
            change=change.kind.value,
            desired_state=DesiredState.RUNNING if run_again else None)
        with backend_for_plan(self.catalog, self.home, plan) as backend:
            latest = backend.latest(job)
        return {"checkpoint": latest.checkpoint_id if latest else None,
                "source_offsets": latest.source_offsets if latest else None,
                "version": version}

def _batches(record: dict) -> str:
    b = record.get("batches")
    return f"{b[0]}-{b[1]}" if b else "none"


def _keyed(cmp: dict) -> str:
    return (f"keyed by {', '.join(cmp.get('key') or [])}" if cmp.get("keyed")
            else "compared as multisets")


def _summary(record: dict) -> str:
    cmp = record.get("comparison") or {}

    def n(key: str) -> int:
        return (cmp.get(key) or {}).get("count", 0)

    return (f"batches {_batches(record)} from checkpoint {record.get('checkpoint')} "
            f"({record.get('run', {}).get('batches_with_input', 0)} with input); old "
            f"{cmp.get('old_rows', 0)} rows, new {cmp.get('new_rows', 0)}; "
            f"{n('only_old')} only in old, {n('only_new')} only in new, {n('changed')} "
            f"changed ({_keyed(cmp)}); SHOW SHADOW FOR STREAMJOB {record['job']} shows them")
