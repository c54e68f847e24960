"""Nexmark events as JSON lines: one topic or directory per event type, and the combined
stream of Nexmark's ``kafka``/``datagen`` table (``event_type`` 0/1/2 and the nested
``person``, ``auction``, ``bid`` objects, the two others null, in event order)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .generator import (AUCTION_COLUMNS, BID_COLUMNS, PERSON_COLUMNS, Events, NexmarkConfig,
                        format_times, generate)

TYPES = ("person", "auction", "bid")
COMBINED = "events"
COLUMNS = {"person": PERSON_COLUMNS, "auction": AUCTION_COLUMNS, "bid": BID_COLUMNS}
TIME_COLUMNS = {"person": ("dateTime",), "auction": ("dateTime", "expires"), "bid": ("dateTime",)}
SIDE_INPUT_ROWS = 10_000  # q13's side input: "i,i" for i < 10,000 (SideInputGenerator)


def json_lines(events: Events, lower_keys: bool = False) -> dict[str, list[bytes]]:
    """``{"person"|"auction"|"bid"|"events": [JSON bytes, ...]}``: each type's records in
    event order (keys as Nexmark's Flink SQL DDL, or lower-cased with ``lower_keys``;
    times as ``format_times``), and the combined stream of all three, merged by event
    count. Written by pandas' C JSON writer."""
    out, order = {}, {}
    for t in TYPES:
        df = getattr(events, t)
        frame = df[COLUMNS[t]].copy()
        for c in TIME_COLUMNS[t]:
            frame[c] = format_times(frame[c].to_numpy())
        if lower_keys:
            frame.columns = [c.lower() for c in frame.columns]
        out[t] = _records(frame)
        order[t] = df["event"].tolist()
    wrap = {0: (b'{"event_type":0,"person":', b',"auction":null,"bid":null}'),
            1: (b'{"event_type":1,"person":null,"auction":', b',"bid":null}'),
            2: (b'{"event_type":2,"person":null,"auction":null,"bid":', b'}')}
    tagged = [(n, k, line) for k, t in enumerate(TYPES) for n, line in zip(order[t], out[t])]
    tagged.sort(key=lambda x: x[0])
    out[COMBINED] = [wrap[k][0] + line + wrap[k][1] for _, k, line in tagged]
    return out


def _records(frame) -> list[bytes]:
    """Each row of ``frame`` as compact JSON bytes. pandas' ``lines=True`` splits its
    output in Python (0.7 s of 2 s for 200,000 events); this splits the one JSON array
    at ``},{`` instead, which no generated string holds (they use a-z, 'H' to 'z', digits,
    space and ``_@.:/?=&-``); if a count ever differs it falls back to pandas' lines."""
    if not len(frame):
        return []
    body = frame.to_json(orient="records").encode()[2:-2]
    parts = body.split(b"},{")
    if len(parts) == len(frame):
        return [b"{" + p + b"}" for p in parts]
    text = frame.to_json(orient="records", lines=True)
    return [line for line in text.encode().split(b"\n") if line]


@dataclass
class Stats:
    """What a run produced: records per stream, and seconds spent generating (events to
    JSON bytes) and writing (files or broker)."""

    events: int = 0
    records: dict = field(default_factory=lambda: {t: 0 for t in (*TYPES, COMBINED)})
    generate_s: float = 0.0
    write_s: float = 0.0

    @property
    def events_per_s(self) -> float:
        """Generation speed in events/s (to JSON bytes, writing excluded)."""
        return self.events / self.generate_s if self.generate_s else 0.0


def chunks(cfg: NexmarkConfig, events: int, chunk: int, stats: Stats, lower_keys: bool = False):
    """Yield ``json_lines`` of consecutive chunks of ``chunk`` events, timing them."""
    for start in range(0, events, chunk):
        t0 = time.perf_counter()
        lines = json_lines(generate(cfg, start, min(chunk, events - start)), lower_keys)
        stats.generate_s += time.perf_counter() - t0
        stats.events += min(chunk, events - start)
        for t, recs in lines.items():
            stats.records[t] += len(recs)
        yield start, lines


