"""Which failures of a job a restart cannot fix (issue 16): :func:`permanent_failure`;
and the one line a user reads of any failure: :func:`error_summary`.

Failover (:mod:`.runner`) retries a failed attempt with a growing backoff; that helps
when something outside the job comes back (a broker, a database, the Spark JVM). Some
errors come back identically at every restart, and retrying them only delays the
FAILED status by the whole backoff series: those end the job FAILED at once, with the
error and a note saying why a restart cannot fix it and how to start over.

Our own kinds are classes (streamjob/exceptions.py: DataLoss, ChangedLogic,
SchemaMismatch, InvalidConfiguration, RepeatedFunctionError), never recognised by their
wording; only Spark's and Kafka's messages are matched by pattern, each pattern naming
where it comes from.

A user function's exception (:func:`user_function_failure`) is rebuilt on the driver
from the wire form its wrapper raised in the Python worker
(:class:`~streamjob.exceptions.UserFunctionError`) and placed at the failed
micro-batch's input (:func:`batch_position`). The runner retries it like any failure;
the same failure on the same input at two attempts (any two since the last failure of
another kind) becomes a :class:`~streamjob.exceptions.RepeatedFunctionError`, which is
permanent.
"""

from __future__ import annotations

import re
from typing import Iterable

from ..exceptions import (CatalogError, ChangedLogic, CheckpointError, ConnectorError, DataLoss,
                          InvalidConfiguration, NotAppendOnly, PermanentFailure,
                          RepeatedFunctionError, SchemaMismatch, StreamJobError,
                          UserFunctionError, ValidationError)
from .lag import kafka_offsets

__all__ = ["permanent_failure", "user_function_failure", "batch_position", "repeated", "DATA_LOSS",
           "CHANGED_LOGIC", "SINK_SCHEMA", "INVALID_CONFIG", "REPEATED_FUNCTION",
           "NOT_APPEND_ONLY"]

#: The note of each kind of permanent failure; ``{job}`` is the job's name.
DATA_LOSS = (
    "a restart cannot fix this: the offsets the job needs are gone from the broker "
    "(data loss). Set \"fail.on.data.loss\"=\"false\" on the stream to skip them, or start "
    "over with START STREAMJOB {job} FROM EARLIEST | LATEST | TIMESTAMP 'yyyy-mm-dd "
    "hh:mm:ss' (a new checkpoint epoch; what the sinks already hold stays)")
CHANGED_LOGIC = (
    "a restart cannot fix this: the checkpoints were taken by a different query. To start "
    "fresh, DROP STREAMJOB {job} (its checkpoints are purged) and CREATE it again, or "
    "START STREAMJOB {job} FROM EARLIEST | LATEST | TIMESTAMP 'yyyy-mm-dd hh:mm:ss'")
SINK_SCHEMA = (
    "a restart cannot fix this: the sink table does not fit the job's output; alter the "
    "table or its declaration, then START STREAMJOB {job} again")
INVALID_CONFIG = (
    "a restart cannot fix this: a setting is invalid; correct it (ALTER STREAMJOB, or the "
    "stream's or table's TBLPROPERTIES), then START STREAMJOB {job} again")
NOT_APPEND_ONLY = (
    "a restart cannot fix this: the Delta table the stream reads has a commit that "
    "deletes or rewrites rows, and every restart reaches it again. Start past it with "
    "START STREAMJOB {job} FROM LATEST | TIMESTAMP 'yyyy-mm-dd hh:mm:ss' (a new checkpoint "
    "epoch), or declare the stream again with \"ignoreDeletes\", \"ignoreChanges\" or "
    "\"skipChangeCommits\" (docs/connectors.md, \"Delta stream\")")
REPEATED_FUNCTION = (
    "a restart cannot fix this: the function failed the same way on the same input at two "
    "attempts. Fix the function or the query (a changed function is a changed "
    "logic: DROP STREAMJOB {job}, then DROP and CREATE the function and the job), or "
    "start past this input with START STREAMJOB {job} FROM LATEST | TIMESTAMP "
    "'yyyy-mm-dd hh:mm:ss'")
REFUSED = "a restart cannot fix this: the job was refused before it ran"

