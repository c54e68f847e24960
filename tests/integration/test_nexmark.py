"""Nexmark queries of examples/nexmark through real local Spark: the generator's events
as JSON-lines file streams (streams_files.sql), each query file's CREATE TABLE run by the
executor and its job planned and started as streamjob starts it (plan_job +
start_query), then its sink compared with the same query computed in pandas over the
same events: equal multisets of rows.

5,000 events at 10 events/s of event time span 500 s, i.e. 50 tumbling 10-second
windows. Windowed queries need the watermark past their last window: two sentinel bids,
an hour and two hours later (auction -1), each in its own micro-batch, push it out
(tests/integration/test_windows_and_derived.py); the sentinels' own rows are left out."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest

from streamjob_tools.dev.nexmark import NexmarkConfig, generate, reference, to_files, to_kafka
from streamjob.grammar import parse_script
from streamjob.grammar.statements import CreateStreamJob
from streamjob.script import read_script, substitute

from .world import SparkWorld

pytestmark = pytest.mark.spark

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "nexmark"
CFG = NexmarkConfig(seed=19, rate=10)
EVENTS = 5_000


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = SparkWorld(tmp_path_factory.mktemp("nexmark"))
    w.data = w.root / "data"
    to_files(CFG, EVENTS, w.data, chunk=2_000)  # Nexmark's camelCase keys, as written
    w.vars = {"NEXMARK_DIR": str(w.data), "STREAMJOB_HOME": str(w.home.root)}
    w.run(substitute(read_script(EXAMPLES / "streams_files.sql"), w.vars))
    yield w
    w.close()


@pytest.fixture(scope="module")
def events():
    e = generate(CFG, 0, EVENTS)
    return e.person, e.auction, e.bid


def run_query(world, name: str, sentinels: bool = False) -> str:
    """Run examples/nexmark/queries/<name>.sql until its input is processed; returns
    the sink's location."""
    location = None
    for stmt in parse_script(substitute(read_script(EXAMPLES / "queries" / f"{name}.sql"), world.vars)):
        if not isinstance(stmt, CreateStreamJob):
            world.ex.execute(stmt)
            continue
        plan, query = world.start(stmt.name.name, stmt.query)
        location = getattr(plan.sink_spec, "location", None)  # None: a SQL table
        try:
            query.processAllAvailable()
            if sentinels:
                for hours in (1, 2):
                    sentinel = reference.sentinel_bid(CFG.base_time_ms, hours)
                    if world.data is not None:
                        world.write(world.data / "bid", [sentinel])
                    else:  # one per partition: the watermark is the minimum over them
                        topic = world.vars["NEXMARK_TOPIC"] + "_bid"
                        for p in (0, 1):
                            replay_one(world.vars["NEXMARK_BROKER"], topic, sentinel, p)
                    query.processAllAvailable()
            assert query.exception() is None
        finally:
            query.stop()
            if sentinels and world.data is not None:  # later queries read the events only
                for f in (world.data / "bid").glob("part-????.json"):
                    f.unlink()
    return location


def replay_one(bootstrap: str, topic: str, record: dict, partition: int) -> None:
    """Produce one JSON record to ``partition`` of ``topic``, flushed (sent alone, so
    the broker's end offset shows it: flights.replay)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        producer.send(topic, json.dumps(record).encode(), partition=partition)
        producer.flush()
    finally:
        producer.close()


def ms(value) -> int:
    """A timestamp read back from Parquet (UTC) as ms since the epoch."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return round(value.timestamp() * 1000)


def check(world, events, name: str) -> tuple[Counter, Counter]:
    """Run query ``name`` as a job and return (its sink's rows, the same query computed
    by pandas over ``events``): streamjob_tools.dev.nexmark.reference, shared with the
    benchmark (streamjob_tools.bench.nexmark)."""
    person, auction, bid = events
    ref = reference.QUERIES[name]
    location = run_query(world, name, sentinels=ref.windowed)
    got = ref.actual(location, world.home.root / "nexmark.db")
    want = ref.expected(person, auction, bid)
    if name == "q10":  # partitioned by day and minute, as the bids' times say
        parts = {(p.parent.name, unquote(p.name)) for p in Path(location).glob("dt=*/hm=*")}
        day = pd.to_datetime(bid.dateTime, unit="ms", utc=True)
        assert parts == set(zip("dt=" + day.dt.strftime("%Y-%m-%d"),
                                "hm=" + day.dt.strftime("%H:%M")))
    if name == "q7":
        assert len(want) >= 40  # 500 s of event time: 50 windows
    return got, want


