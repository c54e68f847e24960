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
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest

from streamjob.connectors.files.table import read_table
from streamjob.dev.nexmark import NexmarkConfig, format_times, generate, to_files, to_kafka
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
                    ms = CFG.base_time_ms + hours * 3_600_000
                    sentinel = {"auction": -1, "bidder": -1, "price": 1, "channel": "x",
                                "url": "x", "datetime": format_times([ms])[0], "extra": ""}
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


def sink(location: str, cols: list[str], times=(), drop=lambda r: False) -> Counter:
    """The sink's rows as a multiset of ``cols`` (the catalog keeps names lower-cased),
    ``times`` as ms, without the rows ``drop`` picks."""
    rows = [{k.lower(): v for k, v in r.items()} for r in read_table(location).to_pylist()]
    return Counter(tuple(ms(r[c.lower()]) if c in times else r[c.lower()] for c in cols)
                   for r in rows if not drop(r))


def rows(df: pd.DataFrame, cols: list[str]) -> Counter:
    return Counter(map(tuple, df[cols].itertuples(index=False, name=None)))


def q0(world, person, auction, bid):
    cols = ["auction", "bidder", "price", "dateTime", "extra"]
    return sink(run_query(world, "q0"), cols, {"dateTime"}), rows(bid, cols)


def q1(world, person, auction, bid):
    cols = ["auction", "bidder", "price", "dateTime", "extra"]
    want = bid.assign(price=[Decimal(p) * Decimal("0.908") for p in bid.price])
    return sink(run_query(world, "q1"), cols, {"dateTime"}), rows(want, cols)


def q2(world, person, auction, bid):
    want = bid[bid.auction % 123 == 0]
    assert len(want), "the events hold bids of every 123rd auction"
    return sink(run_query(world, "q2"), ["auction", "price"]), rows(want, ["auction", "price"])


def q3(world, person, auction, bid):
    a = auction[auction.category == 10]
    p = person[person.state.isin(["OR", "ID", "CA"])]
    want = a.merge(p, left_on="seller", right_on="id", suffixes=("_a", ""))
    want = want.assign(id=want.id_a)
    assert len(want), "some category-10 auctions have sellers in OR, ID or CA"
    cols = ["name", "city", "state", "id"]
    return sink(run_query(world, "q3"), cols), rows(want, cols)


