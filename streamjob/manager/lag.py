"""A running job's Kafka lag: the records its sources hold that the job has not yet
committed (issue 16).

``lag = end offset on the broker - the job's position``, per partition of every Kafka
source, summed over partitions: the consumer lag that Kafka's own tools
(``kafka-consumer-groups --describe``), Flink's Kafka connector (``records-lag-max``) and
ksqlDB show. The two sides:

* the **end offsets** (the broker's log end offsets, ``ListOffsets`` latest) are read by
  an :class:`EndOffsetsProbe` every :data:`PROBE_EVERY_S` seconds while the job runs,
  with one metadata consumer per source, and are also taken from every Spark progress
  report (``sources[i].latestOffset``, read by Spark when it planned the batch); per
  partition the larger of the two counts (end offsets only grow while the topic lives,
  and both readings are replaced by newer ones);
* the **position** is the end offsets of the latest micro-batch this run committed
  (``sources[i].endOffset`` of its progress report; the smaller one when two sources
  read the same topic); before the run's first batch, the offsets of the checkpoint the
  run resumes from. A run without such a position (a first start, or a job without
  durable checkpoints, which restarts at its reset strategy) has no lag until its first
  batch ends: lag is then unknown (None), never 0.

The probe is what keeps the lag true while a batch runs: a restarted job catching up a
backlog in one long batch shows the backlog as lag at once, not 0 (Spark's own
``latestOffset - endOffset`` of the last finished batch counts only what arrived
before that batch was planned). A partition the position does not know yet (added to
the topic while the job runs) counts from the batch that first reads it. Sources other
than Kafka (files, rate) have no lag.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Callable

log = logging.getLogger(__name__)

#: Seconds between two readings of a running job's Kafka end offsets.
PROBE_EVERY_S = 2.0

Offsets = dict[str, dict[str, int]]  # {topic: {partition: offset}}


def kafka_offsets(value: Any) -> Offsets | None:
    """``{topic: {partition: offset}}`` from Spark's Kafka offset JSON (text or dict);
    None for another shape (a file source's ``{"logOffset": 3}``, a rate source's
    number) or an empty one."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict) or not value:
        return None
    out: Offsets = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict):
            return None
        try:
            out[str(topic)] = {str(p): int(o) for p, o in parts.items()}
        except (TypeError, ValueError):
            return None
    return out


def merge(a: Offsets | None, b: Offsets | None, pick: Callable[[int, int], int]) -> Offsets | None:
    """``a`` and ``b`` merged per (topic, partition), ``pick`` (min or max) choosing
    where both hold one; None if both are None."""
    if a is None or b is None:
        return _copy(a if b is None else b)
    out = _copy(a)
    for topic, parts in b.items():
        have = out.setdefault(topic, {})
        for p, off in parts.items():
            have[p] = pick(have[p], off) if p in have else off
    return out


def _copy(offsets: Offsets | None) -> Offsets | None:
    return None if offsets is None else {t: dict(parts) for t, parts in offsets.items()}


def lag_by_partition(ends: Offsets | None, position: Offsets | None) -> dict[str, int] | None:
    """Records beyond ``position`` up to ``ends``, per ``"topic:partition"`` (never
    negative), over the partitions both know; None when ``ends`` or ``position`` is None
    or they share no topic (unknown, module docstring)."""
    if not ends or not position:
        return None
    lags: dict[str, int] | None = None
    for topic, parts in ends.items():
        done = position.get(topic)
        if done is None:
            continue
        lags = {} if lags is None else lags
        for p, end in parts.items():
            if p in done:
                lags[f"{topic}:{p}"] = max(0, end - done[p])
    return lags


class EndOffsetsProbe:
    """Reads the broker's end offsets of a job's Kafka sources every ``interval_s``
    seconds on a daemon thread, from :meth:`start` until :meth:`stop`; hands each
    reading, ``{topic: {partition: end offset}}``, to ``on_reading`` (None when a broker
    could not be read: the lag then rests on Spark's reports alone). A failed reading is
    logged at debug level: the job's own source reports an unreachable broker.

    Args:
        sources: the job's sources with end offsets
            (:class:`~streamjob.connectors.sources.StreamSource` whose ``offsets_key``,
            ``(bootstrap, topic)``, is not None); one reader per key
            (:meth:`~streamjob.connectors.sources.StreamSource.offsets_reader`).
        on_reading: called on the probe's thread.
        name: the job's qualified name (thread name, log lines).
    """

    def __init__(self, sources: list, on_reading: Callable[[Offsets | None], None],
                 name: str = "", interval_s: float = PROBE_EVERY_S) -> None:
        unique = {s.offsets_key: s for s in sources}
        self.sources = list(unique.values())
        self.on_reading = on_reading
        self.name = name
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"lag-{name}")

    def start(self) -> "EndOffsetsProbe":
        """Start reading (the first reading at once); returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the reading under way (its readers are closed on the probe's
        thread); returns at once."""
        self._stop.set()

    def _readers(self) -> list:
        return [s.offsets_reader() for s in self.sources]

    def _run(self) -> None:
        readers = []
        try:
            readers = self._readers()
            while not self._stop.is_set():
                reading: Offsets | None = {}
                for reader in readers:
                    try:
                        reading.update(kafka_offsets(reader.reportLatestOffset()) or {})
                    except Exception as exc:  # noqa: BLE001 - informational; the source reports it
                        log.debug("job %s: end offsets of %s not read: %s", self.name,
                                  reader.topic, exc)
                        reading = None
                        break
                if self._stop.is_set():
                    break
                try:
                    self.on_reading(reading)
                except Exception:  # noqa: BLE001 - never end the probe on a callback error
                    log.exception("job %s: lag reading not handled", self.name)
                self._stop.wait(self.interval_s)
        except Exception as exc:  # noqa: BLE001 - e.g. a reader that cannot be made
            log.debug("job %s: lag probe ended: %s", self.name, exc)
        finally:
            for reader in readers:
                try:
                    reader.stop()
                except Exception:  # noqa: BLE001 - closing only
                    pass