#: Each kind of ours (a :class:`~streamjob.exceptions.PermanentFailure` class, whose
#: ``marker`` stands in the first line of its text) and its note, checked in this order.
_KINDS: tuple[tuple[type[PermanentFailure], str], ...] = (
    (DataLoss, DATA_LOSS),
    (ChangedLogic, CHANGED_LOGIC),
    (SchemaMismatch, SINK_SCHEMA),
    (NotAppendOnly, NOT_APPEND_ONLY),
    (InvalidConfiguration, INVALID_CONFIG),
    (RepeatedFunctionError, REPEATED_FUNCTION),
)

# Spark's and Kafka's OWN messages (never streamjob's): (note, pattern over the error's
# whole text, which for a query failure is Spark's message, traceback included)
_FOREIGN: tuple[tuple[str, re.Pattern], ...] = (
    (DATA_LOSS, re.compile(
        # Spark's Kafka source, reportDataLoss: INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE
        # (KafkaSource, KafkaMicroBatchStream)
        r"Some data may have been lost"
        r"|KAFKA_DATA_LOSS"                  # Spark's error class for it (error-conditions.json)
        r"|OffsetOutOfRange"                 # Kafka client: OffsetOutOfRangeException
        r"|offsets? out of range", re.I)),   # Kafka client: "Offsets out of range with no ..."
    (CHANGED_LOGIC, re.compile(
        r"STATE_STORE_(?:KEY|VALUE)_SCHEMA_NOT_COMPATIBLE"   # Spark's state store error classes
        r"|STATE_STORE_INVALID_CONFIG_AFTER_RESTART"
        r"|STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"
        r"|Provided (?:key |value )?schema does(?: not|n't) match")),  # Spark's
        # StateSchemaCompatibilityChecker (3.x wording)
    (SINK_SCHEMA, re.compile(r"INCOMPATIBLE_DATA_FOR_TABLE")),  # Spark's error class
    (INVALID_CONFIG, re.compile(
        r"INVALID_CONF_VALUE"                               # Spark's error class
        r"|org\.apache\.kafka\.common\.config\.ConfigException")),  # Kafka's client
)


def _subclasses(cls: type) -> list[type]:
    """``cls`` and every subclass of it defined so far, depth first."""
    out = [cls]
    for sub in cls.__subclasses__():
        out += _subclasses(sub)
    return out


def _raised_in_worker(text: str, cls: type) -> bool:
    """Whether ``text`` (a Spark error's message) holds a Python traceback whose exception
    is ``cls`` or one of its subclasses: Python's traceback module writes the exception's
    line as ``module.QualName: message`` (``traceback.format_exception_only``), and
    PySpark sends that traceback back to the driver inside its ``PythonException``."""
    return any(f"{c.__module__}.{c.__qualname__}: " in text for c in _subclasses(cls))


def permanent_failure(exc: BaseException, job: str = "j") -> str | None:
    """The note to add to ``exc`` when no restart can fix it, else None (retry it).

    The rule follows Flink's failure classifiers (FLIP-304: a failure is labelled, and a
    non-recoverable one — Flink's ``SuppressRestartsException`` — skips the restart
    strategy) and Spark's ``failOnDataLoss`` (lost Kafka offsets fail the query rather
    than being retried or skipped). Our kinds are matched by class
    (:class:`~streamjob.exceptions.PermanentFailure`'s subclasses), or, when raised in a
    Spark Python worker and so seen here only as Spark's text, by the class's ``marker``;
    Spark's and Kafka's own failures by their error classes and messages. Permanent are:

    - our own errors raised in this process other than ConnectorError and CatalogError
      (an invalid job, a sink table that does not fit (SchemaMismatch), changed logic,
      a checkpoint directory of another job): the job was refused before it ran;
    - data loss: Kafka offsets the job needs that the broker no longer has (retention,
      a topic deleted and recreated or truncated) with ``failOnDataLoss`` true;
    - changed query logic refused (ours, or Spark's state store/operator checks);
    - a sink table whose schema does not fit, raised in a Python worker;
    - invalid configuration (a connector option, a Spark conf, a Kafka client config);
    - a user function's failure repeated on the same input
      (:class:`~streamjob.exceptions.RepeatedFunctionError`); its first occurrence, a
      :class:`~streamjob.exceptions.UserFunctionError`, is retried.

    Transient errors — an unreachable broker or database, a missing topic (it may be
    created), a dead JVM, anything unrecognised — return None and are retried as
    before. ``job`` is the job's name for the note's START/DROP statements.
    """
    for kind, note in _KINDS:
        if isinstance(exc, kind):
            return note.format(job=job)
    text = str(getattr(exc, "desc", None) or exc)
    for kind, note in _KINDS:  # raised in a Python worker: its marker, in Spark's text
        if kind.marker in text:
            return note.format(job=job)
    for note, pattern in _FOREIGN:
        if pattern.search(text):
            return note.format(job=job)
    if isinstance(exc, UserFunctionError):  # once: retried; RepeatedFunctionError above
        return None
    if isinstance(exc, StreamJobError) and not isinstance(exc, (ConnectorError, CatalogError)):
        return REFUSED
    if _raised_in_worker(text, ValidationError):  # a property or option refused in a worker
        return INVALID_CONFIG.format(job=job)
    return None


