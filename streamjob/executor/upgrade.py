"""Query upgrades (issue 30; docs/upgrades.md): ``ALTER STREAMJOB j AS ("insert ...")`` and
``CREATE OR REPLACE STREAMJOB j AS (...) [JOBPROPERTIES(...)]``.

Before anything changes, the new query is planned and checked as CREATE STREAMJOB checks
it (the admin's job properties, the planner, the SQL policy and Spark's analysis:
:meth:`~streamjob.executor.jobs.JobStatements._plan`), the job's checkpoints are checked
against its current query (an unplanned change stays refused:
:mod:`streamjob.checkpoint.fingerprint`), and the change is classified
(:func:`streamjob.planner.upgrade.classify`): stateless and compatible changes keep the
offsets (and the state); an incompatible one is refused, naming the operator and the
column, unless the statement chose a new checkpoint epoch (``FROM EARLIEST | FROM
TIMESTAMP t``).

Then, for a running job: it is stopped gracefully (its current micro-batch completes and
is its final checkpoint), the new query's fingerprint is accepted beside the stored one,
the catalog switches to the new query (a new version, with when and by whom), and the job
is started again from that checkpoint, keeping its uid and checkpoint epoch (or, with
FROM or WITH STATE RESET, in a new one: executor/switch_finish.py). A switch killed
before the catalog changed restarts the old query; one killed after it, the new.

Roles (DESIGN §9, docs/security.md): replacing a query needs what CREATE STREAMJOB and
STOP/START need, an operator or the admin; a viewer is refused.
"""

from __future__ import annotations

import dataclasses

from .. import crashpoint
from .. import properties as jp
from ..checkpoint import fingerprint
from ..exceptions import AccessDeniedError, JobError, StreamJobError
from ..grammar import statements as st
from ..planner import checks
from ..planner.upgrade import ChangeClass, ChangeKind, classify
from .result import Result
from .switch_finish import finish_start_over, start_over_intent, switcher
from streamjob.catalog.records import ACTIVE_STATUSES, DesiredState, Role


