"""Spark's own state schema check, run before a stateful switch (issue 30 point 1;
docs/upgrades.md "Spark is the judge").

The static classifier (:func:`streamjob.planner.upgrade.classify`) reads the planned SQL.
It cannot see types: ``sum(v)`` over ``v`` that became a double in a subquery, or a
``group by k`` whose alias ``k`` changed its type, read the same as before, but the
state holds a ``bigint`` buffer and an ``int`` key. Spark's
``StateSchemaCompatibilityChecker`` compares each stateful operator's stored key and
value schemas with the new query's when the first micro-batch of a run is planned, and
it is the judge.

:func:`trial` runs that check on a throwaway copy, never on the live checkpoint:

1. the job's newest retained checkpoint ``n`` is copied into ``<checkpoint
   dir>.trial/`` as a savepoint is copied (pinned against trimming, so the job may run
   meanwhile; :func:`streamjob.checkpoint.savepoint.take_newest`): the offsets of ``n - 1``
   and ``n``, the commit of ``n``, state version ``n + 1`` and the state schemas;
2. the copy gets its own Spark query id (Spark would otherwise stop the live query of
   the same id: ``spark.sql.streaming.stopActiveRunOnRestart``), and an offset-log
   entry ``n + 1`` equal to entry ``n``: a batch that begins and ends where ``n``
   ended, so it reads no record;
3. the new query starts on the copy once (``Trigger.Once``) into Spark's ``noop`` sink.
   Spark re-runs the uncommitted batch ``n + 1``: it plans it (the schema check), loads
   state version ``n + 1`` and writes nothing anywhere but the copy;
4. the copy is removed, whatever happened.

A refusal by Spark (``STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE``,
``STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE``, any other failure of the state store) is an
incompatible :class:`~streamjob.planner.upgrade.ChangeClass`, naming the operator (from
the planner's list of stateful operators, in Spark's operator order) and the first
column whose type differs.
"""

from __future__ import annotations

import dataclasses
import json
import re
import uuid

from ..checkpoint import savepoint, store
from ..checkpoint.store import join_uri
from ..exceptions import JobError
from ..planner.upgrade import CHOICES, ChangeClass, ChangeKind, Operator

__all__ = ["SUFFIX", "trial", "trial_of_savepoint"]

#: The trial copy's folder beside the checkpoint directory (a job name holds no ``.``).
SUFFIX = ".trial"

_FIELD = re.compile(r"StructField\(\s*([^,()]+?)\s*,\s*([A-Za-z]+(?:\(\d+,\s*\d+\))?)")
_STRUCT_FIELD = re.compile(r"([A-Za-z_][A-Za-z0-9_#.]*):\s*([a-z]+(?:\(\d+,\s*\d+\))?)")
#: Spark's type class names as Spark SQL writes the types (``LongType`` is ``bigint``).
_SQL_TYPES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}
_OPERATOR_ID = re.compile(r"operator(?:Id|_id)?\s*[=:]\s*(\d+)", re.I)


def trial(spark_root, home, catalog, job, plan, operators: list[Operator]) -> ChangeClass | None:
    """Run Spark's state schema check of ``plan`` (the new query of ``job``) on a copy
    of the job's newest retained checkpoint (module docstring).

    Args:
        spark_root: this process's SparkSession.
        operators: the new plan's stateful operators, in Spark's operator order
            (:func:`streamjob.planner.upgrade.stateful_operators`), to name the one
            Spark refused.

    Returns:
        None when Spark accepts the state (or the job has no checkpoint with state yet),
        else an incompatible ChangeClass whose reason names the operator and column.

    Raises:
        CheckpointError: the checkpoint cannot be copied.
        JobError: the trial failed for another reason than the state (Spark's reason).
    """
    from ..checkpoint import identity
    from ..checkpoint.backends import backend_for_job

    ckdir = home.checkpoint_dir(job.database, job.name)
    root = home.checkpoint_root
    copy = ckdir.rstrip("/") + SUFFIX
    with backend_for_job(catalog, home, job) as backend:
        if backend.latest(job) is None or not store.log_ids(ckdir, "commits"):
            return None  # nothing kept yet: the first start writes the state schema
        if store.holds_anything(copy):
            store.purge(copy, root)  # a trial killed midway
        ident = identity.read(ckdir)
        info, _files = savepoint.take_newest(ckdir, copy, lambda: backend.latest(job), job.uid,
                                             ident.epoch if ident else "", root)
    return _judge(spark_root, plan, operators, copy, info.checkpoint_id, root,
                  job.qualified_name)


def trial_of_savepoint(spark_root, home, job, plan, operators: list[Operator],
                       sp) -> ChangeClass | None:
    """:func:`trial` on a copy of savepoint ``sp`` (a
    :class:`~streamjob.catalog.records.SavepointInfo`) rather than the job's checkpoint:
    START ... FROM SAVEPOINT into a changed query.

    Raises:
        CheckpointError: a file of the savepoint is missing or cannot be copied.
        JobError: the trial failed for another reason than the state.
    """
    root = home.checkpoint_root
    copy = home.checkpoint_dir(job.database, job.name).rstrip("/") + SUFFIX
    if store.holds_anything(copy):
        store.purge(copy, root)
    savepoint.restore_into(sp.location, copy)
    return _judge(spark_root, plan, operators, copy, sp.checkpoint_id, root,
                  job.qualified_name)


