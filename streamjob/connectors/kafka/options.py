"""The Kafka source's reader options, defined once: the names the job's reader is given
(:func:`reader_options`, called by :meth:`.stream.KafkaStreamSource.reader` for
``spark/query.py``) and the names :class:`.source.KafkaStreamReader` reads back (Spark
lower-cases option keys, so the reader looks them up with :func:`key`). What each option
means is in :mod:`.source`'s docstring. Pure Python: no Kafka client, no Spark."""

from __future__ import annotations

from typing import Mapping

#: The Kafka source's data source name (:meth:`.source.KafkaDataSource.name`), spelled
#: here, in pure Python, so that a job planned without Spark or the Kafka client need not
#: import them.
SOURCE_NAME = "streamjob_kafka"

#: Option names as the planner writes them (camelCase, Spark's Kafka style).
TOPIC = "topic"
BOOTSTRAP = "bootstrap"
FORMAT = "format"
DELIMITER = "delimiter"
STARTING_OFFSETS = "startingOffsets"
FAIL_ON_DATA_LOSS = "failOnDataLoss"
ISOLATION_LEVEL = "isolationLevel"
MAX_RECORDS_PER_BATCH = "maxRecordsPerBatch"
MISSING_COLUMNS = "missingColumns"
REQUEST_TIMEOUT_MS = "requestTimeoutMs"
GROUP_ID = "groupId"
DEAD_LETTER = "deadLetter"
POLL_TIMEOUT_MS = "pollTimeoutMs"
CHECK_CRCS = "checkCrcs"
RECORD_PARSER = "recordParser"


def key(name: str) -> str:
    """The key of option ``name`` in the options Spark hands a reader (lower-cased)."""
    return name.lower()


def probe_options(spec) -> dict[str, str]:
    """The options of a reader that only asks the broker for offsets (end offsets for
    ``--until-idle`` and the lag probe): topic, bootstrap servers, the request bound
    and the security settings (secret references unresolved) of ``spec``, a
    :class:`~streamjob.connectors.spec.KafkaSourceSpec`."""
    return {TOPIC: spec.topic, BOOTSTRAP: spec.bootstrap,
            REQUEST_TIMEOUT_MS: str(spec.request_timeout_ms), **spec.security.options()}


def reader_options(spec, *, starting: str | None, max_records: int, group_id: str | None,
                   dead_letter=None) -> dict[str, str]:
    """The options of a job's Kafka reader for stream ``spec`` (a
    :class:`~streamjob.connectors.spec.KafkaSourceSpec`).

    Args:
        starting: the job's start position (``START ... FROM``; None: the stream's reset
            strategy).
        max_records: the job's cap on records per micro-batch (0: none).
        group_id: the consumer group whose committed offsets ``committed`` reads.
        dead_letter: the :class:`.dead_letter.DeadLetterTarget` of
            ``"malformed.policy"="dead-letter"``, or None.

    Secret references of the security settings are resolved here (the job manager, at
    job start: Spark's Python workers may lack its environment and files).

    Raises:
        ConnectorError: a secret reference that cannot be resolved.
    """
    options = {
        TOPIC: spec.topic, BOOTSTRAP: spec.bootstrap, FORMAT: spec.format,
        DELIMITER: spec.delimiter, STARTING_OFFSETS: str(starting or spec.reset),
        FAIL_ON_DATA_LOSS: str(spec.fail_on_data_loss).lower(),
        ISOLATION_LEVEL: spec.isolation, MAX_RECORDS_PER_BATCH: str(max_records),
        MISSING_COLUMNS: spec.missing_columns,
        REQUEST_TIMEOUT_MS: str(spec.request_timeout_ms),
        **spec.security.resolved().options()}
    if group_id:
        options[GROUP_ID] = group_id
    if dead_letter is not None:
        options[DEAD_LETTER] = dead_letter.to_option()
    return options


def get(options: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    """Option ``name`` of lower-cased ``options`` (as Spark hands them), or ``default``."""
    return options.get(key(name), default)
