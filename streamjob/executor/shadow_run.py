"""A shadow run (issue 30 point 4; docs/upgrades.md "Shadow runs"): a job's new query
run beside the live job from its latest checkpoint into scratch sinks, then the old
query over the very same input range, and the two outputs compared.

Where its files live: ``<root>/<db>/<job>.shadow/`` beside the job's checkpoints (a job
name holds no ``.``, so the folder is never another job's directory), holding

- ``base/``: a copy of the live job's newest retained checkpoint, taken as a savepoint
  is taken while the job runs (:func:`streamjob.checkpoint.savepoint.take_newest`:
  pinned against trimming, offsets and state);
- ``new/``: the new query's checkpoint, begun as a copy of ``base`` under a new Spark
  query id (Spark refuses two active queries of one id, and would stop the live one,
  ``spark.sql.streaming.stopActiveRunOnRestart``);
- ``old/``: the old query's replay checkpoint, the same copy under another id;
- ``shadow.json``: the shadow's record (the new query, its properties, its state) and,
  once compared, its report.

How the two outputs cover the same input: the new query runs as a streaming query
(the live job's trigger) into its scratch copy of the sink (a SQL table
``<table>__shadow_<job>``, a topic, a directory or a Delta table of that name:
:mod:`streamjob.connectors.scratch`) with
exactly-once markers of its own, until ``shadow.batches`` micro-batches that read input
ran or ``shadow.duration`` passed; the last batch the scratch sink committed, ``m``,
closes the range (a batch cut by the stop is rolled back with its transaction). Then
the old query replays batches ``c+1 .. m`` (``c`` the copied checkpoint) one at a time:
each new batch's offset-log entry is copied into ``old/`` and the old query started
once (``Trigger.Once``): Spark re-runs an offset-logged batch without a commit with
exactly its logged offsets (``MicroBatchExecution.populateStartOffsets``), so both
queries read the same records, batch by batch, from the same state. A checkpoint without
state (a stateless old query) is replayed in one start: batch ``c+1`` logged with the end
offsets of ``m`` reads the same records at once. The old query's rows
go to the second copy (``...__old``). Both copies then hold only what each query wrote
for that range; each is read back by its kind, and
:func:`~streamjob.executor.shadow_diff.compare` diffs them.

Both runs are Spark queries of this process's Spark (the server's, or ``streamjob
run``'s), in session clones as the job's own query; they hold no lease and never
write to a live sink. The scratch copies are of the live sink's kind; a kind without
copies (the console) is refused before anything runs.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import uuid
from ..checkpoint import savepoint, store
from ..checkpoint.store import join_uri
from ..exceptions import JobError, StreamJobError

log = logging.getLogger(__name__)

__all__ = ["SUFFIX", "REPORT", "Limits", "folder", "limits", "read_record", "write_record",
           "scratch_copies", "drop_scratch", "run_shadow", "cleanup", "recorded_copies"]

SUFFIX = ".shadow"
REPORT = "shadow.json"
#: Seconds a stop waits for the shadow's running micro-batch to end before it cuts it.
STOP_WAIT_S = 30.0
#: Seconds between looks at a stopping shadow's trigger (one that finds no input ends
#: without a progress report to wake the wait).
TRIGGER_CHECK_S = 0.1


@dataclasses.dataclass(frozen=True)
class Limits:
    """How long a shadow runs: ``batches`` micro-batches that read input (None: no
    count), ``duration_ms`` (None: none), bounded by ``timeout_ms``."""

    batches: int | None
    duration_ms: int | None
    timeout_ms: int

    @property
    def bound_ms(self) -> int:
        """The run's longest duration (ms)."""
        return self.duration_ms if self.duration_ms is not None else self.timeout_ms


def limits(pairs: dict[str, str]) -> Limits:
    """The :class:`Limits` of a shadow's JOBPROPERTIES (the ``shadow.*`` registry,
    :data:`streamjob.properties.SHADOW`): ``shadow.duration`` alone runs for that long;
    else ``shadow.batches`` (default 5) micro-batches, each bound capped by
    ``shadow.timeout``.

    Raises:
        PropertyError: an unknown name (the nearest suggested) or a bad value.
    """
    from ..properties import SHADOW

    checked = SHADOW.validate(pairs, "shadow property")

    def value(name: str):
        prop = SHADOW.get(name)
        return prop.parse(checked[name]) if name in checked else prop.default

    duration = value("shadow.duration")
    batches = value("shadow.batches") if "shadow.batches" in checked or duration is None else None
    return Limits(batches=batches, duration_ms=duration, timeout_ms=value("shadow.timeout"))


def folder(home, database: str, name: str) -> str:
    """The shadow folder of job ``database.name`` (module docstring)."""
    return home.checkpoint_dir(database, name) + SUFFIX