class UpgradeStatements:
    """``ALTER STREAMJOB ... AS`` and ``CREATE OR REPLACE STREAMJOB`` of
    :class:`~streamjob.executor.Executor` (module docstring)."""

    def _may_alter(self, what: str) -> None:
        """Raise AccessDeniedError for a viewer (DESIGN §9: operators and the admin)."""
        if getattr(self, "role", Role.ADMIN) is Role.VIEWER:
            raise AccessDeniedError(f"a viewer cannot {what}: it needs an operator (as CREATE, "
                                    "STOP and START STREAMJOB do)")

    def _sink_additions(self, db: str, query: str, position):
        """The columns the new query writes that its SQL sink table does not declare
        (docs/upgrades.md: a SQL sink gains them as nullable columns): ``(table,
        [{"name", "type"}])``, or None when there are none or the sink is not a SQL table
        (then the planner refuses an undeclared column at its place, as at CREATE).

        Raises:
            ValidationError: a new column whose type is not known (a computed value):
                at the select, asking for ``CAST(... AS type)``.
        """
        from sqlglot import exp, parse_one

        from ..columntypes import check_type
        from ..connectors import spec as cspec
        from ..exceptions import ValidationError
        from ..planner.lookup import Lookup
        from ..planner.query import analyze

        aq = analyze(query, Lookup(self.catalog), position, db)
        table = self.catalog.get_table(*aq.target)
        if table is None or not isinstance(cspec.spec_of_table(table), cspec.SqlTableSpec):
            return None
        declared = {c["name"].lower() for c in table.columns}
        if aq.target_columns is not None:
            names = list(aq.target_columns)
        elif aq.arity_known and len(aq.output_columns) > len(declared):
            names = [c or "" for c in aq.output_columns]
        else:
            return None
        new = [(i, n) for i, n in enumerate(names) if n.lower() not in declared]
        if aq.target_columns is None:
            new = [(i, n) for i, n in enumerate(names) if i >= len(declared)]
        if not new:
            return None
        select = parse_one(aq.select_sql, read="spark")
        select = select if isinstance(select, exp.Select) else select.find(exp.Select)
        span = aq.select_span
        added = []
        for i, name in new:
            typ = aq.output_types[i] if i < len(aq.output_types) else None
            node = select.expressions[i] if select is not None and i < len(
                select.expressions) else None
            node = node.this if isinstance(node, exp.Alias) else node
            if typ is None and isinstance(node, exp.Cast):
                typ = node.to.sql(dialect="spark").lower()
            if not name or typ is None:
                what = f"column {name}" if name else f"column {i + 1}"
                raise ValidationError(
                    f"the new {what} of SQL table {table.qualified_name} is added as a nullable "
                    f"column, and needs a type: write CAST(... AS type)"
                    + ("" if name else " AS name"), line=span.line if span else None,
                    column=span.column if span else None)
            added.append({"name": name, "type": check_type(typ)})
        return table, added

    def _plan_upgrade(self, job, query: str, props: dict, position=None, catalog=None):
        """Plan ``job``'s current query and ``query`` (with ``props``, the job's stored
        properties after the statement), check both as CREATE STREAMJOB does, check the
        checkpoints against the current query, and classify the change.

        Returns:
            ``(old_plan, new_plan, ChangeClass)``.

        Raises:
            ValidationError / PropertyError / SqlPolicyError: the new query or properties
                are refused (at their place in the script).
            ChangedLogic: the checkpoints were not taken by the current query (an
                unplanned change, checkpoint/fingerprint.py).
        """
        db, name = job.database, job.name
        session = job.session_properties
        old = self._plan(db, name, job.query, job.properties, session)
        new = self._plan(db, name, query, props, session, position, analyze=True,
                         catalog=catalog)
        if old.props.checkpoint_enabled and not self.dry_run:
            fingerprint.check(self.home.checkpoint_dir(db, name), old)
        return old, new, classify(old, new)

    def _explain_change(self, s: st.ReplaceStreamJobQuery) -> Result:
        """``EXPLAIN ALTER STREAMJOB j AS (...)`` / ``EXPLAIN CREATE OR REPLACE STREAMJOB``:
        the change class and its reasons, the SQL sink's added columns and whether the
        statement as written would be taken (an incompatible change needs FROM), all as
        the statement decides them; nothing is changed (no catalog write, no stop).
        Anyone who may read the job may ask (a viewer too).

        Returns a Result whose ``data`` is ``{"job", "exists", "change": {...}
        (ChangeClass.as_json; null for a job CREATE OR REPLACE would create),
        "sink_columns_added": [{"name", "type"}], "accepted": bool, "refusal": str |
        null}`` (docs/json.md "explain-change").

        Raises:
            ObjectNotFoundError: ALTER of a job that does not exist.
            ValidationError / PropertyError / SqlPolicyError: the new query is refused.
            ChangedLogic: the checkpoints were not taken by the job's current query.
        """
        db, name = self._names(s.name, "job")
        job = self.catalog.get_job(db, name)
        data = {"job": f"{db}.{name}", "exists": job is not None, "change": None,
                "sink_columns_added": [], "accepted": True, "refusal": None}
        if job is None and s.or_replace:
            self._plan(db, name, s.query, dict(st.props(s.properties)),
                       dict(self.session_props), s.query_position, analyze=True)
            return _explain_change_result(data, "a new job (CREATE OR REPLACE creates it)")
        if job is None:
            job = self.catalog.require_job(db, name)  # raises
        if s.or_replace:
            given = jp.validate(st.props(s.properties))
            checks.check_job_properties(self.home.policy, given, self.confined)
            stored = self._sealed(given)
        else:
            stored = dict(job.properties)
        grown = self._sink_additions(db, s.query, s.query_position)
        sink_columns = None
        if grown is not None:
            table, added = grown
            sink_columns = (table.database, table.name, [*table.columns, *added])
            data["sink_columns_added"] = [dict(c) for c in added]
        _old, new, change = self._plan_upgrade(
            job, s.query, stored, s.query_position,
            _WithColumns(self.catalog, sink_columns) if sink_columns else None)
        change, judged = self._judge_state(job, new, change, s)
        data["change"] = change.as_json()
        try:
            self._refuse_unchosen(s, job, new, change)
        except JobError as exc:
            data.update(accepted=False, refusal=exc.message)
        return _explain_change_result(data, change.summary() + judged)

    def _do_ReplaceStreamJobQuery(self, s: st.ReplaceStreamJobQuery) -> Result:
        verb = "CREATE OR REPLACE STREAMJOB" if s.or_replace else "ALTER STREAMJOB ... AS"
        self._may_alter(verb)
        db, name = self._names(s.name, "job")
        job = self.catalog.get_job(db, name)
        if job is None and s.or_replace:  # nothing to replace: CREATE
            if s.start_from is not None:
                pos = s.where("from")
                raise JobError(f"streamjob {db}.{name} does not exist: a new job has no "
                               "checkpoint epoch to choose (leave out FROM)", pos.line, pos.column)
            return self._do_CreateStreamJob(st.CreateStreamJob(
                position=s.position, text=s.text, locations=s.locations, name=s.name,
                query=s.query, query_position=s.query_position, properties=s.properties))
        if job is None:
            job = self.catalog.require_job(db, name)  # raises
        if s.or_replace:  # the statement's properties replace the job's
            given = jp.validate(st.props(s.properties))
            checks.check_job_properties(self.home.policy, given, self.confined)
            stored = self._sealed(given)
            jp.refuse_contradictions(given, job.session_properties, here=given)
        else:
            stored = dict(job.properties)
        grown = self._sink_additions(db, s.query, s.query_position)
        sink_columns = None
        if grown is not None:
            table, added = grown
            sink_columns = (table.database, table.name, [*table.columns, *added])
        old, new, change = self._plan_upgrade(
            job, s.query, stored, s.query_position,
            _WithColumns(self.catalog, sink_columns) if sink_columns else None)
        change, judged = self._judge_state(job, new, change, s)
        self._refuse_unchosen(s, job, new, change)
        gains = (f"; table {grown[0].qualified_name} gains the nullable column(s) "
                 f"{', '.join(c['name'] + ' ' + c['type'] for c in grown[1])}" if grown else "")
        if self.dry_run:
            _job, version = self.catalog.replace_job_query(
                job.uid, s.query, stored, new.dependencies, principal=self.principal,
                change=change.kind.value, sink_columns=sink_columns)
            return Result(f"streamjob {db}.{name} can be altered to version {version}: "
                          f"{change.summary()}{gains}", object=f"{db}.{name}",
                          data={"version": version, "change": change.as_json()})
        running = self._is_running(job)
        if s.start_from is not None:
            self._refuse_start_over(job, new, s.start_from)  # before anything changes
        stopped_at = ""
        if running:  # a graceful stop: the current micro-batch is its final checkpoint
            stopped_at = self._stop_for_upgrade(job)
            crashpoint.reached("upgrade.stopped")
        try:
            ckdir = self.home.checkpoint_dir(db, name)
            if (new.props.checkpoint_enabled and change.kind is not ChangeKind.INCOMPATIBLE
                    and not s.state_reset):
                # accepted beside the stored fingerprint before the catalog switches
                fingerprint.plan_change(ckdir, fingerprint.of_plan(new))
            if grown is not None:  # the database first: an extra nullable column is harmless
                from ..connectors import spec as cspec
                from ..connectors.sql.schema import add_nullable_columns

                add_nullable_columns(cspec.spec_of_table(grown[0]), grown[1])
            start_from = s.start_from  # a new checkpoint epoch, recorded with the switch
            if s.state_reset:  # the offsets of the final checkpoint, without state
                start_from = committed_offsets(ckdir)
            # the switch, and for a running job the wish to run again (at once, or once
            # its new epoch is prepared: executor/switch_finish.py), in one transaction
            job, version = self.catalog.replace_job_query(
                job.uid, s.query, stored, new.dependencies, principal=self.principal,
                change=change.kind.value, sink_columns=sink_columns,
                desired_state=DesiredState.RUNNING if running and start_from is None
                else None, start_over=None if start_from is None
                else start_over_intent(start_from, running, self.manager))
        except StreamJobError as exc:  # before the switch: the old query runs on
            if running:
                self._restart_after_failed_switch(s, exc, job.uid)
            raise
        if running:
            crashpoint.reached("upgrade.switched")
        epoch = finish_start_over(self, job)  # "" without a new epoch
        if s.state_reset:
            change = dataclasses.replace(change, kind=ChangeKind.INCOMPATIBLE, reasons=(
                change.reasons or ("the state is rebuilt (WITH STATE RESET)",)))
        lines = [f"streamjob {db}.{name} altered to version {version}: "
                 + (_reset_summary(change) if s.state_reset else change.summary())
                 + judged + gains + ("" if new.props.checkpoint_enabled else
                            " (it keeps no checkpoint: each start begins at its streams' "
                            "reset strategy)")]
        if running:
            started = self._do_StartStreamJob(st.StartStreamJob(
                position=s.position, text=s.text, locations=s.locations, name=s.name))
            lines.append(f"it stopped{stopped_at} and {started.message.split(' ', 2)[2]}"
                         + (f"{epoch}" if epoch else ""))
        elif epoch:
            lines.append(f"at its next START it starts{epoch}")
        return Result("\n".join(lines), object=f"{db}.{name}",
                      data={"version": version, "change": change.as_json()})

    def _judge_state(self, job, plan, change: ChangeClass, s=None) -> tuple[ChangeClass, str]:
        """Spark's state schema check (executor/state_trial.py) of a change the planner
        calls compatible, on a throwaway copy of the job's newest checkpoint; returns
        ``(the class, a note for the result)``: Spark's refusal makes it incompatible,
        naming the operator and the column. A dry run (``streamjob check``) and EXPLAIN
        run it too: it reads the job's checkpoint and writes only its throwaway copy. Not
        run for WITH STATE RESET (no state is kept), a job without durable checkpoints, a
        viewer's EXPLAIN, nor in a process without Spark (the note says so).

        Raises:
            JobError: the trial failed for another reason than the state.
            CheckpointError: the checkpoint could not be copied.
        """
        if (change.kind is not ChangeKind.COMPATIBLE or not plan.props.checkpoint_enabled
                or (s is not None and getattr(s, "state_reset", False))):
            return change, ""
        if getattr(self, "role", Role.ADMIN) is Role.VIEWER:  # it runs a query: not theirs
            return change, (" (Spark's state schema check did not run: a viewer's EXPLAIN "
                            "does not start queries; ALTER runs it before the switch)")
        spark = self.spark() if getattr(self, "spark", None) is not None else None
        if spark is None:
            return change, (" (Spark's state schema check did not run: this process has no "
                            "Spark; " + ("ALTER runs it before the switch)" if self.dry_run
                                         else "the job's next start runs it)"))
        from ..planner.upgrade import stateful_operators
        from .state_trial import trial

        refused = trial(spark, self.home, self.catalog, job, plan, stateful_operators(plan))
        if refused is not None:
            return refused, ""
        return dataclasses.replace(change, judge="spark"), "; Spark's state schema check agrees"

    def _restart_after_failed_switch(self, s: st.ReplaceStreamJobQuery, exc,
                                     job_uid: str) -> None:
        """Start the job again with its old query after a switch failed (a running job
        is never left stopped by a failed ALTER); says so in ``exc``'s message. Its
        pending switch (``Catalog.begin_switch``) ends here either way: after the start
        (which asks for RUNNING), or, if the start fails, without a wish to run."""
        try:
            self._do_StartStreamJob(st.StartStreamJob(
                position=s.position, text=s.text, locations=s.locations, name=s.name))
            self.catalog.resume_switch(job_uid)
            exc.message += "; the query was not changed, and the job runs on with it"
        except StreamJobError as again:
            self.catalog.resume_switch(job_uid, run=False)
            exc.message += (f"; the query was not changed, and the job could not be started "
                            f"again ({again.message}): START it")

    def _refuse_unchosen(self, s: st.ReplaceStreamJobQuery, job, plan,
                         change: ChangeClass) -> None:
        """Refuse an incompatible change without FROM (at the query), FROM for a change
        that keeps its checkpoint (at FROM), and FROM without durable checkpoints (such a
        job keeps nothing to carry: every change is taken, and it starts at its streams'
        reset strategy)."""
        if s.state_reset:
            self._check_state_reset(s, job, plan, change)
            return
        if not plan.props.checkpoint_enabled and s.start_from is None:
            return
        if change.kind is ChangeKind.INCOMPATIBLE and s.start_from is None:
            pos = s.query_position or s.where("name")
            raise JobError(f"streamjob {job.qualified_name}: {change.summary()} (append it "
                           "to the statement)", pos.line, pos.column)
        if change.kind is not ChangeKind.INCOMPATIBLE and s.start_from is not None:
            pos = s.where("from")
            raise JobError(f"streamjob {job.qualified_name}: {change.summary()}, so it needs "
                           "no new checkpoint epoch: leave out FROM (or, to start over, "
                           "START STREAMJOB ... FROM after the change)", pos.line, pos.column)
        if s.start_from is not None and not plan.props.checkpoint_enabled:
            pos = s.where("from")
            raise JobError(f"streamjob {job.qualified_name} has morphling.job.enable."
                           "checkpoint=false: every start already begins at its streams' "
                           "reset strategy (leave out FROM)", pos.line, pos.column)

    def _check_state_reset(self, s: st.ReplaceStreamJobQuery, job, plan,
                           change: ChangeClass) -> None:
        """Refuse WITH STATE RESET (at it) for a job without durable checkpoints, a change
        whose queries keep no state, a change whose source streams change (the offsets
        kept are per source), and streams that cannot start at given offsets (only
        Kafka streams can)."""
        pos = s.where("state_reset")
        where = f"streamjob {job.qualified_name}: WITH STATE RESET"
        if not plan.props.checkpoint_enabled:
            raise JobError(f"{where}: it has morphling.job.enable.checkpoint=false, so it "
                           "keeps neither offsets nor state", pos.line, pos.column)
        if change.kind is ChangeKind.STATELESS:
            raise JobError(f"{where}: {change.summary()} and neither query keeps state: "
                           "leave out WITH STATE RESET", pos.line, pos.column)
        if change.operator == "sources":
            raise JobError(f"{where} keeps the offsets of each source stream, but "
                           f"{change.reasons[0]}: choose FROM EARLIEST or FROM TIMESTAMP",
                           pos.line, pos.column)
        if not self.dry_run and committed_offsets(
                self.home.checkpoint_dir(job.database, job.name)) is None:
            raise JobError(f"{where}: it has no committed checkpoint whose offsets it could "
                           "keep; choose FROM EARLIEST or FROM TIMESTAMP", pos.line, pos.column)
        other = [f"{src.stream.qualified_name} ({src.source.identifier})"
                 for src in plan.sources if src.source.identifier != "kafka"]
        if other:
            raise JobError(f"{where} starts each stream at the offsets of the latest "
                           f"checkpoint, which only Kafka streams can: {', '.join(other)} "
                           "cannot; choose FROM EARLIEST or FROM TIMESTAMP", pos.line,
                           pos.column)

    def _is_running(self, job) -> bool:
        """The job runs here, or some job manager is asked to run it. A runner that ended
        (stopped by another client's STOP, which leaves it registered: manager/liveness.py)
        does not count."""
        runner = getattr(self.manager, "runners", {}).get(job.uid) if self.manager else None
        here = runner is not None and runner.is_alive()
        return here or (job.desired_state == DesiredState.RUNNING
                        and job.status in ACTIVE_STATUSES)

    def _stop_for_upgrade(self, job) -> str:
        """Stop ``job`` after its current micro-batch (as STOP STREAMJOB); returns
        `` at checkpoint n`` (its final checkpoint) or "".

        Raises:
            JobError: it did not stop in time (asked to run again; nothing changed).
        """
        from .jobs import STOP_WAIT_S

        # The intent first, in the transaction that starts the stop: the job still wishes
        # to run, with version n pending. A process killed before the switch commits
        # leaves this marker; the next job host or server sees its process gone and runs
        # the old query again (manager/liveness.py resume_abandoned_switches).
        pending = len(self.catalog.list_job_versions(job.uid)) + 1
        self.catalog.begin_switch(job.uid, {"version": pending, **switcher(self.manager)})
        if self.manager is not None:
            self.manager.stop(job.uid)
        elsewhere = self._await_stopped(job)
        if elsewhere is not None:
            self.catalog.resume_switch(job.uid)
            raise JobError(f"streamjob {job.qualified_name} is still running in {elsewhere}: "
                           f"its current micro-batch has not finished after {STOP_WAIT_S:g} s; "
                           "its query was not changed. Try again")
        latest = self.catalog.latest_checkpoint(job.uid)
        return f" at checkpoint {latest.checkpoint_id}" if latest is not None else ""


