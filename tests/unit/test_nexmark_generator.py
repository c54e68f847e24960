"""The Nexmark generator (tools/streamjob_tools/dev/nexmark) against the reference generator's rules
(github.com/nexmark/nexmark, nexmark-flink generator classes): determinism by seed, the
1:3:46 mix, id and time rules, field distributions. No Spark, no broker."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import numpy as np
import pytest

from streamjob_tools.dev.nexmark import NexmarkConfig, format_times, generate, json_lines, to_files
from streamjob_tools.dev.nexmark.generator import (HOT_CHANNELS, US_CITIES, US_STATES, _reverse32)

pytestmark = pytest.mark.unit

CFG = NexmarkConfig(seed=7)


def kinds(events) -> list[str]:
    tagged = [(n, t) for t in ("person", "auction", "bid") for n in getattr(events, t).event]
    return [t for _, t in sorted(tagged)]


def test_same_seed_same_events_other_seed_other_events():
    a, b = json_lines(generate(CFG, 0, 500)), json_lines(generate(NexmarkConfig(seed=7), 0, 500))
    assert a == b
    c = json_lines(generate(NexmarkConfig(seed=8), 0, 500))
    assert c["person"] != a["person"] and c["bid"] != a["bid"]


def test_chunks_do_not_change_the_events():
    """Events are a function of (seed, position): generated in one go or in pieces that
    cross a block boundary, they are the same."""
    whole = generate(CFG, 49_900, 300)
    parts = [generate(CFG, 49_900, 77), generate(CFG, 49_977, 123), generate(CFG, 50_100, 100)]
    for t in ("person", "auction", "bid"):
        joined = np.concatenate([getattr(p, t)[["event", "dateTime"]].to_numpy() for p in parts])
        assert (joined == getattr(whole, t)[["event", "dateTime"]].to_numpy()).all()
        assert sum((getattr(p, t).extra.tolist() for p in parts), []) == getattr(whole, t).extra.tolist()


def test_mix_is_1_3_46_in_every_50_events():
    """Event id = count + 2 (firstEventId 1 + firstEventNumber 1), its type by id % 50:
    0 person, 1-3 auction, else bid. The first 50 events: auctions 1001-1003 (ids 2, 3 are
    auctions, id 50 the first person), 46 bids, 1 person."""
    events = generate(CFG, 0, 50)
    assert (len(events.person), len(events.auction), len(events.bid)) == (1, 3, 46)
    k = kinds(events)
    assert k[:2] == ["auction", "auction"] and k[48] == "person" and k[49] == "auction"
    many = generate(CFG, 0, 5_000)
    assert (len(many.person), len(many.auction), len(many.bid)) == (100, 300, 4_600)


def test_ids_follow_the_reference_rules():
    e = generate(CFG, 0, 20_000)
    p, a, b = e.person, e.auction, e.bid
    assert p.id.tolist() == list(range(1001, 1001 + len(p)))  # one new person per 50 events
    assert a.id.tolist() == list(range(1001, 1001 + len(a)))
    # ids known when each event is made: persons and auctions generated before it
    last_p = np.searchsorted(p.event.to_numpy(), a.event.to_numpy()) + 1000
    last_a = np.searchsorted(a.event.to_numpy(), b.event.to_numpy()) + 1000
    last_pb = np.searchsorted(p.event.to_numpy(), b.event.to_numpy()) + 1000
    # sellers: the hot one (first of the last 100 people) or one of the last 1000 + 10 ahead
    assert ((a.seller <= last_p + 10) & (a.seller >= np.maximum(last_p - 1000, 1000))).all()
    assert ((a.seller - 1000) % 100 == 0).mean() > 0.7  # hot sellers: 3 in 4
    # auctions of bids: the hot one (first of the last 100) or one of the last 100 + 10 ahead
    assert ((b.auction <= last_a + 10) & (b.auction >= np.maximum(last_a - 100, 1000))).all()
    assert (b.auction % 100 == 0).mean() > 0.45  # hot auctions: 1 in 2
    # bidders carry FIRST_PERSON_ID twice, as the reference's BidGenerator does
    drawn = b.bidder - 1000
    assert ((drawn <= last_pb + 10) & (drawn >= np.maximum(last_pb - 1000, 1000))).all()
    assert ((drawn - 1000) % 100 == 1).mean() > 0.7  # hot bidders: the second of the batch
    assert set(a.category) == {10, 11, 12, 13, 14}


def test_times_are_monotonic_at_the_rate():
    """timestampForEvent: base + floor((count + 1) * 1e6 / rate) // 1000 ms."""
    e = generate(CFG, 0, 1_000)
    times = np.empty(1_000, dtype=np.int64)
    for t in ("person", "auction", "bid"):
        df = getattr(e, t)
        times[df.event.to_numpy()] = df.dateTime.to_numpy()
    assert (np.diff(times) >= 0).all()
    assert times[0] == CFG.base_time_ms and times[-1] == CFG.base_time_ms + 100  # 10 per ms
    slow = generate(NexmarkConfig(seed=7, rate=10), 0, 100)
    assert slow.auction.event.iloc[-1] == 99  # id 101: an auction
    assert slow.auction.dateTime.iloc[-1] - CFG.base_time_ms == 10_000  # 100 * 100 ms
    a = e.auction
    assert ((a.expires > a.dateTime) & (a.expires - a.dateTime <= 2 * 166 + 1)).all()