def read_record(location: str) -> dict | None:
    """The shadow record in ``location`` (:func:`folder`), or None when there is none."""
    text = store.read_file(join_uri(location, REPORT))
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def write_record(location: str, record: dict) -> None:
    """Write the shadow record (JSON) into ``location``."""
    store.write_file(join_uri(location, REPORT), json.dumps(record, indent=1, default=str))


def scratch_copies(new_plan, old_plan, job_name: str) -> tuple:
    """``(new copy, old copy)``: the :class:`~streamjob.connectors.scratch.Scratch`
    copies the new query writes (of its sink) and the old query's replay writes (of the
    old sink): same kind and columns, their own names, never the live sink.

    Raises:
        JobError: a sink kind without scratch copies (the console; a file table on a
            location this process cannot read).
    """
    from ..connectors.scratch import scratch_copies as copies

    new, _ = copies(new_plan.sink_spec, job_name)
    _, old = copies(old_plan.sink_spec, job_name)
    return new, old


def _sink(table, copy, plan, marker: str, job: str):
    from ..connectors.sinks import table_sink

    scratch_table = dataclasses.replace(table, name=f"{table.name}__shadow_{job.rsplit('.', 1)[-1]}")
    return table_sink(scratch_table, copy.spec, marker=marker, job=job, exactly_once=True,
                      upsert=plan.output_mode == "update", checkpointed=True)


def drop_scratch(copies) -> list[str]:
    """Drop the scratch ``copies`` (tables with their commit markers, topics,
    directories); returns the names of those that existed.

    Raises:
        ConnectorError: a database or broker cannot be reached, a directory not removed.
    """
    return [name for name in (copy.drop() for copy in copies) if name]


def _new_query_id(ckdir: str) -> None:
    """Give the checkpoint copy ``ckdir`` its own Spark query id (module docstring)."""
    store.write_file(join_uri(ckdir, "metadata"), json.dumps({"id": str(uuid.uuid4())}))


#: Spark's file sink compacts its manifest (``_spark_metadata``) at every 10th batch
#: (``spark.sql.streaming.fileSink.log.compactInterval``), reading the entry of every
#: batch before it; a scratch folder's manifest begins at the live checkpoint's next
#: batch, so that read failed (BATCH_METADATA_NOT_FOUND) when a shadow crossed such a
#: batch. A shadow's session never compacts (Spark's check: ``(batch + 1) % interval ==
#: 0``), and its scratch folders are dropped after the comparison.
NO_COMPACTION = {"spark.sql.streaming.fileSink.log.compactInterval": str(2 ** 31 - 1)}


def _session(spark_root, plan):
    """The session of a shadow's query (either side): the job's Spark settings, and
    :data:`NO_COMPACTION` for its scratch file sinks."""
    from .. import properties as jp
    from ..spark.session import job_session

    return job_session(spark_root, {**jp.spark_settings(plan.props), **NO_COMPACTION},
                       plan.data_sources)


def _spark_error(exc: BaseException) -> str:
    from ..manager.summary import error_summary

    return error_summary(exc)