CORE = ["q1", "q3", "q7"]  # a projection, a join, a window: `make test`; q0 runs over Kafka there
MORE = ["q0", "q2", "q5", "q8", "q10", "q11", "q13", "q14", "q17", "q18", "q20", "q21", "q22"]


@pytest.mark.parametrize("query", CORE)
def test_nexmark_query_matches_batch(world, events, query):
    got, want = check(world, events, query)
    assert sum(want.values()) > 0
    assert got == want


@pytest.mark.slow
@pytest.mark.parametrize("query", MORE)
def test_more_nexmark_queries_match_batch(world, events, query):
    got, want = check(world, events, query)
    assert sum(want.values()) > 0
    assert got == want


@pytest.fixture(scope="module")
def kafka_world(tmp_path_factory, broker):
    """The same events in the session's broker (four new topics), read by the streams
    of streams_kafka.sql: Nexmark's JSON keys as written (``dateTime``)."""
    w = SparkWorld(tmp_path_factory.mktemp("nexmark_kafka"))
    prefix = f"nexmark_{uuid.uuid4().hex[:8]}"
    stats = to_kafka(CFG, EVENTS, broker.bootstrap, prefix, partitions=2)
    assert stats.records["bid"] == 4_600
    w.vars = {"NEXMARK_BROKER": broker.bootstrap, "NEXMARK_TOPIC": prefix,
              "NEXMARK_DIR": str(w.root / "data"), "STREAMJOB_HOME": str(w.home.root)}
    w.run(substitute(read_script(EXAMPLES / "streams_kafka.sql"), w.vars))
    yield w
    w.close()


@pytest.mark.parametrize("query", ["q0", pytest.param("q7", marks=pytest.mark.slow)])
def test_nexmark_query_over_kafka_matches_batch(kafka_world, events, query):
    """The Kafka path: ``to_kafka`` into the session's broker, the streams of
    streams_kafka.sql (keys matched case-insensitively, SQL timestamp text decoded)."""
    kafka_world.data = None  # sentinels go to the topic instead
    got, want = check(kafka_world, events, query)
    assert sum(want.values()) > 0
    assert got == want


def test_a_second_replay_into_filled_topics_is_refused(kafka_world, broker):
    """Producing the events again with the same prefix would double every result:
    refused, naming the topic, before anything is sent."""
    from streamjob.exceptions import ConnectorError

    prefix = kafka_world.vars["NEXMARK_TOPIC"]
    with pytest.raises(ConnectorError, match=f"topic {prefix} at .* already holds 5,000 records"):
        to_kafka(CFG, 10, broker.bootstrap, prefix)


def test_every_query_file_is_accepted(world):
    """Every query of examples/nexmark plans (names, functions, output mode) against the
    streams of streams_files.sql; Spark's own analysis runs when a query starts."""
    names = sorted(p.stem for p in (EXAMPLES / "queries").glob("q*.sql"))
    assert len(names) >= 17
    for name in names:
        for stmt in parse_script(substitute(read_script(EXAMPLES / "queries" / f"{name}.sql"), world.vars)):
            if isinstance(stmt, CreateStreamJob):
                world.plan(stmt.name.name, stmt.query)
            else:
                world.ex.execute(stmt)


def test_generated_times_read_as_timestamps(world):
    """The generator's ``2015-07-15 00:00:00.001`` text (Flink's JSON TIMESTAMP) is a
    TIMESTAMP to Spark's JSON reader, to the ms."""
    df = world.session.read.schema("dateTime timestamp").json(str(world.data / "person"))
    first = min(r.dateTime for r in df.collect())  # the key as written: Spark matches exactly
    assert ms(first) == int(generate(CFG, 0, EVENTS).person.dateTime.min())
    assert isinstance(first, datetime)
