"""Which failures of a job a restart cannot fix (issue 16): :func:`permanent_failure`;
and the one line a user reads of any failure: :func:`error_summary`.

Failover (:mod:`.runner`) retries a failed attempt with a growing backoff; that helps
when something outside the job comes back (a broker, a database, the Spark JVM). Some
errors come back identically at every restart, and retrying them only delays the
FAILED status by the whole backoff series: those end the job FAILED at once, with the
error and a note saying why a restart cannot fix it and how to start over.

Our own kinds are classes (streamjob/exceptions.py: DataLoss, ChangedLogic,
SchemaMismatch, InvalidConfiguration), never recognised by their wording; only Spark's
and Kafka's messages are matched by pattern, each pattern naming where it comes from.
"""

from __future__ import annotations

import re

from ..exceptions import (CatalogError, ChangedLogic, ConnectorError, DataLoss,
                          InvalidConfiguration, PermanentFailure, SchemaMismatch, StreamJobError,
                          ValidationError)

__all__ = ["error_summary", "permanent_failure", "DATA_LOSS", "CHANGED_LOGIC", "SINK_SCHEMA", "INVALID_CONFIG"]

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
REFUSED = "a restart cannot fix this: the job was refused before it ran"

#: Each kind of ours (a :class:`~streamjob.exceptions.PermanentFailure` class, whose
#: ``marker`` stands in the first line of its text) and its note, checked in this order.
_KINDS: tuple[tuple[type[PermanentFailure], str], ...] = (
    (DataLoss, DATA_LOSS),
    (ChangedLogic, CHANGED_LOGIC),
    (SchemaMismatch, SINK_SCHEMA),
    (InvalidConfiguration, INVALID_CONFIG),
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
    - invalid configuration (a connector option, a Spark conf, a Kafka client config).

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
    if isinstance(exc, StreamJobError) and not isinstance(exc, (ConnectorError, CatalogError)):
        return REFUSED
    if _raised_in_worker(text, ValidationError):  # a property or option refused in a worker
        return INVALID_CONFIG.format(job=job)
    return None


_OUR_ERROR = re.compile(r"^\s*streamjob(?:\.\w+)+: (.+?)(?:\s+SQLSTATE: \w+)?$", re.M)
#: Spark's error of a JVM user function (a Hive UDF class) that threw: its name as Spark
#: shows it (the class, in backquoted parts), the exception's class and message.
_JVM_UDF_ERROR = re.compile(
    r"\[FAILED_EXECUTE_UDF\] User defined function \((.+?): \(.*?\) => [^)]*\) failed due "
    r"to: ([\w.$]+): (.+?)(?:\.? SQLSTATE: \w+)?$", re.M)


def error_summary(exc: BaseException, functions: dict[str, str] | None = None) -> str:
    """One line a user can act on from a Spark/Python failure (no JVM stack trace).

    ``functions`` maps the class of each Hive UDF the job calls to its name
    (``db.name``): a Hive UDF that threw is named so, with the exception's type and
    message (docs/functions.md)."""
    text = str(getattr(exc, "desc", None) or exc)
    # an error raised by our own code in a Python worker (source, sink) ends its traceback
    # as "streamjob.<module>.<ErrorClass>: <message>": that message is what the user needs
    ours = _OUR_ERROR.findall(text)
    if ours:
        return ours[-1].strip()
    jvm = _JVM_UDF_ERROR.search(text)
    if jvm is not None:
        shown = jvm.group(1).replace("`", "")
        name = (functions or {}).get(shown, shown)
        return (f"function {name} raised {jvm.group(2).rsplit('.', 1)[-1]}: "
                f"{jvm.group(3).strip()}")[:500]
    for marker in ("ConnectorError: ", "StreamJobError: "):
        idx = text.rfind(marker)
        if idx >= 0:
            tail = text[idx:].split("\n", 1)[0]
            return tail.split(": ", 1)[1] if ": " in tail else tail
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if not ln.startswith(("at ", "File ", "Traceback", "===", "JVM stacktrace")):
            return ln[:500]
    return type(exc).__name__
