"""Which failures of a job a restart cannot fix (issue 16): :func:`permanent_failure`.

Failover (:mod:`.runner`) retries a failed attempt with a growing backoff; that helps
when something outside the job comes back (a broker, a database, the Spark JVM). Some
errors come back identically at every restart, and retrying them only delays the
FAILED status by the whole backoff series: those end the job FAILED at once, with the
error and a note saying why a restart cannot fix it and how to start over.
"""

from __future__ import annotations

import re

from ..exceptions import CatalogError, ConnectorError, StreamJobError

__all__ = ["permanent_failure", "DATA_LOSS", "CHANGED_LOGIC", "SINK_SCHEMA", "INVALID_CONFIG"]

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

# (note, patterns over the whole error text: Spark's message with the Python worker's
# traceback, or our own error's message); the first kind that matches wins
_RULES: tuple[tuple[str, re.Pattern], ...] = (
    (DATA_LOSS, re.compile(
        r"records may have been lost"                       # ours: topic recreated/truncated
        r"|are no longer on the broker \(retention removed"  # ours: offsets below the beginning
        r"|Some data may have been lost"                     # Spark's Kafka source
        r"|KAFKA_DATA_LOSS"                                  # its error class
        r"|\bdata loss\b"
        r"|OffsetOutOfRange"                                 # Kafka client, offsets out of range
        r"|offsets? out of range", re.I)),
    (CHANGED_LOGIC, re.compile(
        r"cannot resume from its checkpoints"                # ours (checkpoint/fingerprint.py)
        r"|STATE_STORE_(?:KEY|VALUE)_SCHEMA_NOT_COMPATIBLE"
        r"|STATE_STORE_INVALID_CONFIG_AFTER_RESTART"
        r"|STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"
        r"|Provided (?:key |value )?schema does(?: not|n't) match")),
    (SINK_SCHEMA, re.compile(
        r"streamjob\.exceptions\.SchemaMismatch"             # raised in a Python worker
        r"|does not match its declaration"                   # ours (connectors/sql/schema.py)
        r"|INCOMPATIBLE_DATA_FOR_TABLE")),
    (INVALID_CONFIG, re.compile(
        r"streamjob\.exceptions\.(?:PropertyError|ValidationError)"
        r"|\boption \w+ must be\b"                           # ours: a connector option
        r"|INVALID_CONF_VALUE"
        r"|org\.apache\.kafka\.common\.config\.ConfigException")),
)


def permanent_failure(exc: BaseException, job: str = "j") -> str | None:
    """The note to add to ``exc`` when no restart can fix it, else None (retry it).

    The rule follows Flink's failure classifiers (FLIP-304: a failure is labelled, and a
    non-recoverable one — Flink's ``SuppressRestartsException`` — skips the restart
    strategy) and Spark's ``failOnDataLoss`` (lost Kafka offsets fail the query rather
    than being retried or skipped). Permanent are:

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
    if isinstance(exc, StreamJobError) and not isinstance(exc, (ConnectorError, CatalogError)):
        text = str(exc)
        for note, pattern in _RULES:
            if pattern.search(text):
                return note.format(job=job)
        return "a restart cannot fix this: the job was refused before it ran"
    text = str(getattr(exc, "desc", None) or exc)
    for note, pattern in _RULES:
        if pattern.search(text):
            return note.format(job=job)
    return None