def test_fields_follow_the_reference_distributions():
    e = generate(CFG, 0, 50_000)
    p, a, b = e.person, e.auction, e.bid
    assert set(p.city) <= set(US_CITIES) and set(p.state) <= set(US_STATES)
    assert p.creditCard.str.fullmatch(r"\d{4} \d{4} \d{4} \d{4}").all()
    assert p.emailAddress.str.fullmatch(r"[a-z ]*@[a-z ]*\.com").all()
    assert p.name.str.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+").all()
    for prices in (a.initialBid, b.price):
        assert prices.min() >= 100 and prices.max() <= 100_000_000
    assert (a.reserve > a.initialBid).all()
    assert a.itemName.str.len().max() <= 19 and a.description.str.len().max() <= 99
    # extra pads each record to its average size: bids 100 - 32 = 68 +- 20 %
    assert b.extra.str.len().between(54, 81).all()
    assert abs(b.extra.str.len().mean() - 68) < 1
    assert abs((p.extra.str.len() + 8 + p.name.str.len() + p.emailAddress.str.len() + 19
                + p.city.str.len() + 2).mean() - 200) < 3
    hot = b.channel.isin(HOT_CHANNELS)
    assert abs(hot.mean() - 0.5) < 0.02
    assert b.channel[~hot].str.fullmatch(r"channel-\d+").all()
    assert b.url.str.startswith("https://www.nexmark.com/").all()
    with_id = b.url[~hot].str.contains("&channel_id=")
    assert abs(with_id.mean() - 0.9) < 0.05


def test_channel_ids_are_javas_bit_reversal():
    assert _reverse32(1) == -(2**31) and _reverse32(2) == 2**30 and _reverse32(0) == 0


def test_json_records_carry_nexmarks_names_and_sql_times(tmp_path):
    lines = json_lines(generate(CFG, 0, 100))
    person = json.loads(lines["person"][0])
    assert list(person) == ["id", "name", "emailAddress", "creditCard", "city", "state",
                            "dateTime", "extra"]
    assert person["dateTime"] == "2015-07-15 00:00:00.004"
    combined = [json.loads(x) for x in lines["events"]]
    assert [c["event_type"] for c in combined[:3]] == [1, 1, 2]
    assert combined[48]["person"] == person and combined[48]["bid"] is None
    assert len(combined) == 100
    assert format_times([0, 1_436_918_400_123])[1] == "2015-07-15 00:00:00.123"
    assert datetime.fromtimestamp(CFG.base_time_ms / 1000, timezone.utc).isoformat() == \
        "2015-07-15T00:00:00+00:00"
    stats = to_files(CFG, 120, tmp_path, chunk=50, lower_keys=True)
    assert stats.records == {"person": 2, "auction": 8, "bid": 110, "events": 120}
    bids = sorted((tmp_path / "bid").glob("part-*.json"))
    assert len(bids) == 3 and "datetime" in json.loads(bids[0].read_text().splitlines()[0])
    assert (tmp_path / "side_input" / "side_input.csv").read_text().splitlines()[9999] == "9999,9999"


def test_cli_writes_files_and_wants_one_target(tmp_path):
    from click.testing import CliRunner

    from streamjob_tools.dev.__main__ import main

    r = CliRunner().invoke(main, ["nexmark", "--events", "100", "--seed", "3", "--dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "100 events to" in r.output and "bid 92" in r.output and "events/s" in r.output
    first = json.loads((tmp_path / "person" / "part-000000000000.json").read_text().splitlines()[0])
    assert "dateTime" in first  # Nexmark's names unless --lower-keys
    r = CliRunner().invoke(main, ["nexmark", "--events", "10"])
    assert r.exit_code == 2 and "give one of --broker HOST:PORT or --dir DIR" in r.output
