"""The Kafka source's option rules: the reset strategy (``startingOffsets``), boolean
options, and the data-loss policy (``fail.on.data.loss``, Spark's name and default) for
offsets retention removed or a partition that ends before the job's position. Used by
:mod:`.source`, which exports these names."""

from __future__ import annotations

import json
import logging

from streamjob.exceptions import ConnectorError, DataLoss, InvalidConfiguration

# the source's warnings, under the source's name (what users see in the logs)
log = logging.getLogger("streamjob.connectors.kafka.source")


STRATEGIES = ("earliest", "latest", "committed")
"""The named reset strategies; a timestamp (ms since the epoch) is the fourth kind."""


def start_position(text: str | None) -> str | int | dict:
    """The ``startingOffsets`` option of a job's reader: given offsets (``{topic:
    {partition: offset}}`` from JSON, as Spark's Kafka source takes them: a new checkpoint
    epoch WITH STATE RESET, docs/upgrades.md), else a :func:`reset_strategy`. A stream's
    own reset strategy is never JSON.

    Raises:
        ConnectorError: neither.
    """
    value = (text or "").strip()
    if value.startswith("{"):
        try:
            given = json.loads(value)
            return {str(t): {str(p): int(o) for p, o in parts.items()}
                    for t, parts in given.items()}
        except (ValueError, AttributeError, TypeError):
            raise ConnectorError(f"start offsets '{text}' are not "
                                 '{"topic": {"partition": offset}}') from None
    return reset_strategy(text)


def reset_strategy(text: str | None) -> str | int:
    """The ``startingOffsets`` option as ``"earliest"``, ``"latest"``, ``"committed"`` or
    a timestamp (int, ms since the epoch); None or empty means ``"earliest"``.

    Raises:
        ConnectorError: any other value.
    """
    value = (text or "earliest").strip().lower()
    if value in STRATEGIES:
        return value
    if value.isdigit():
        return int(value)
    raise ConnectorError(
        f"unknown reset strategy '{text}' (transwarp.consumer.reset.offset.strategy): "
        f"expected earliest, latest, committed or a timestamp in ms since the epoch")


def _flag(options: dict[str, str], name: str, default: bool) -> bool:
    """A boolean option (``true``/``false``, any case); InvalidConfiguration otherwise."""
    text = options.get(name.lower())
    if text is None or text.strip() == "":
        return default
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise InvalidConfiguration(f"option {name} must be true or false, got '{text}'")
    return value == "true"


def lost_start(topic: str, partition: int, start: int, beginning: int,
               fail_on_data_loss: bool) -> int:
    """Where reading of ``partition`` continues when it should start at ``start`` and the
    broker's first offset still there is ``beginning``: ``start`` itself if nothing is
    lost, else ``beginning`` after a warning naming the lost offsets
    ``start..beginning-1`` (``fail_on_data_loss`` False).

    Raises:
        DataLoss: offsets are lost and ``fail_on_data_loss`` is True (the message
            names topic, partition and the lost offsets).
    """
    if beginning <= start:
        return start
    lost = f"offsets {start}..{beginning - 1} of topic '{topic}' partition {partition}"
    if fail_on_data_loss:
        raise DataLoss(
            f"{lost} are no longer on the broker (retention removed them); set "
            f"\"fail.on.data.loss\"=\"false\" on the stream to skip them")
    log.warning("%s are no longer on the broker (retention removed them): skipped, "
                "reading continues at offset %d (fail.on.data.loss=false)", lost, beginning)
    return beginning


def beyond_end(topic: str, partition: int, start: int, end: int, beginning: int,
               fail_on_data_loss: bool) -> int:
    """Where reading of ``partition`` continues when the job has read up to ``start`` but
    the partition now ends at ``end`` < ``start``: the topic was deleted and recreated,
    or its log truncated, so records may have been lost (Spark's Kafka source treats this
    as data loss too). Returns ``beginning`` (the new log read from its start) after a
    warning when ``fail_on_data_loss`` is False.

    Raises:
        DataLoss: ``fail_on_data_loss`` is True (names topic, partition, offsets).
    """
    what = (f"topic '{topic}' partition {partition} ends at offset {end}, but the job has "
            f"read up to offset {start}: the topic was deleted and recreated, or truncated, "
            f"and records may have been lost")
    if fail_on_data_loss:
        raise DataLoss(f"{what}; set \"fail.on.data.loss\"=\"false\" on the stream "
                       f"to read the partition again from its beginning")
    log.warning("%s: reading continues at its beginning, offset %d (fail.on.data.loss=false)",
                what, beginning)
    return beginning