def write_side_input(directory: Path) -> Path:
    """q13's side input, ``side_input/side_input.csv`` (``key,value``: ``i,i`` for the
    10,000 keys, no header, as Nexmark's ``SideInputGenerator``)."""
    d = Path(directory) / "side_input"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "side_input.csv"
    path.write_text("".join(f"{i},{i}\n" for i in range(SIDE_INPUT_ROWS)))
    return path


def to_files(cfg: NexmarkConfig, events: int, directory: Path, chunk: int = 100_000,
             lower_keys: bool = False) -> Stats:
    """Write ``events`` events under ``directory``: ``person/``, ``auction/``, ``bid/``,
    ``events/`` (combined), one JSON-lines file per stream per chunk of ``chunk`` events
    (``part-<first event>.json``, written beside and renamed in, so a file stream never
    reads half a file), and ``side_input/side_input.csv``.

    ``lower_keys`` writes the JSON keys lower-cased (``datetime``, ``emailaddress``);
    streamjob's file and Kafka streams match keys to columns ignoring case (exact
    spelling first), so neither needs it (:mod:`streamjob.spark.json_keys`)."""
    directory = Path(directory)
    stats = Stats()
    for t in (*TYPES, COMBINED):
        (directory / t).mkdir(parents=True, exist_ok=True)
    write_side_input(directory)
    for start, lines in chunks(cfg, events, chunk, stats, lower_keys):
        t0 = time.perf_counter()
        for t, recs in lines.items():
            if not recs:
                continue
            tmp = directory / f".{t}-{start:012d}.json.tmp"
            tmp.write_bytes(b"\n".join(recs) + b"\n")
            os.rename(tmp, directory / t / f"part-{start:012d}.json")
        stats.write_s += time.perf_counter() - t0
    return stats


def _refuse_filled(bootstrap: str, topic: str) -> None:
    """Raise ConnectorError if ``topic`` holds records (end offsets above beginnings)."""
    from kafka import KafkaConsumer, TopicPartition

    from streamjob.exceptions import ConnectorError

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        ends, begins = consumer.end_offsets(parts), consumer.beginning_offsets(parts)
    finally:
        consumer.close()
    held = sum(ends[tp] - begins[tp] for tp in parts)
    if held:
        raise ConnectorError(
            f"topic {topic} at {bootstrap} already holds {held:,} records: the events would "
            f"be appended a second time; choose another --topic-prefix or delete the topics")


def topic_names(prefix: str = "nexmark") -> dict[str, str]:
    """Topic per stream: ``<prefix>`` for the combined stream (Nexmark's topic is
    ``nexmark``), ``<prefix>_person``, ``<prefix>_auction``, ``<prefix>_bid``."""
    return {COMBINED: prefix, **{t: f"{prefix}_{t}" for t in TYPES}}


def to_kafka(cfg: NexmarkConfig, events: int, bootstrap: str, prefix: str = "nexmark",
             partitions: int = 1, chunk: int = 100_000) -> Stats:
    """Produce ``events`` events to the four topics of ``topic_names(prefix)`` (created
    with ``partitions`` partitions when missing), records round-robin over partitions.
    Each partition's last record is sent alone and flushed, so the broker of TESTING.md
    (Tansu) shows every record in its end offset (``flights.replay``).

    Raises:
        ConnectorError: one of the topics exists and holds records (a second run would
            append a second copy of the events, doubling every result); nothing is
            produced then.
    """
    from ..broker import create_topic
    from ..produce import produce

    topics = topic_names(prefix)
    for topic in topics.values():
        if not create_topic(bootstrap, topic, partitions):
            _refuse_filled(bootstrap, topic)
    stats = Stats()
    sent = {t: 0 for t in topics}

    def records():
        for _, lines in chunks(cfg, events, chunk, stats):
            for t, recs in lines.items():
                for value in recs:
                    yield topics[t], sent[t] % partitions, value
                    sent[t] += 1

    t0 = time.perf_counter()
    produce(bootstrap, records())
    # the producer's time: all of it but the generator's, which chunks() counted apart
    stats.write_s = time.perf_counter() - t0 - stats.generate_s
    return stats