def batch_position(end: list[str], start: list[str] | None) -> str | None:
    """Where a micro-batch's Kafka input lies, from its offsets log entry's source lines
    ``end`` and the previous entry's ``start`` (:func:`~streamjob.checkpoint.entries.
    uncommitted_batch`): ``topic t partition p offsets [a, b)`` per partition the batch
    read records of (``up to b`` when the start is unknown, batch 0), ``; ``-joined;
    None when no source is Kafka or no partition moved. Kafka offsets are Spark's
    Kafka source's JSON, ``{topic: {partition: next offset}}`` (:mod:`.lag`)."""
    parts: list[str] = []
    for i, line in enumerate(end):
        ends = kafka_offsets(line)
        if not ends:
            continue
        starts = kafka_offsets(start[i]) if start is not None and i < len(start) else None
        for topic, offsets in ends.items():
            for p, b in sorted(offsets.items(), key=lambda kv: int(kv[0])):
                a = (starts or {}).get(topic, {}).get(p)
                if a is None and starts is not None:
                    a = 0 if b else None  # a partition new in this batch reads from its start
                if a is None:
                    parts.append(f"topic {topic} partition {p} offsets up to {b}")
                elif b > a:
                    parts.append(f"topic {topic} partition {p} offsets [{a}, {b})")
    return "; ".join(parts) or None


def user_function_failure(exc: BaseException, checkpoint_dir: str | None,
                          previous: Iterable[UserFunctionError] = ()
                          ) -> UserFunctionError | None:
    """The :class:`~streamjob.exceptions.UserFunctionError` a query failure ``exc``
    carries (raised by a user function's wrapper in a Python worker, seen here as
    Spark's text), placed in the failed micro-batch of ``checkpoint_dir`` with its
    input's position (:func:`batch_position`) and offsets, and :func:`repeated` against
    ``previous`` (the earlier attempts'); None if ``exc`` is no user function's failure.
    A checkpoint that cannot be read leaves the position unknown."""
    from ..checkpoint.entries import uncommitted_batch

    if isinstance(exc, UserFunctionError):
        found: UserFunctionError | None = exc
    else:
        found = UserFunctionError.from_text(str(getattr(exc, "desc", None) or exc))
    if found is None:
        return None
    try:
        batch = uncommitted_batch(checkpoint_dir) if checkpoint_dir else None
    except CheckpointError:
        batch = None
    if batch is not None:
        batch_id, end, start = batch
        found = found.at(batch_id, batch_position(end, start), tuple(end))
    return repeated(previous, found)


def repeated(previous: Iterable[UserFunctionError], failure: UserFunctionError
             ) -> UserFunctionError:
    """``failure`` as a :class:`~streamjob.exceptions.RepeatedFunctionError` if one of
    ``previous`` (the failures of the job's earlier attempts since its last failure of
    another kind) is the same failure on the same input
    (:meth:`~streamjob.exceptions.UserFunctionError.same_failure`), else ``failure``.
    Any earlier attempt, not only the last: when several tasks of a batch fail, which
    one's error Spark reports first may change from attempt to attempt."""
    if not any(p.same_failure(failure) for p in previous):
        return failure
    return RepeatedFunctionError(failure.function, failure.error_type, failure.error_message,
                                 failure.arguments, failure.batch, failure.position,
                                 failure.inputs, failure.record)