def q7(world, person, auction, bid):
    cols = ["price", "auction", "bidder", "dateTime", "extra"]
    best = Counter()
    for _, w in bid.groupby(bid.dateTime // 10_000):
        best[max(map(tuple, w[cols].itertuples(index=False, name=None)))] += 1
    got = sink(run_query(world, "q7", sentinels=True), cols, {"dateTime"},
               drop=lambda r: r["auction"] == -1)
    assert len(best) >= 40
    return got, best


def q5(world, person, auction, bid):
    counts = Counter()
    for a, t in zip(bid.auction, bid.dateTime):
        first = t // 2000 * 2000
        for start in range(first - 8000, first + 1, 2000):  # the 5 sliding windows holding t
            counts[(start, a)] += 1
    best = {}
    for (start, a), n in counts.items():
        best[start] = max(best.get(start, (0, 0)), (n, a))
    want = Counter((a, n, s) for s, (n, a) in best.items())
    got = sink(run_query(world, "q5", sentinels=True), ["auction", "num", "starttime"],
               {"starttime"}, drop=lambda r: r["auction"] == -1)
    return got, want


def q8(world, person, auction, bid):
    sellers = set(zip(auction.seller, auction.dateTime // 10_000))
    keep = [(i, t // 10_000) in sellers for i, t in zip(person.id, person.dateTime)]
    want = person[keep].assign(stime=person.dateTime[keep] // 10_000 * 10_000)
    got = sink(run_query(world, "q8"), ["id", "name", "stime"], {"stime"})
    return got, rows(want, ["id", "name", "stime"])


def q20(world, person, auction, bid):
    want = bid.merge(auction[auction.category == 10], left_on="auction", right_on="id",
                     suffixes=("", "_a"))
    cols = ["auction", "bidder", "price", "channel", "url", "dateTime", "extra", "itemName",
            "description", "initialBid", "reserve", "dateTime_a", "expires", "seller",
            "category", "extra_a"]
    got = sink(run_query(world, "q20"), ["auction", "bidder", "price", "channel", "url",
                                         "bid_dateTime", "bid_extra", "itemName", "description",
                                         "initialBid", "reserve", "auction_dateTime", "expires",
                                         "seller", "category", "auction_extra"],
               {"bid_dateTime", "auction_dateTime", "expires"})
    return got, rows(want, cols)


def q22(world, person, auction, bid):
    parts = bid.url.str.split("/")
    want = bid.assign(dir1=parts.str[3], dir2=parts.str[4], dir3=parts.str[5])
    cols = ["auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"]
    return sink(run_query(world, "q22"), cols), rows(want, cols)


def q10(world, person, auction, bid):
    location = run_query(world, "q10")
    cols = ["auction", "bidder", "price", "dateTime", "extra"]
    parts = {(p.parent.name, unquote(p.name)) for p in Path(location).glob("dt=*/hm=*")}
    day = pd.to_datetime(bid.dateTime, unit="ms", utc=True)
    assert parts == set(zip("dt=" + day.dt.strftime("%Y-%m-%d"), "hm=" + day.dt.strftime("%H:%M")))
    return sink(location, cols, {"dateTime"}), rows(bid, cols)


def q11(world, person, auction, bid):
    want = Counter()
    for bidder, w in bid.groupby("bidder"):
        times = sorted(w.dateTime)
        start = last = times[0]
        n = 0
        for t in times:
            if t - last > 10_000:  # a bid at a session's very end joins it (Spark, Flink)
                want[(bidder, n, start, last + 10_000)] += 1
                start, n = t, 0
            last, n = t, n + 1
        want[(bidder, n, start, last + 10_000)] += 1
    got = sink(run_query(world, "q11", sentinels=True), ["bidder", "bid_count", "starttime", "endtime"],
               {"starttime", "endtime"}, drop=lambda r: r["bidder"] == -1)
    return got, want


def q13(world, person, auction, bid):
    want = bid.assign(value=(bid.auction % 10_000).astype(str))
    cols = ["auction", "bidder", "price", "dateTime", "value"]
    return sink(run_query(world, "q13"), cols, {"dateTime"}), rows(want, cols)


def q14(world, person, auction, bid):
    euro = bid.price * 0.908
    want = bid[(euro > 1_000_000) & (euro < 50_000_000)]
    hour = pd.to_datetime(want.dateTime, unit="ms", utc=True).dt.hour
    want = want.assign(price=[Decimal(p) * Decimal("0.908") for p in want.price],
                       bidTimeType=["dayTime" if 8 <= h <= 18 else "nightTime" if h <= 6 or h >= 20
                                    else "otherTime" for h in hour],
                       c_counts=want.extra.str.count("c"))
    cols = ["auction", "bidder", "price", "bidTimeType", "dateTime", "extra", "c_counts"]
    return sink(run_query(world, "q14"), cols, {"dateTime"}), rows(want, cols)


def q21(world, person, auction, bid):
    ids = {"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
    found = bid.url.str.extract(r"(&|^)channel_id=([^&]*)")[1]
    cid = [ids.get(c.lower(), f if isinstance(f, str) and f else None)
           for c, f in zip(bid.channel, found)]
    want = bid.assign(channel_id=cid)
    want = want[want.channel_id.notna()]
    cols = ["auction", "bidder", "price", "channel", "channel_id"]
    return sink(run_query(world, "q21"), cols), rows(want, cols)


def sql_rows(world, table: str, cols: list[str]) -> Counter:
    import sqlite3

    with sqlite3.connect(world.home.root / "nexmark.db") as db:
        return Counter(db.execute(f"select {', '.join(cols)} from {table}").fetchall())


def q17(world, person, auction, bid):
    run_query(world, "q17")
    day = pd.to_datetime(bid.dateTime, unit="ms", utc=True).dt.strftime("%Y-%m-%d")
    want = Counter()
    for (a, d), w in bid.groupby([bid.auction, day]):
        p = w.price
        want[(a, d, len(p), int((p < 10_000).sum()), int(((p >= 10_000) & (p < 1_000_000)).sum()),
              int((p >= 1_000_000).sum()), int(p.min()), int(p.max()), int(p.sum() / len(p)),
              int(p.sum()))] += 1
    cols = ["auction", "day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
            "min_price", "max_price", "avg_price", "sum_price"]
    return sql_rows(world, "nexmark_q17", cols), want


def q18(world, person, auction, bid):
    run_query(world, "q18")
    cols = ["dateTime", "price", "channel", "url", "extra"]
    want = Counter()
    for (a, b), w in bid.groupby(["auction", "bidder"]):
        want[(a, b) + max(map(tuple, w[cols].itertuples(index=False, name=None)))[1:]] += 1
    got = sql_rows(world, "nexmark_q18", ["auction", "bidder", "price", "channel", "url", "extra"])
    return got, want


CORE = [q1, q3, q7]  # a projection, a join, a window: `make test`; q0 runs over Kafka there
MORE = [q0, q2, q5, q8, q10, q11, q13, q14, q17, q18, q20, q21, q22]


@pytest.mark.parametrize("query", CORE, ids=lambda q: q.__name__)
def test_nexmark_query_matches_batch(world, events, query):
    got, want = query(world, *events)
    assert sum(want.values()) > 0
    assert got == want


@pytest.mark.slow
@pytest.mark.parametrize("query", MORE, ids=lambda q: q.__name__)
def test_more_nexmark_queries_match_batch(world, events, query):
    got, want = query(world, *events)
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


@pytest.mark.parametrize("query", [q0, pytest.param(q7, marks=pytest.mark.slow)],
                         ids=lambda q: q.__name__)
def test_nexmark_query_over_kafka_matches_batch(kafka_world, events, query):
    """The Kafka path: ``to_kafka`` into the session's broker, the streams of
    streams_kafka.sql (keys matched case-insensitively, SQL timestamp text decoded)."""
    kafka_world.data = None  # sentinels go to the topic instead
    got, want = query(kafka_world, *events)
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
