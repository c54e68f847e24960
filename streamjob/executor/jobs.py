"""CREATE/START/STOP/DROP/ALTER STREAMJOB."""

from __future__ import annotations

import logging

from .. import properties as jp
from ..checkpoint import fingerprint, identity, savepoint, store
from ..checkpoint.filesystems import reachable_here
from ..connectors import spec as cspec
from ..exceptions import CheckpointError, JobError, ObjectExistsError
from ..grammar import statements as st
from ..planner import checks
from .result import Result
from .switch_finish import pending_start_over
from streamjob.catalog.records import ACTIVE_STATUSES, DesiredState

log = logging.getLogger(__name__)


STOP_WAIT_S = 60.0
"""How long STOP and DROP STREAMJOB wait (s) for the job manager running a job (a server,
or another shell) to stop it after its current micro-batch."""


class JobStatements:
    """Stream job statements of :class:`~streamjob.executor.Executor`."""

    def _plan(self, db: str, name: str, query: str, props: dict, session: dict, position=None,
              analyze: bool = False, catalog=None):
        """Plan a job and check it as CREATE STREAMJOB does (the backend, the admin's
        policy, with ``analyze`` Spark's analysis); ``catalog`` a view of the catalog to
        plan over (default: the executor's; an upgrade's adds a SQL sink's new columns)."""
        from ..checkpoint.backends import check_plan
        from ..planner.plan import plan_job

        planner = self.plans.plan if self.plans is not None and catalog is None else plan_job
        plan = planner(catalog or self.catalog, self.home, db, name, query, props, session,
                       position)
        check_plan(plan)  # e.g. a kafka checkpoint backend needs a Kafka source
        # the admin's rules for everyone over every object it reads or writes (objects
        # were checked against the declaring role when declared: streamjob/security)
        checks.check_plan(self.home.policy, plan)
        session = self.spark() if analyze and self.spark is not None else None
        if session is not None:  # what Spark would refuse at START, refused now
            from ..planner.bind import bind_job
            from ..spark.analysis import refuse_what_spark_refuses

            refuse_what_spark_refuses(session, bind_job(plan, read=False))
        return plan

    def _do_CreateStreamJob(self, s: st.CreateStreamJob) -> Result:
        db, name = self._names(s.name, "job")
        if self.catalog.get_job(db, name) is not None:
            if s.if_not_exists:
                return Result(f"streamjob {db}.{name} exists")
            raise ObjectExistsError(f"streamjob {db}.{name} already exists")
        props = jp.validate(st.props(s.properties))
        session = dict(self.session_props)
        jp.refuse_contradictions(props, session, here=props)
        checks.check_job_properties(self.home.policy, props, self.confined)
        checks.check_job_properties(self.home.policy, jp.validate(session), self.confined)
        plan = self._plan(db, name, s.query, props, session, s.query_position, analyze=True)
        created = self.catalog.create_job(db, name, s.query, self._sealed(props), plan.dependencies,
                                          if_not_exists=s.if_not_exists,
                                          session_properties=self._sealed(session),
                                          principal=self.principal)
        return Result("\n".join([f"streamjob {db}.{name} {'created' if created else 'exists'} "
                                 f"({plan.guarantee}, output mode {plan.output_mode})",
                                 *jp.notices(props)]))

    def _do_AlterStreamJob(self, s: st.AlterStreamJob) -> Result:
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        changes = jp.validate(st.props(s.properties))
        checks.check_job_properties(self.home.policy, changes, self.confined)
        props = {**job.properties, **changes}
        jp.refuse_contradictions(props, job.session_properties, here=changes)
        plan = self._plan(db, name, job.query, props, job.session_properties, analyze=True)
        self.catalog.update_job(db, name, properties={**job.properties, **self._sealed(changes)},
                                uid=job.uid)
        when = " (applies at its next start)" if job.status in ACTIVE_STATUSES else ""
        return Result(f"streamjob {db}.{name} altered: "
                      + ", ".join(f"{k}={jp.mask(k, v)}" for k, v in changes.items())
                      + f"; guarantee {plan.guarantee}{when}"
                      + "".join("\n" + n for n in jp.notices(changes)))

    def _do_StartStreamJob(self, s: st.StartStreamJob) -> Result:
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        plan = self._plan(db, name, job.query, job.properties, job.session_properties)
        restored = ""
        if pending_start_over(job) is not None and not self.dry_run:
            restored = self._finish_switch(job)  # the new epoch an ALTER left to prepare
            job = self.catalog.require_job(db, name)
        restoring = s.from_savepoint is not None or s.checkpoint_at is not None
        ckdir = self.home.checkpoint_dir(db, name)
        if plan.props.checkpoint_enabled and not restoring and reachable_here(ckdir) \
                and pending_start_over(job) is None:
            # changed logic is refused here; a Hadoop directory a process without Spark
            # cannot reach is checked by the job manager's start (checkpoint/run.py)
            fingerprint.check(ckdir, plan)
        if restoring:  # issue 30 (executor/savepoints.py)
            self._may_change_savepoints("START ... FROM " + (
                "SAVEPOINT" if s.from_savepoint is not None else "CHECKPOINT AT"))
            if not plan.props.checkpoint_enabled:
                raise JobError(f"streamjob {db}.{name} has morphling.job.enable.checkpoint="
                               "false, so it keeps no checkpoint to start from")
            restored = (self._restore_savepoint(s, job, plan) if s.from_savepoint is not None
                        else self._restore_at(s, job, plan))
        elif s.from_checkpoint is not None:
            restored = self._restore(s, job, plan)
        elif s.start_from is not None:
            restored = self._start_over(s, job, plan)
        elif plan.props.checkpoint_enabled and not self.dry_run \
                and self.manager is not None:  # this process runs it, on this host's disk
            self._check_identity(job, plan)
        if not self.dry_run:
            check_sql_tables(plan)
        if self.dry_run:
            self.catalog.update_job(db, name, desired_state=DesiredState.RUNNING, uid=job.uid)
            return Result(f"streamjob {db}.{name} can start{restored}")
        owner = getattr(self.manager, "owner", None)
        if owner:  # this process will run it: claim it before a server sees RUNNING
            from ..manager.liveness import LIVE_WITHIN_MS, reap_local_dead

            reap_local_dead(self.catalog)
            other = self.catalog.claim_job(job.uid, owner, LIVE_WITHIN_MS)
            if other is not None:
                raise JobError(f"streamjob {db}.{name} is running in job manager {other}; "
                               "stop it there first")
        # a new start: the previous error stays in the runs (DESCRIBE), not on the job
        job = self.catalog.update_job(db, name, desired_state=DesiredState.RUNNING, last_error=None,
                                      uid=job.uid) or job
        if self.manager is None:
            return Result(f"streamjob {db}.{name} will start when a job manager runs it{restored}",
                          object=f"{db}.{name}", pending=True, detail=restored)
        self.manager.start(job)
        return Result(f"streamjob {db}.{name} started{restored}")

    def _finish_switch(self, job) -> str:
        """Prepare the new checkpoint epoch of ``job``'s pending start over (an ALTER ...
        FROM or WITH STATE RESET that switched the query and was killed before;
        :func:`~streamjob.executor.switch_finish.finish_start_over`); returns its phrase.

        Raises:
            JobError: another live process is doing that switch now.
            CheckpointError: as :meth:`_new_epoch`.
        """
        import os
        import socket

        from ..manager.liveness import switch_abandoned
        from .switch_finish import finish_start_over

        marker = job.pending_switch
        mine = (marker.get("host"), marker.get("pid")) == (socket.gethostname(), os.getpid())
        if not mine and not switch_abandoned(self.catalog, marker):
            raise JobError(f"streamjob {job.qualified_name} is being switched to query version "
                           f"{marker.get('version')} by {marker.get('host')} pid "
                           f"{marker.get('pid')}: START it once that ALTER has ended")
        return finish_start_over(self, job)

    def _restore(self, s: st.StartStreamJob, job, plan) -> str:
        """START ... FROM CHECKPOINT n (DESIGN §4): the job resumes from n under a new
        checkpoint epoch, as a restored savepoint does (``_rewind``, executor/savepoints.py):
        checkpoint n's files are copied into a new directory that replaces the old one,
        the records after n in the job's checkpoint backend are removed, and the old
        epoch's sink markers are purged, so every batch re-planned after n reaches the
        sink (under the old epoch a sink would skip batches n+1..m as replays, and the
        records they now read beyond the first run's ranges would be lost). Rows written
        after n stay in the sink. Refused while the job runs, if n is not retained, for
        a file table whose manifest lists later batches, and for a checkpoint directory
        that is another job's; one without identity is adopted first, as START adopts it
        (checkpoint/identity.py step 2). A dry run contacts nothing:
        it checks n against the scratch catalog, and not at all for a job whose records
        live in zookeeper or kafka."""
        from ..checkpoint.backends import CatalogBackend, backend_for_plan

        n = s.from_checkpoint
        running = self.manager is not None and job.uid in getattr(self.manager, "runners", {})
        if running or (job.desired_state == DesiredState.RUNNING and job.status in ACTIVE_STATUSES):
            raise JobError(f"streamjob {job.qualified_name} is running; STOP it before "
                           f"starting it from checkpoint {n}")
        where = plan.props.checkpoint_backend
        unchecked = self.dry_run and where != "catalog"
        with (CatalogBackend(self.catalog) if self.dry_run
              else backend_for_plan(self.catalog, self.home, plan)) as backend:
            retained = [] if unchecked else [c.checkpoint_id for c in backend.list(job)]
            if n not in retained and not unchecked:
                pos = s.where("checkpoint")
                have = (f"retained: {', '.join(map(str, retained))}" if retained
                        else "it has no retained checkpoints")
                raise JobError(f"checkpoint {n} of streamjob {job.qualified_name} is not "
                               f"retained; {have}", pos.line, pos.column, str(n))
            if not plan.props.checkpoint_enabled:
                raise JobError(f"streamjob {job.qualified_name} has morphling.job.enable."
                               "checkpoint=false, so it keeps no checkpoint to start from")
            if self.dry_run:
                return f" from checkpoint {n}" + (
                    f" (not checked: its checkpoints are recorded in {where})" if unchecked else "")
        ckdir = self.home.checkpoint_dir(job.database, job.name)
        # n's files: in the directory, or where a rewind killed between its two renames
        # moved it aside (executor/savepoints.py _rewind step 3)
        source = ckdir if store.holds_anything(ckdir) or not store.holds_anything(
            ckdir + ".replaced") else ckdir + ".replaced"
        new = self._rewind(  # executor/savepoints.py: as a savepoint is restored
            job, plan, n, lambda staging: savepoint.rewind_into(source, n, staging),
            lambda backend: backend.truncate(job, after=n), f"start it from checkpoint {n}",
            adopt=True)
        later = [c for c in retained if c > n]
        return (f" from checkpoint {n} (checkpoints {', '.join(map(str, later))} removed); "
                f"checkpoint epoch {new.epoch}" if later
                else f" from checkpoint {n}; checkpoint epoch {new.epoch}")

    def _check_identity(self, job, plan) -> None:
        """Refuse START of a job whose checkpoint directory is lost or not its own
        (streamjob/checkpoint/identity.py); an unreachable backend is left to the job.
        Only where this process runs the job: a client on another host sees another
        disk, and the job manager's start runs the same check where the directory is."""
        from ..checkpoint.backends import backend_for_plan
        from ..exceptions import ConnectorError

        try:
            with backend_for_plan(self.catalog, self.home, plan) as backend:
                latest = backend.latest(job)
        except ConnectorError:
            return  # the job manager retries; its start runs the same check
        identity.prepare(self.home.checkpoint_dir(job.database, job.name), job, latest)

    def _start_over(self, s: st.StartStreamJob, job, plan) -> str:
        """START ... FROM EARLIEST | LATEST | TIMESTAMP t (DESIGN §4): the job's checkpoint
        directory, checkpoint records and sink markers are removed and a new checkpoint
        epoch begins, reading Kafka streams from the given position. What the sinks hold
        stays. Refused while the job runs, for a job without checkpoints, for LATEST or
        TIMESTAMP over file streams (a file source has no such position), and when the
        directory belongs to another job."""
        what = _position(s.start_from)
        running = self.manager is not None and job.uid in getattr(self.manager, "runners", {})
        if running or (job.desired_state == DesiredState.RUNNING and job.status in ACTIVE_STATUSES):
            raise JobError(f"streamjob {job.qualified_name} is running; STOP it before starting "
                           f"it over FROM {what}")
        self._refuse_start_over(job, plan, s.start_from)
        if self.dry_run:
            return f" over from {what.lower()} (a new checkpoint epoch)"
        return self._new_epoch(job, plan, s.start_from)

    def _refuse_start_over(self, job, plan, start_from: str) -> None:
        """Refuse a new checkpoint epoch from ``start_from`` (as :meth:`_start_over`) for
        a job without checkpoints, and LATEST or TIMESTAMP over file streams.

        Raises:
            JobError: naming the job (and the file streams).
        """
        if not plan.props.checkpoint_enabled:
            raise JobError(f"streamjob {job.qualified_name} has morphling.job.enable.checkpoint="
                           "false: every start already begins at its streams' reset strategy")
        files = [src.stream.qualified_name for src in plan.sources
                 if not src.source.starts_anywhere]
        if files and start_from != "earliest":
            raise JobError(f"streamjob {job.qualified_name} reads the file stream(s) "
                           f"{', '.join(files)}, which can only be read from their first file: "
                           "use FROM EARLIEST")

    def _new_epoch(self, job, plan, start_from: str) -> str:
        """Begin a new checkpoint epoch of the stopped ``job`` reading from ``start_from``
        (``earliest``, ``latest``, ms as text, or Kafka offsets as JSON text): its backend's
        checkpoint records, its checkpoint directory and its sink markers are removed.
        Run again after a kill, it begins another (nothing ran on the first). Returns the
        result's phrase `` over from ... (checkpoint epoch e; earlier checkpoints
        removed)``.

        Raises:
            CheckpointError: the directory is another job's, or holds files without an
                identity (never deleted).
        """
        from ..checkpoint.backends import backend_for_plan

        ckdir = self.home.checkpoint_dir(job.database, job.name)
        old = identity.read(ckdir)
        if old is not None and old.job_uid != job.uid:
            identity.prepare(ckdir, job, None)  # raises: the directory is another job's
        if old is None and store.holds_anything(ckdir):  # never deleted (issue 28 point 5)
            raise CheckpointError(
                f"checkpoint directory {ckdir} has no identity ({identity.FILE_NAME}), so "
                f"streamjob cannot tell whether it is {job.qualified_name}'s and does not "
                f"delete it: START STREAMJOB {job.name} (without FROM) adopts it as this "
                "job's, or move it away; then start over")
        with backend_for_plan(self.catalog, self.home, plan) as backend:
            backend.purge(job)
        identity.purge_owned(ckdir, self.home.checkpoint_root, job.uid)
        self._purge_sink_markers(job, old.epoch if old else "")
        new = identity.start_over(ckdir, job, start_from)
        shown = (f"the offsets {start_from}" if start_from.startswith("{")
                 else _position(start_from).lower())
        return f" over from {shown} (checkpoint epoch {new.epoch}; earlier checkpoints removed)"

    def _do_StopStreamJob(self, s: st.StopStreamJob) -> Result:
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        if s.savepoint is not None:  # refused before anything stops (executor/savepoints.py)
            self._may_change_savepoints("STOP ... WITH SAVEPOINT")
            self._savepoint_free(job, s)
        self.catalog.update_job(db, name, desired_state=DesiredState.STOPPED, uid=job.uid)
        if self.manager is not None:
            self.manager.stop(job.uid)
        elsewhere = self._await_stopped(job)
        if elsewhere is not None:
            return Result(f"streamjob {db}.{name}: stop requested; it is still STOPPING in "
                          f"{elsewhere} (its current micro-batch has not finished after "
                          f"{STOP_WAIT_S:g} s); `streamjob status` shows when it is STOPPED"
                          + ("; no savepoint was taken" if s.savepoint is not None else ""))
        if s.savepoint is not None:
            if self.dry_run:
                self._scratch_savepoint(job, s.savepoint)
                return Result(f"streamjob {db}.{name} stopped; savepoint {s.savepoint} can be taken")
            # the graceful stop ended on a recorded checkpoint: that is the savepoint
            sp = self._take_savepoint(job, s.savepoint, stopped=True)
            return Result(f"streamjob {db}.{name} stopped with savepoint {sp.name} (checkpoint "
                          f"{sp.checkpoint_id}, in {sp.location})", object=f"{db}.{name}")
        return Result(f"streamjob {db}.{name} stopped")

    def _await_stopped(self, job) -> str | None:
        """After the desired state became STOPPED: wait until no live job manager runs the
        job (:func:`streamjob.manager.liveness.await_stopped`); None when stopped, else the
        id of the job manager still stopping it. A dry run waits for nothing."""
        from ..manager.liveness import await_stopped

        if self.dry_run:  # a scratch copy of the catalog: nobody runs its jobs
            return None
        me = getattr(self.manager, "owner", None) if self.manager is not None else None
        return await_stopped(self.catalog, job, me, STOP_WAIT_S)

    def _do_DropStreamJob(self, s: st.DropStreamJob) -> Result:
        db, name = self._names(s.name, "job")
        job = self.catalog.get_job(db, name)
        if job is None:
            if s.if_exists:
                return Result(f"streamjob {db}.{name} does not exist")
            self.catalog.require_job(db, name)
        if self.dry_run:
            self.catalog.drop_job(db, name, if_exists=True)
            return Result(f"streamjob {db}.{name} can be dropped")
        # A job some job manager runs is stopped first, so that nothing writes to its
        # checkpoints or sinks while they are purged (DESIGN §8: the catalog is the
        # control plane; the server that runs the job stops it).
        if job.desired_state != DesiredState.STOPPED:
            self.catalog.update_job(db, name, desired_state=DesiredState.STOPPED, uid=job.uid)
        if self.manager is not None:
            self.manager.stop(job.uid)
        elsewhere = self._await_stopped(job)
        if elsewhere is not None:
            raise JobError(f"streamjob {db}.{name} is still running in {elsewhere}: it was "
                           f"asked to stop, but its current micro-batch has not finished "
                           f"after {STOP_WAIT_S:g} s; nothing was dropped. DROP it again "
                           "once `streamjob status` shows it STOPPED")
        from ..checkpoint.backends import backend_for_job

        with backend_for_job(self.catalog, self.home, job) as backend:
            backend.purge(job)  # first: if its store is unreachable, DROP changes nothing
        savepoints = self._drop_savepoints(job)  # kept by the user, gone with the job
        self._drop_shadow(job)  # a shadow's scratch tables and folder (executor/shadow.py)
        # by uid, never by name (issue 28 point 5): the directory goes only if its
        # identity is this job's; one of another incarnation, or without identity, stays
        purged = identity.purge_owned(self.home.checkpoint_dir(db, name),
                                      self.home.checkpoint_root, job.uid)
        mine = purged.identity is not None and purged.identity.job_uid == job.uid
        self._purge_sink_markers(job, purged.identity.epoch if mine else "")
        dropped = self.catalog.drop_job(db, name, if_exists=True, uid=job.uid)
        again = "" if dropped is not None else (
            f"; a new streamjob {db}.{name} was created meanwhile and stays")
        kept, what = purged.kept, "checkpoints"
        if kept.startswith("warning"):  # its own line: the directory is left to the user
            kept, what = f"\n{kept}", "checkpoint records"
        if savepoints:  # kept by the user: say how many went
            what += f" and its {savepoints} savepoint{'' if savepoints == 1 else 's'}"
        return Result(f"streamjob {db}.{name} dropped; its {what} were purged{again}"
                      + (f"; {kept}" if kept and not kept.startswith("\n") else kept))

    def _refuse_rewind_skips(self, job, plan, batch_id: int) -> None:
        """Refuse taking ``job`` back to ``batch_id`` when its sink would skip the batches
        re-planned after it (a file table whose manifest lists later batches:
        :meth:`~streamjob.connectors.sinks.TableSink.on_rewind`), before anything changes.

        Raises:
            JobError: naming the table, its last batch and the ways out.
        """
        from ..connectors.sinks import table_sink

        table_sink(plan.sink, plan.sink_spec, marker=job.uid, job=job.qualified_name,
                   exactly_once=plan.guarantee == "exactly-once",
                   checkpointed=plan.props.checkpoint_enabled).on_rewind(batch_id)

    def _purge_sink_markers(self, job, epoch: str = "") -> None:
        """Remove the job's exactly-once markers from its sinks (those of the bare uid
        and of checkpoint epoch ``epoch``): the marker rows of SQL tables, the marker
        consumer group of Kafka tables."""
        from ..connectors.sinks import table_sink

        for kind, tdb, tname, role in job.dependencies:
            if role != "sink":
                continue
            table = self.catalog.get_table(tdb, tname)
            if table is None:
                continue
            spec = cspec.spec_of_table(table)
            for key in {job.uid, identity.marker_key(job.uid, epoch)}:
                table_sink(table, spec, marker=key, job=job.qualified_name,
                           exactly_once=True).purge_markers()