def _judge(spark_root, plan, operators, copy: str, n: int, root: str,
           job: str) -> ChangeClass | None:
    """Steps 2-4 of the module docstring on the copy ``copy`` of checkpoint ``n``."""
    try:
        if not store.holds_anything(join_uri(copy, "state")):
            return None  # its checkpoint holds no state (the old query kept none)
        store.write_file(join_uri(copy, "metadata"), json.dumps({"id": str(uuid.uuid4())}))
        store.copy_file(join_uri(copy, f"offsets/{n}"), join_uri(copy, f"offsets/{n + 1}"))
        failure = _run_once(spark_root, plan, copy)
    finally:
        store.purge(copy, root)
    if failure is None:
        return None
    return _refusal(failure, operators, job)


def _run_once(spark_root, plan, copy: str) -> str | None:
    """Start ``plan``'s query on the checkpoint ``copy`` once into the noop sink; None
    when its batch completed, else Spark's error text."""
    from .. import properties as jp
    from ..planner.bind import bind_job
    from ..spark.query import result_frame
    from ..spark.session import job_session

    session = job_session(spark_root, dict(jp.spark_settings(plan.props)), plan.data_sources)
    bound = bind_job(plan)
    bound = dataclasses.replace(bound, name=f"{bound.name}__state_trial")
    try:
        df = result_frame(session, bound)
        query = (df.writeStream.queryName(bound.name).outputMode(bound.output_mode)
                 .format("noop").option("checkpointLocation", copy).trigger(once=True)
                 .start())
        query.awaitTermination()
        failed = query.exception()
    except Exception as exc:  # noqa: BLE001 - Spark's errors are read below
        failed = exc
    if failed is None:
        return None
    return str(getattr(failed, "desc", None) or failed)


def _refusal(text: str, operators: list[Operator], job: str) -> ChangeClass:
    """The incompatible class of Spark's refusal ``text`` (module docstring).

    Raises:
        JobError: ``text`` is no state schema refusal (the trial failed otherwise).
    """
    from ..manager.summary import error_summary

    which = ("key" if "KEY_SCHEMA_NOT_COMPATIBLE" in text else
             "value" if "VALUE_SCHEMA" in text or "COLUMN_FAMILY_SCHEMA" in text else None)
    if which is None:
        raise JobError(f"streamjob {job}: Spark's state schema check of the new query could "
                       f"not run: {error_summary(RuntimeError(text))}; nothing was changed")
    found = _OPERATOR_ID.search(text)
    index = int(found.group(1)) if found else 0
    op = operators[index] if index < len(operators) else (operators[0] if operators else None)
    kind = op.kind if op is not None else "stateful operator"
    stored, new = _schemas(text)
    column, detail = _first_difference(stored, new, op, which)
    what = "state key" if which == "key" else "state value"
    sentence = (f"{kind}: Spark's state schema check refuses its {what}"
                f"{' (' + detail + ')' if detail else ''}: the state kept in the checkpoint "
                "cannot be read by the new query")
    return ChangeClass(ChangeKind.INCOMPATIBLE, (sentence,), kind, column, CHOICES)


def _schemas(text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The stored and the new schema of Spark's message, as ``[(field, type)]``."""
    m = re.search(r"[Ee]xisting \w+_schema=(.*?) and new \w+_schema=(.*?)(?:\.\s+If you|$)",
                  text, re.S)
    if m is None:
        return [], []
    return _fields(m.group(1)), _fields(m.group(2))


def _fields(schema: str) -> list[tuple[str, str]]:
    found = _FIELD.findall(schema)
    if found:
        return [(n.strip().strip("`"), _SQL_TYPES.get(t.removesuffix("Type").lower(),
                                                      t.removesuffix("Type").lower()))
                for n, t in found]
    return [(n.strip("`"), t) for n, t in _STRUCT_FIELD.findall(schema)]


def _first_difference(stored, new, op: Operator | None, which: str) -> tuple[str | None, str]:
    """The column that differs first (by position; named as the planner shows it where
    it can be) and a phrase saying how."""
    names = list(op.shown if which == "key" else op.values) if op is not None else []
    for i in range(max(len(stored), len(new))):
        a = stored[i] if i < len(stored) else None
        b = new[i] if i < len(new) else None
        if a is not None and b is not None and a[1] == b[1]:
            continue
        field = (b or a)[0]
        column = names[i] if i < len(names) and which == "key" else field
        if which == "value" and op is not None and op.values:
            column = _aggregate_of(field, op.values) or field
        if a is None:
            return column, f"{column} {b[1]} added"
        if b is None:
            return column, f"{column} {a[1]} removed"
        return column, f"{column} was {a[1]}, is now {b[1]}"
    return (names[0] if names else None), ""


def _aggregate_of(field: str, values: tuple[str, ...]) -> str | None:
    """The aggregate whose buffer is ``field`` (Spark names a buffer after its function:
    ``sum``, ``count``, ``avg``'s ``sum`` and ``count``...), or None."""
    head = field.split("#")[0].lower()
    for v in values:
        if v.startswith(head + "(") or v.split("(")[0] == head:
            return v
    return None