class _Batches:
    """Counts the micro-batches of one query that read input (a progress listener's
    callback) and wakes the waiter at each."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.with_input = 0
        self.last_batch = -1
        self.query_id: str | None = None

    def on_progress(self, progress) -> None:
        if self.query_id is not None and str(progress.id) != self.query_id:
            return
        with self.cond:
            self.last_batch = max(self.last_batch, int(progress.batchId))
            if (progress.numInputRows or 0) > 0:
                self.with_input += 1
            self.cond.notify_all()


def _run_new(spark_root, plan, ckdir: str, sink, lim: Limits, job: str) -> dict:
    """Run the new query from ``ckdir`` into ``sink`` until ``lim``; returns
    ``{"batches_with_input": n, "seconds": s, "stopped": why}``.

    Raises:
        JobError: the query failed (Spark's reason in one line: an incompatible state
            among others).
    """
    from ..planner.bind import bind_job
    from ..spark.listener import ProgressListener
    from ..spark.query import start_query

    session = _session(spark_root, plan)
    counter = _Batches()
    listener = ProgressListener(job + " (shadow)", on_progress=(counter.on_progress,))
    session.streams.addListener(listener)
    started = time.monotonic()
    query = None
    try:
        bound = bind_job(plan)
        bound = dataclasses.replace(bound, name=f"{bound.name}__shadow")
        query = start_query(session, bound, ckdir, sink)
        counter.query_id = str(query.id)
        deadline = started + lim.bound_ms / 1000
        why = "duration" if lim.duration_ms is not None else "timeout"
        with counter.cond:
            while time.monotonic() < deadline:
                if lim.batches is not None and counter.with_input >= lim.batches:
                    why = "batches"
                    break
                if not query.isActive:
                    break
                counter.cond.wait(min(1.0, max(0.0, deadline - time.monotonic())))
        if not query.isActive and query.exception() is not None:
            raise JobError(f"the shadow of {job} failed: {_spark_error(query.exception())}")
        _stop_between_batches(query, counter)
        return {"batches_with_input": counter.with_input,
                "seconds": round(time.monotonic() - started, 3), "stopped": why}
    except StreamJobError:
        raise
    except Exception as exc:  # noqa: BLE001 - Spark's errors become one sentence
        raise JobError(f"the shadow of {job} failed: {_spark_error(exc)}") from None
    finally:
        if query is not None:
            try:
                query.stop()
            except Exception:  # noqa: BLE001 - already stopped
                pass
        try:
            session.streams.removeListener(listener)
        except Exception:  # noqa: BLE001 - a dead JVM has none left
            pass


def _trigger_active(query) -> bool:
    """True while ``query``'s trigger runs (Spark's ``isTriggerActive``: looking for
    input, or a micro-batch running)."""
    try:
        return bool(query.isActive and query.status.get("isTriggerActive"))
    except Exception:  # noqa: BLE001 - it died meanwhile
        return False


def _stop_between_batches(query, counter: "_Batches") -> None:
    """Stop ``query`` at a micro-batch boundary: at once when no trigger runs, else once
    the running one ends: with a micro-batch (its progress report wakes the wait) or
    without one (no input: Spark reports no progress then, so the trigger's state is
    looked at every :data:`TRIGGER_CHECK_S`); bounded by :data:`STOP_WAIT_S`. A batch
    that began meanwhile is cut; its sink transaction is rolled back, so the range ends
    at the last batch the scratch sink committed."""
    if _trigger_active(query):
        deadline = time.monotonic() + STOP_WAIT_S
        with counter.cond:
            seen = counter.last_batch
            while counter.last_batch <= seen and time.monotonic() < deadline:
                counter.cond.wait(TRIGGER_CHECK_S)
                if not _trigger_active(query):
                    break
    query.stop()


def _replay_old(spark_root, plan, ckdir: str, new_ckdir: str, first: int, last: int,
                sink, job: str, stateless: bool) -> int:
    """Replay batches ``first .. last`` of ``new_ckdir``'s offset log with the old query
    from ``ckdir`` into ``sink`` (module docstring): one Trigger.Once start per batch,
    so that a stateful query's state evolves batch by batch as the live job's did. A
    ``stateless`` query (its checkpoint holds no state) replays the whole range as one
    batch: batch ``first`` with the end offsets of ``last``, the same records at once.
    Returns the number of Spark starts.

    Raises:
        JobError: a replay failed (Spark's reason in one line).
    """
    from ..planner.bind import bind_job
    from ..spark.query import result_frame

    session = _session(spark_root, plan)
    bound = bind_job(plan)
    bound = dataclasses.replace(bound, name=f"{bound.name}__shadow_old")
    plan_of = [(first, last)] if stateless else [(b, b) for b in range(first, last + 1)]
    for batch, ends_at in plan_of:
        store.copy_file(join_uri(new_ckdir, f"offsets/{ends_at}"), join_uri(ckdir, f"offsets/{batch}"))
        try:
            df = result_frame(session, bound)
            writer = (df.writeStream.queryName(bound.name).outputMode(bound.output_mode)
                      .option("checkpointLocation", ckdir).trigger(once=True))
            query = sink.attach(writer).start()
            query.awaitTermination()
        except Exception as exc:  # noqa: BLE001 - Spark's errors become one sentence
            raise JobError(f"the old query of {job} could not replay batch {batch}: "
                           f"{_spark_error(exc)}") from None
        if not store.is_committed(ckdir, batch):
            raise JobError(f"the old query of {job} did not replay batch {batch}")
    return len(plan_of)


def _offsets(ckdir: str, batch: int) -> dict:
    """The source offsets of offset-log entry ``batch`` as ``{source index: offset}``
    (Spark's text: a version line, the metadata line, one line per source)."""
    text = store.read_file(join_uri(ckdir, f"offsets/{batch}")) or ""
    lines = text.splitlines()[2:]
    out = {}
    for i, line in enumerate(lines):
        try:
            out[str(i)] = json.loads(line)
        except ValueError:
            out[str(i)] = line
    return out


def run_shadow(spark_root, home, catalog, job, old_plan, new_plan, lim: Limits,
               location: str, state: str) -> dict:
    """Run a shadow of ``job`` (module docstring) and return its report.

    Args:
        spark_root: the process's SparkSession (the job manager's).
        old_plan / new_plan: the live job's plan and the new query's (both checked
            against the admin's policy by the caller, as CREATE STREAMJOB does).
        lim: how long the new query runs.
        location: the shadow folder (:func:`folder`); emptied first.
        state: ``"kept"`` when the new query's state is compatible (the copy's state
            is used), else the caller refused already.

    Returns:
        the report: ``{"checkpoint": c, "batches": [c+1, m] or None, "from": offsets,
        "to": offsets, "run": {...}, "old_table", "new_table" (the copies' names:
        ``table t__shadow_j``, ``topic ...``, ``directory ...``), "comparison":
        compare(...)}`` (:func:`~streamjob.executor.shadow_diff.compare`).

    Raises:
        CheckpointError: the job has no checkpoint yet, or copying failed.
        JobError: a query failed; ConnectorError: a scratch copy's database, broker or
            directory.
    """
    from ..checkpoint import identity
    from ..checkpoint.backends import backend_for_job
    from .shadow_diff import compare

    ckdir = home.checkpoint_dir(job.database, job.name)
    root = home.checkpoint_root
    base, new_dir, old_dir = (join_uri(location, p) for p in ("base", "new", "old"))
    for d in (base, new_dir, old_dir):
        if store.holds_anything(d):
            store.purge(d, root)
    ident = identity.read(ckdir)
    epoch = ident.epoch if ident is not None else ""
    with backend_for_job(catalog, home, job) as backend:
        info, _files = savepoint.take_newest(ckdir, base, lambda: backend.latest(job),
                                             job.uid, epoch, root)
    c = info.checkpoint_id
    for d in (new_dir, old_dir):
        savepoint.restore_into(base, d)
        _new_query_id(d)
    new_copy, old_copy = scratch_copies(new_plan, old_plan, job.name)
    drop_scratch([new_copy, old_copy])  # a shadow before this one's leftovers
    new_copy.create()
    old_copy.create()
    new_sink = _sink(new_plan.sink, new_copy, new_plan, f"{job.uid}:shadow", job.qualified_name)
    old_sink = _sink(old_plan.sink, old_copy, old_plan, f"{job.uid}:shadow-old",
                     job.qualified_name)
    try:
        new_sink.prepare()
        old_sink.prepare()
        run = _run_new(spark_root, new_plan, new_dir, new_sink, lim, job.qualified_name)
        last = (new_copy.last_batch(new_sink) if new_copy.marks_batches
                else _last_commit(new_dir, c))
        batches = None
        if last is not None and last > c:
            stateless = not store.holds_anything(join_uri(base, "state"))
            run["old_replay_starts"] = _replay_old(spark_root, old_plan, old_dir, new_dir,
                                                   c + 1, last, old_sink, job.qualified_name,
                                                   stateless)
            batches = [c + 1, last]
        key = list(new_copy.key) if new_copy.key == old_copy.key else []
        comparison = compare(old_copy.read_rows(old_plan.sink.columns),
                             new_copy.read_rows(new_plan.sink.columns), key)
    finally:
        for sink in (new_sink, old_sink):
            try:
                sink.purge_markers()  # the markers of a scratch copy serve this run only
            except Exception as exc:  # noqa: BLE001 - a leftover marker is harmless
                log.warning("shadow of %s: markers not removed: %s", job.qualified_name, exc)
            sink.close()
    return {"checkpoint": c, "batches": batches, "state": state,
            "from": _offsets(base, c),
            "to": _offsets(new_dir, batches[1]) if batches else _offsets(base, c),
            "source_offsets_from": info.source_offsets,
            "run": run, "old_table": old_copy.name, "new_table": new_copy.name,
            "old_sink": old_plan.sink.qualified_name, "new_sink": new_plan.sink.qualified_name,
            "comparison": comparison}


def cleanup(location: str, root: str) -> None:
    """Remove the shadow folder ``location`` (inside the checkpoint ``root``)."""
    if store.holds_anything(location):
        store.purge(location, root)


def recorded_copies(catalog, record: dict) -> list:
    """The scratch copies of a shadow record: those of the catalog tables it copied
    (``new_sink``, ``old_sink``) for its job, derived again from the table (addresses
    are never written to the record: a URL may hold a password). A table since dropped
    is skipped."""
    from ..connectors import spec as cspec
    from ..connectors.scratch import scratch_copies as copies

    out = []
    job = (record.get("job") or "").rpartition(".")[2]
    for side, sink_key in ((0, "new_sink"), (1, "old_sink")):
        qname = record.get(sink_key)
        if not qname or not job:
            continue
        db, _, name = qname.partition(".")
        table = catalog.get_table(db, name)
        if table is None:
            continue
        try:
            out.append(copies(cspec.spec_of_table(table), job)[side])
        except JobError:  # a kind without copies: nothing was made
            continue
    return out


def _last_commit(ckdir: str, first: int) -> int | None:
    """The last batch id the checkpoint ``ckdir`` committed after batch ``first`` (its
    copied start), or ``first`` itself when none followed."""
    last = first
    while store.is_committed(ckdir, last + 1):
        last += 1
    return last
