"""Savepoints (issue 30; docs/checkpoints.md): ``CREATE SAVEPOINT``, ``SHOW SAVEPOINTS``,
``DROP SAVEPOINT``, and what ``STOP ... WITH SAVEPOINT``, ``START ... FROM SAVEPOINT``,
``START ... FROM CHECKPOINT AT`` and ``DROP STREAMJOB`` do with them.

A savepoint is a checkpoint the user keeps: its files are copied out of the job's
checkpoint directory (:mod:`streamjob.checkpoint.savepoint`) and its row lives in the
catalog (:mod:`streamjob.catalog.savepoints`) whatever the job's checkpoint backend, so
neither retention nor expiry of any backend reaches it. Restoring one replaces the job's
checkpoint directory with the savepoint's files under a new checkpoint epoch: the sinks'
exactly-once markers are keyed by epoch (checkpoint/identity.py), so the batches after
the savepoint are written again rather than skipped as replays of the run that followed it.
``START ... FROM CHECKPOINT n`` rewinds the same way (:meth:`SavepointStatements._rewind`).

Roles (DESIGN §9, docs/security.md): a viewer may SHOW SAVEPOINTS; making, dropping and
restoring them is an operator's or the admin's.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt

from .. import shapes
from ..checkpoint import fingerprint, identity, savepoint, store
from ..exceptions import AccessDeniedError, CheckpointError, JobError, ObjectExistsError
from ..grammar import statements as st
from .result import Result
from streamjob.catalog.records import ACTIVE_STATUSES, CheckpointInfo, CheckpointStatus, DesiredState, Role


def _ts(value: _dt.datetime | None) -> str | None:
    return value.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if value else None


class SavepointStatements:
    """Savepoint statements of :class:`~streamjob.executor.Executor` (module docstring)."""

    def _may_change_savepoints(self, what: str) -> None:
        """Raise AccessDeniedError for a viewer (DESIGN §9: operators and the admin)."""
        if getattr(self, "role", Role.ADMIN) is Role.VIEWER:
            raise AccessDeniedError(f"a viewer may only SHOW SAVEPOINTS: {what} needs an "
                                    "operator")

    def _do_CreateSavepoint(self, s: st.CreateSavepoint) -> Result:
        self._may_change_savepoints("CREATE SAVEPOINT")
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        self._savepoint_free(job, s)
        if self.dry_run:
            self._scratch_savepoint(job, s.savepoint)
            return Result(f"savepoint {s.savepoint} of streamjob {db}.{name} can be taken")
        sp = self._take_savepoint(job, s.savepoint, stopped=False)
        return Result(f"savepoint {sp.name} of streamjob {db}.{name} taken: checkpoint "
                      f"{sp.checkpoint_id} of {_ts(sp.taken_at)} UTC, in {sp.location}",
                      object=f"{db}.{name}", data=shapes.savepoint_json(sp))

    def _do_ShowSavepoints(self, s: st.ShowSavepoints) -> Result:
        uid, title = None, "savepoints"
        if s.name is not None:
            db, name = self._names(s.name, "job")
            uid, title = self.catalog.require_job(db, name).uid, f"savepoints of {db}.{name}"
        found = self.catalog.list_savepoints(uid)
        rows = [(sp.job, sp.name, sp.checkpoint_id, _ts(sp.taken_at), _ts(sp.created_at),
                 sp.owner, sp.source_offsets) for sp in found]
        return Result(columns=("job", "savepoint", "checkpoint", "taken", "created", "by",
                               "source offsets"), rows=rows, title=title,
                      data=[shapes.savepoint_json(sp) for sp in found])

    def _do_DropSavepoint(self, s: st.DropSavepoint) -> Result:
        self._may_change_savepoints("DROP SAVEPOINT")
        db, name = self._names(s.name, "job")
        job = self.catalog.require_job(db, name)
        sp = self._require_savepoint(job, s)
        if self.dry_run:
            self.catalog.drop_savepoint(job.uid, sp.name)  # the scratch catalog's row
            return Result(f"savepoint {sp.name} of streamjob {db}.{name} can be dropped")
        savepoint.remove(sp.location, self.home.checkpoint_root, job.uid)
        self.catalog.drop_savepoint(job.uid, sp.name)
        return Result(f"savepoint {sp.name} of streamjob {db}.{name} dropped ({sp.location} "
                      "deleted)")

    # -- used by STOP, START and DROP STREAMJOB (executor/jobs.py)

    def _savepoint_free(self, job, s: st.Statement) -> None:
        """Refuse a savepoint name the job uses already (before anything changes), or a
        job without durable checkpoints."""
        from .. import properties as jp

        name = s.savepoint
        if not jp.values(job.properties, job.session_properties).checkpoint_enabled:
            raise JobError(f"streamjob {job.qualified_name} has morphling.job.enable.checkpoint"
                           "=false, so it keeps no checkpoint to make a savepoint of")
        if self.catalog.get_savepoint(job.uid, name) is not None:
            pos = s.where("savepoint")
            raise ObjectExistsError(f"streamjob {job.qualified_name} already has a savepoint "
                                    f"{name}; DROP SAVEPOINT {name} FOR STREAMJOB "
                                    f"{job.qualified_name} first, or choose another name",
                                    pos.line, pos.column, name)

    def _require_savepoint(self, job, s: st.Statement, name: str | None = None):
        """The job's savepoint ``name`` (default ``s.savepoint``), or JobError at it,
        listing the job's savepoints."""
        name = name or s.savepoint
        found = self.catalog.get_savepoint(job.uid, name)
        if found is None:
            have = [sp.name for sp in self.catalog.list_savepoints(job.uid)]
            pos = s.where("savepoint")
            raise JobError(f"streamjob {job.qualified_name} has no savepoint {name}; "
                           + (f"it has: {', '.join(have)}" if have else "it has none"),
                           pos.line, pos.column, name)
        return found

    def _scratch_savepoint(self, job, name: str) -> None:
        """A dry run (``streamjob check``): record the savepoint in the scratch catalog
        only (of its newest checkpoint there, else of batch 0), so that the script's
        later statements about it are checked; no file is read or copied."""
        latest = self.catalog.latest_checkpoint(job.uid)
        ckdir = self.home.checkpoint_dir(job.database, job.name)
        self.catalog.add_savepoint(
            job.uid, name, epoch="", checkpoint_id=latest.checkpoint_id if latest else 0,
            fingerprint=None, source_offsets=latest.source_offsets if latest else None,
            location=savepoint.folder(ckdir, name),
            taken_at=(latest.ended_at or latest.started_at) if latest
            else _dt.datetime.now(_dt.timezone.utc))

    def _take_savepoint(self, job, name: str, stopped: bool):
        """Copy the job's newest retained checkpoint into savepoint ``name`` and record
        it; for a stopped job (``stopped``) its last committed batch is recorded first if
        its run ended before it was (checkpoint/recorder.py ``recover_unrecorded``).

        Raises:
            CheckpointError: no checkpoint yet, the directory is another job's, a copy
                failed (the partial folder is removed).
        """
        from .. import properties as jp
        from ..checkpoint.backends import backend_for_job
        from ..checkpoint.recorder import recover_unrecorded

        ckdir = self.home.checkpoint_dir(job.database, job.name)
        ident = identity.read(ckdir)
        if ident is not None and ident.job_uid != job.uid:
            identity.prepare(ckdir, job, None)  # raises: another incarnation's directory
        epoch = ident.epoch if ident is not None else ""
        target = savepoint.folder(ckdir, name)
        with backend_for_job(self.catalog, self.home, job) as backend:
            if stopped:
                fp = fingerprint.stored(ckdir)
                recover_unrecorded(backend, job, ckdir,
                                   jp.values(job.properties, job.session_properties)
                                   .checkpoints_retained, fp.encode() if fp else None)
            info, _files = savepoint.take_newest(ckdir, target, lambda: backend.latest(job),
                                                 job.uid, epoch, self.home.checkpoint_root)
        try:
            return self.catalog.add_savepoint(
                job.uid, name, epoch=epoch, checkpoint_id=info.checkpoint_id,
                fingerprint=info.fingerprint, source_offsets=info.source_offsets,
                location=target, taken_at=info.ended_at or info.started_at,
                owner=getattr(self, "principal", None))
        except Exception:
            savepoint.remove(target, self.home.checkpoint_root, job.uid)
            raise

    def _restore_savepoint(self, s: st.StartStreamJob, job, plan, sp=None) -> str:
        """START ... FROM SAVEPOINT sp (or the savepoint FROM CHECKPOINT AT picked): the
        job's checkpoint directory and backend records are replaced by the savepoint's,
        under a new checkpoint epoch (module docstring). The files are copied into
        ``<dir>.restoring`` first and swapped in by renames at the end, so that a restore
        killed midway leaves the old directory, or none (refused at START), never a
        partial one. Refused while the job runs, for a savepoint whose files are missing
        (naming them), and for a changed query (checkpoint/fingerprint.py, as any start)."""
        sp = sp or self._require_savepoint(job, s, s.from_savepoint)
        self._refuse_running(job, f"starting it from savepoint {sp.name}")
        # a dry run checks the files of a savepoint that has a folder (not one the same
        # script made, in the scratch catalog only)
        gone = savepoint.missing(sp.location) if not self.dry_run or store.holds_anything(
            sp.location) else []
        if gone == [sp.location]:
            raise CheckpointError(f"savepoint {sp.name} of streamjob {job.qualified_name} "
                                  f"cannot be restored: its folder {sp.location} is missing "
                                  f"or empty; DROP SAVEPOINT {sp.name} FOR STREAMJOB "
                                  f"{job.qualified_name} forgets it")
        if gone:
            more = f" (and {len(gone) - 1} more)" if len(gone) > 1 else ""
            raise CheckpointError(f"savepoint {sp.name} of streamjob {job.qualified_name} "
                                  f"cannot be restored: {gone[0]} is missing{more}")
        if getattr(s, "state_reset", False):
            return self._savepoint_state_reset(s, job, plan, sp)
        changed = self._savepoint_change(job, plan, sp)  # raises: incompatible, unplanned
        what = f" from savepoint {sp.name} (checkpoint {sp.checkpoint_id}){changed}"
        if self.dry_run:
            return what

        def fill(staging):  # the savepoint's files; a changed query's fingerprint accepted
            savepoint.restore_into(sp.location, staging)
            if changed:
                fingerprint.plan_change(staging, fingerprint.of_plan(plan))

        def record(backend):  # the savepoint's checkpoint, the only one recorded
            backend.purge(job)
            backend.record(job, CheckpointInfo(
                job_uid=job.uid, checkpoint_id=sp.checkpoint_id, started_at=sp.taken_at,
                ended_at=sp.taken_at, duration_ms=0, source_offsets=sp.source_offsets,
                input_rows=0, state_rows=None, status=CheckpointStatus.COMPLETED,
                fingerprint=sp.fingerprint), retained=plan.props.checkpoints_retained)

        new = self._rewind(job, plan, sp.checkpoint_id,
                           fill, record, "restore the savepoint")
        return f"{what}; checkpoint epoch {new.epoch}"

    def _rewind(self, job, plan, checkpoint_id: int, fill, record, doing: str,
                adopt: bool = False):
        """Take ``job`` back to checkpoint ``checkpoint_id`` under a new checkpoint epoch:
        the one way both START ... FROM SAVEPOINT and START ... FROM CHECKPOINT n rewind
        (module docstring; docs/checkpoints.md "Restoring"). The sinks' exactly-once
        markers are keyed by epoch (checkpoint/identity.py), so every batch re-planned
        after ``checkpoint_id`` reaches the sink rather than being skipped as a replay of
        the run that followed it; the old epoch's markers are purged. Rows written after
        the point stay in the sink (as with Flink).

        ``fill(staging)`` copies the checkpoint's files into the new directory
        ``<dir>.restoring`` (which holds the new identity); ``record(backend)`` makes the
        job's checkpoint backend record ``checkpoint_id`` as the newest checkpoint. The
        new directory is swapped in by two renames at the end, so that a rewind killed
        midway leaves the old directory, or none (refused at START), never a partial
        one. A directory without identity is refused (``doing`` ends the message), or,
        with ``adopt``, adopted as START adopts Spark's logs from before identities
        (checkpoint/identity.py step 2).

        Returns:
            the new :class:`~streamjob.checkpoint.identity.Identity`.

        Raises:
            JobError: a file table would skip the re-planned batches (``on_rewind``).
            CheckpointError: the directory is another job's or has no identity (without
                ``adopt``), or a file cannot be copied or renamed.
        """
        from ..checkpoint.backends import backend_for_plan

        self._refuse_rewind_skips(job, plan, checkpoint_id)
        ckdir = self.home.checkpoint_dir(job.database, job.name)
        old = identity.read(ckdir)
        if old is not None and old.job_uid != job.uid:
            identity.prepare(ckdir, job, None)  # raises: the directory is another job's
        if old is None and store.holds_anything(ckdir) and adopt:
            old = identity.prepare(ckdir, job, None)  # logs from before identities
        elif old is None and store.holds_anything(ckdir):
            raise CheckpointError(
                f"checkpoint directory {ckdir} has no identity ({identity.FILE_NAME}), so "
                f"streamjob cannot tell whether it is {job.qualified_name}'s and does not "
                f"replace it: move it away, then {doing}")
        root = self.home.checkpoint_root
        staging, replaced = ckdir + ".restoring", ckdir + ".replaced"
        if old is None and not store.holds_anything(ckdir):  # killed between the renames?
            aside = identity.read(replaced)
            old = aside if aside is not None and aside.job_uid == job.uid else None
        identity.purge_owned(staging, root, job.uid)  # of a rewind killed midway
        # 1. beside the directory: a new epoch's identity, then the checkpoint's files
        new = identity.start_over(staging, job, None)
        fill(staging)
        # 2. the backend records the checkpoint (killed here: the old directory still
        #    runs, with the old epoch)
        with backend_for_plan(self.catalog, self.home, plan) as backend:
            record(backend)
        # 3. the swap, two renames (killed between them: the directory is missing while
        #    the backend records a checkpoint, which START refuses, naming the ways out;
        #    the old directory stays in <dir>.replaced until a rewind completes)
        if store.holds_anything(ckdir):
            identity.purge_owned(replaced, root, job.uid)  # of a rewind killed midway
            store.rename(ckdir, replaced)
        else:
            identity.purge_owned(ckdir, root, job.uid)  # an empty directory, or none
        store.rename(staging, ckdir)
        identity.purge_owned(replaced, root, job.uid)
        self._purge_sink_markers(job, old.epoch if old else "")
        return new

    def _savepoint_change(self, job, plan, sp) -> str:
        """How the job's query (planned as ``plan``) changed since savepoint ``sp`` was
        taken: "" when it is the query that took it; else the change is classified as
        ALTER STREAMJOB ... AS classifies it (planner/upgrade.py, then Spark's state
        schema check on a copy of the savepoint, executor/state_trial.py) against the
        query version whose logic took the savepoint, and a stateless or compatible one
        returns a note for the result.

        Raises:
            JobError: an incompatible change (the reason, operator and column, and the
                ways out); ChangedLogic: no query version of the job took the savepoint
                (an unplanned change, refused as at any start).
        """
        from ..exceptions import ChangedLogic, StreamJobError
        from ..planner.upgrade import ChangeKind, classify

        try:
            fingerprint.check(sp.location, plan)
            return ""
        except ChangedLogic as refused:
            taken = fingerprint.stored(sp.location)
            found = None
            for v in reversed(self.catalog.list_job_versions(job.uid)):
                try:
                    old = self._plan(job.database, job.name, v.query, v.properties,
                                     job.session_properties)
                except StreamJobError:
                    continue  # a version that no longer plans (a dropped stream...)
                if taken is not None and fingerprint.of_plan(old).query == taken.query:
                    found = (v.version, old)
                    break
            if found is None:
                raise refused
        version, old = found
        change = classify(old, plan)
        if change.kind is ChangeKind.COMPATIBLE and not self.dry_run:
            change, _note = self._judge_savepoint_state(job, plan, change, sp)
        if change.kind is ChangeKind.INCOMPATIBLE:
            reasons = "; ".join(change.reasons)
            raise JobError(
                f"savepoint {sp.name} of streamjob {job.qualified_name} was taken by query "
                f"version {version}, and the change to its query since is incompatible: "
                f"{reasons}. Choose: START STREAMJOB {job.qualified_name} FROM EARLIEST or "
                f"FROM TIMESTAMP 'yyyy-MM-dd HH:mm:ss' (a new checkpoint epoch), START "
                f"STREAMJOB {job.qualified_name} FROM SAVEPOINT {sp.name} WITH STATE RESET "
                "(the savepoint's offsets, the state rebuilt), or ALTER STREAMJOB "
                f"{job.qualified_name} AS (the query of version {version}) and start from "
                "the savepoint")
        return f" (taken by query version {version}: {change.summary()})"

    def _savepoint_state_reset(self, s: st.StartStreamJob, job, plan, sp) -> str:
        """START ... FROM SAVEPOINT sp WITH STATE RESET: a new checkpoint epoch whose
        streams start at the savepoint's offsets (those of its checkpoint's committed
        batch), with empty state, whatever query took it (docs/upgrades.md). Only Kafka
        streams can start at given offsets.

        Raises:
            JobError: a stream of another kind (at WITH STATE RESET); the job runs.
        """
        from .upgrade import committed_offsets

        pos = s.where("state_reset")
        other = [f"{src.stream.qualified_name} ({src.source.identifier})"
                 for src in plan.sources if src.source.identifier != "kafka"]
        if other:
            raise JobError(f"streamjob {job.qualified_name}: WITH STATE RESET starts each "
                           "stream at the savepoint's offsets, which only Kafka streams can: "
                           f"{', '.join(other)} cannot", pos.line, pos.column)
        start = committed_offsets(sp.location) if not self.dry_run else "{}"
        if start is None:
            raise CheckpointError(f"savepoint {sp.name} of streamjob {job.qualified_name} "
                                  "holds no committed batch whose offsets could be kept")
        return (f" from the offsets of savepoint {sp.name} (checkpoint {sp.checkpoint_id}) "
                "with its state rebuilt:" + self._start_over(
                    dataclasses.replace(s, start_from=start), job, plan))

    def _judge_savepoint_state(self, job, plan, change, sp):
        """Spark's state schema check of ``plan`` on a copy of savepoint ``sp``
        (:func:`~streamjob.executor.state_trial.trial_of_savepoint`); ``(class, note)``
        as :meth:`~streamjob.executor.upgrade.UpgradeStatements._judge_state`."""
        import dataclasses as _dc

        from ..planner.upgrade import stateful_operators
        from .state_trial import trial_of_savepoint

        spark = self.spark() if getattr(self, "spark", None) is not None else None
        if spark is None:
            return change, ""
        refused = trial_of_savepoint(spark, self.home, job, plan, stateful_operators(plan), sp)
        return (refused, "") if refused is not None else (_dc.replace(change, judge="spark"), "")

    def _restore_at(self, s: st.StartStreamJob, job, plan) -> str:
        """START ... FROM CHECKPOINT AT 'ts': the newest retained checkpoint or savepoint
        that completed at or before ``ts`` (a retained checkpoint wins a tie: it needs no
        copy). Before the oldest: JobError naming the oldest."""
        from ..checkpoint.backends import CatalogBackend, backend_for_plan

        at = _dt.datetime.fromtimestamp(s.checkpoint_at / 1000, _dt.timezone.utc)
        where = plan.props.checkpoint_backend
        if self.dry_run and where != "catalog":  # a dry run contacts no backend
            return (f" from the newest checkpoint or savepoint at or before {_ts(at)} UTC "
                    f"(not checked: its checkpoints are recorded in {where})")
        with (CatalogBackend(self.catalog) if self.dry_run
              else backend_for_plan(self.catalog, self.home, plan)) as backend:
            checkpoints = backend.list(job)
        points = [(c.ended_at or c.started_at, 1, "checkpoint", c) for c in checkpoints]
        points += [(sp.taken_at, 0, "savepoint", sp) for sp in self.catalog.list_savepoints(job.uid)]
        points.sort(key=lambda p: (p[0], p[1]))
        before = [p for p in points if p[0] <= at]
        if not before:
            pos = s.where("timestamp")
            if not points:
                raise JobError(f"streamjob {job.qualified_name} has no retained checkpoint "
                               "or savepoint", pos.line, pos.column)
            when, _, kind, oldest = points[0]
            which = (f"checkpoint {oldest.checkpoint_id}" if kind == "checkpoint"
                     else f"savepoint {oldest.name} (checkpoint {oldest.checkpoint_id})")
            raise JobError(f"no retained checkpoint or savepoint of streamjob "
                           f"{job.qualified_name} is at or before {_ts(at)} UTC: the oldest "
                           f"is {which} of {_ts(when)} UTC", pos.line, pos.column)
        when, _, kind, chosen = before[-1]
        if kind == "savepoint":
            return self._restore_savepoint(s, job, plan, chosen) + f" (of {_ts(when)} UTC)"
        fingerprint.check(self.home.checkpoint_dir(job.database, job.name), plan)
        return (self._restore(dataclasses.replace(s, from_checkpoint=chosen.checkpoint_id),
                              job, plan) + f" (of {_ts(when)} UTC)")

    def _refuse_running(self, job, doing: str) -> None:
        """JobError while the job runs (here, or desired RUNNING and active)."""
        running = self.manager is not None and job.uid in getattr(self.manager, "runners", {})
        if running or (job.desired_state == DesiredState.RUNNING and job.status in ACTIVE_STATUSES):
            raise JobError(f"streamjob {job.qualified_name} is running; STOP it before {doing}")

    def _drop_savepoints(self, job) -> int:
        """DROP STREAMJOB: delete the job's savepoint folders (their rows go with the
        job's); returns how many savepoints it had."""
        found = self.catalog.list_savepoints(job.uid)
        for sp in found:
            savepoint.remove(sp.location, self.home.checkpoint_root, job.uid)
            self.catalog.drop_savepoint(job.uid, sp.name)
        folder = self.home.checkpoint_dir(job.database, job.name) + savepoint.SUFFIX
        if found and not store.holds_anything(folder):  # the job's savepoint folder, empty now
            store.purge(folder, self.home.checkpoint_root)
        return len(found)