def committed_offsets(checkpoint_dir: str) -> str | None:
    """The source offsets of the last batch Spark committed in ``checkpoint_dir`` (its
    offset-log entry: one line per source, each ``{topic: {partition: offset}}`` for a
    Kafka stream), merged as JSON text (the start position of WITH STATE RESET), or None
    when no batch was committed (a new epoch then starts as a first start would)."""
    import json

    from ..checkpoint import store
    from ..checkpoint.store import join_uri

    done = store.log_ids(checkpoint_dir, "commits")
    if not done:
        return None
    text = store.read_file(join_uri(checkpoint_dir, f"offsets/{done[-1]}")) or ""
    merged: dict = {}
    for line in text.splitlines()[2:]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            for topic, parts in value.items():
                if isinstance(parts, dict):
                    merged.setdefault(topic, {}).update(parts)
    return json.dumps(merged, sort_keys=True) if merged else None


def _reset_summary(change: ChangeClass) -> str:
    """The result line of a switch WITH STATE RESET."""
    why = f" ({'; '.join(change.reasons)})" if change.reasons else ""
    return (f"the state is rebuilt{why}: a new checkpoint epoch starts at the offsets of "
            "the last committed checkpoint, with empty state")


class _WithColumns:
    """The catalog as an upgrade plans over it: table ``(database, name)`` has
    ``columns`` (a SQL sink's nullable columns to be added); every other call is the
    catalog's."""

    def __init__(self, catalog, sink_columns) -> None:
        self._catalog = catalog
        self._db, self._name, self._columns = sink_columns

    def get_table(self, database: str, name: str):
        import dataclasses

        table = self._catalog.get_table(database, name)
        if table is not None and (database, name) == (self._db, self._name):
            table = dataclasses.replace(table, columns=tuple(self._columns))
        return table

    def __getattr__(self, attr):
        return getattr(self._catalog, attr)


def _explain_change_result(data: dict, summary: str) -> Result:
    """The field/value table of an ``EXPLAIN ALTER`` answer (``data``: its JSON shape)."""
    change = data["change"] or {}
    rows = [("job", data["job"] + ("" if data["exists"] else " (not created yet)")),
            ("change class", change.get("class", "new job")),
            ("summary", summary)]
    rows += [("reason", r) for r in change.get("reasons") or []]
    if change:
        rows += [("keeps offsets", "yes" if change["keeps_offsets"] else "no"),
                 ("keeps state", "yes" if change["keeps_state"] else "no")]
    if change.get("choices"):
        rows.append(("choices", " or ".join(change["choices"])))
    if data["sink_columns_added"]:
        rows.append(("sink gains", ", ".join(f"{c['name']} {c['type']}"
                                             for c in data["sink_columns_added"])))
    rows.append(("as written", "accepted" if data["accepted"] else
                 f"refused: {data['refusal']}"))
    return Result(columns=("field", "value"), rows=rows,
                  title=f"explain change of {data['job']}", data=data)