def _position(start_from: str) -> str:
    """A start position as a statement names it: EARLIEST, LATEST, TIMESTAMP n ms, or
    (given offsets, WITH STATE RESET) the offsets of its last committed checkpoint."""
    if start_from.startswith("{"):
        return "the offsets of its last committed checkpoint"
    return {"earliest": "EARLIEST", "latest": "LATEST"}.get(start_from,
                                                            f"TIMESTAMP {start_from} ms")


def check_sql_tables(plan) -> None:
    """The SQL tables a job writes (its sink, its dead-letter tables), and a Delta table
    it writes or streams from (:meth:`~streamjob.connectors.sources.StreamSource.check`),
    against their declarations, at START, so a mismatch is an error before the job
    starts (DESIGN §7).
    An unreachable database is not an error here: the job starts and fails over until
    the database answers.

    Raises:
        SchemaMismatch: an existing table lacks a declared column, has another type, an
            extra NOT NULL column, or no unique key on the upsert's primary key.
    """
    from ..connectors.kafka.dead_letter import DeadLetterWriter
    from ..connectors.sinks import table_sink
    from ..exceptions import ConnectorError

    sinks = [DeadLetterWriter(s.dead_letter).sink for s in plan.sources if s.dead_letter]
    sinks.append(table_sink(plan.sink, plan.sink_spec, marker="check", job=plan.qualified_name,
                            exactly_once=False, upsert=plan.output_mode == "update"))
    checks = [sink.check for sink in sinks]
    checks += [lambda src=src: src.source.check(src.stream.columns) for src in plan.sources]
    for check in checks:
        try:
            check()
        except ConnectorError as exc:
            log.warning("streamjob %s: %s (the job starts and retries)", plan.qualified_name, exc)


def what_drop_deletes(home, job, savepoints: int = 0) -> list[str]:
    """What DROP STREAMJOB deletes for ``job`` (a JobInfo), as phrases for a
    confirmation: its checkpoint directory (only when its identity names the job's uid,
    issue 28 point 5), its records in its checkpoint backend (of its uid), its
    ``savepoints`` savepoints (issue 30), its exactly-once markers in the tables it
    writes. What it wrote to its sinks stays."""
    from .. import properties as jp

    props = jp.values(job.properties, job.session_properties)
    db, name = job.database, job.name
    out = [f"its checkpoint directory {home.checkpoint_dir(db, name)} (if its "
           f"{identity.FILE_NAME} names this job)",
           f"its checkpoint records in the {props.checkpoint_backend} backend"]
    if savepoints:
        out.append(f"its {savepoints} savepoint{'' if savepoints == 1 else 's'} "
                   "(SHOW SAVEPOINTS FOR STREAMJOB lists them)")
    sinks = [f"{d}.{n}" for _kind, d, n, role in job.dependencies if role == "sink"]
    if sinks:
        out.append(f"its commit markers in {', '.join(sinks)} (the rows it wrote stay)")
    return out
