"""The Nexmark event generator, vectorised with numpy: the rules of the reference one
(``nexmark/nexmark``, ``nexmark-flink/.../generator``: ``GeneratorConfig``,
``NexmarkGenerator``, ``PersonGenerator``, ``AuctionGenerator``, ``BidGenerator``,
``PriceGenerator``, ``StringsGenerator``; defaults of ``NexmarkConfiguration``).

Event ``n`` (0-based count) has event id ``n + 2`` (the reference's table source starts a
generator with ``firstEventId = 1`` and ``firstEventNumber = 1``, and
``getNextEventId = firstEventId + firstEventNumber + count``). ``id % 50`` picks the type:
0 a person, 1-3 an auction, 4-49 a bid (proportions 1:3:46). Its time is
``base_time_ms + floor((n + 1) * 1e6 / rate) // 1000`` (``timestampForEvent``, one
generator, ``outOfOrderGroupSize = 1``): monotonic, 10 events per ms at the default
10,000 events/s.

Ids: a person's id is ``1000 + id // 50`` (``lastBase0PersonId``), an auction's
``1000 + 3 * (id // 50) + (id % 50 - 1)`` (``lastBase0AuctionId``). Sellers, bidders and
bid auctions are "hot" ones (the first of the batch of the last 100 people/auctions; the
second person for bidders) with probability ``1 - 1/ratio`` (ratios 4, 4, 2), otherwise
a random recent one: one of the last ``numActivePeople`` (1000) people or
``numInFlightAuctions`` (100) auctions plus a lead of 10 ids not generated yet. As in the
reference, ``BidGenerator`` adds ``FIRST_PERSON_ID`` (1000) to the bidder twice, so a
bidder id is 1000 above the person it was drawn from (kept, so results compare with
Nexmark's).

Randomness: the reference draws from an unseeded ``SplittableRandom``, so its values
cannot be reproduced; here the same distributions come from numpy's PCG64, seeded by
``(seed, block)`` for each block of :data:`BLOCK` events, so the events are a function of
``(seed, n)`` and of the configuration only, however they are generated in chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

import numpy as np
import pandas as pd

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
PERSON_ID_LEAD = 10
AUCTION_ID_LEAD = 10
HOT_BATCH = 100  # HOT_SELLER_RATIO / HOT_AUCTION_RATIO / HOT_BIDDER_RATIO constants
EVENT_ID_OFFSET = 2  # firstEventId (1) + firstEventNumber (1)
BLOCK = 50_000  # events per independently seeded block (a multiple of 50)
MIN_STRING_LENGTH = 3
EXTRA_POOL = 1024 * 1024  # REUSABLE_EXTRA_STRING's length

US_STATES = "AZ,CA,ID,OR,WA,WY".split(",")
US_CITIES = "Phoenix,Los Angeles,San Francisco,Boise,Portland,Bend,Redmond,Seattle,Kent,Cheyenne".split(",")
FIRST_NAMES = "Peter,Paul,Luke,John,Saul,Vicky,Kate,Julie,Sarah,Deiter,Walter".split(",")
LAST_NAMES = "Shultz,Abrams,Spencer,White,Bartels,Walton,Smith,Jones,Noris".split(",")
HOT_CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]
CHANNELS_NUMBER = 10_000

PERSON_COLUMNS = ["id", "name", "emailAddress", "creditCard", "city", "state", "dateTime", "extra"]
AUCTION_COLUMNS = ["id", "itemName", "description", "initialBid", "reserve", "dateTime",
                   "expires", "seller", "category", "extra"]
BID_COLUMNS = ["auction", "bidder", "price", "channel", "url", "dateTime", "extra"]


@dataclass(frozen=True)
class NexmarkConfig:
    """What to generate; defaults are ``NexmarkConfiguration``'s (one generator).

    ``rate`` is ``firstEventRate`` in events/s of event time (not of wall clock: events
    are produced as fast as possible, the reference's ``maxEmitSpeed``); ``base_time_ms``
    the time of event 0's predecessor, ms since the epoch (the reference takes the wall
    clock; a fixed default, 2015-07-15T00:00:00Z as Beam's Nexmark, keeps runs equal);
    ``avg_*_bytes`` the average idealised sizes the ``extra`` field pads to."""

    seed: int = 0
    rate: int = 10_000
    base_time_ms: int = 1_436_918_400_000
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    avg_person_bytes: int = 200
    avg_auction_bytes: int = 500
    avg_bid_bytes: int = 100
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    num_in_flight_auctions: int = 100
    num_active_people: int = 1000

    @property
    def total(self) -> int:
        """Events per epoch: person + auction + bid proportions (50 by default)."""
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    def timestamp(self, event_number):
        """``timestampForEvent``: ms since the epoch of event number(s) ``event_number``
        (= count + 1), numpy int64."""
        delay_us = 1_000_000.0 / self.rate
        return self.base_time_ms + (np.asarray(event_number, dtype=np.float64) * delay_us).astype(np.int64) // 1000


@dataclass
class Events:
    """One chunk of events: a DataFrame per type (columns as Nexmark's Flink SQL DDL, plus
    ``event``: the 0-based event count, the position in the combined stream; times in ms
    since the epoch, int64)."""

    person: pd.DataFrame
    auction: pd.DataFrame
    bid: pd.DataFrame

    def __len__(self) -> int:
        return len(self.person) + len(self.auction) + len(self.bid)


def last_person_id(cfg: NexmarkConfig, eid):
    """``lastBase0PersonId``: the last person id (base 0) at event id(s) ``eid``."""
    epoch, offset = np.divmod(eid, cfg.total)
    return epoch * cfg.person_proportion + np.minimum(offset, cfg.person_proportion - 1)


def last_auction_id(cfg: NexmarkConfig, eid):
    """``lastBase0AuctionId``: the last auction id (base 0) at event id(s) ``eid``."""
    epoch, offset = np.divmod(eid, cfg.total)
    p, a = cfg.person_proportion, cfg.auction_proportion
    before = offset < p  # about to make a person: the last auction of the previous epoch
    after = offset >= p + a  # about to make a bid: the last auction of this epoch
    epoch = np.where(before, epoch - 1, epoch)
    offset = np.where(before | after, a - 1, offset - p)
    return epoch * a + offset


def next_person_id(cfg: NexmarkConfig, rng, eid):
    """``nextBase0PersonId``: a random active person, or up to 10 ahead (base 0)."""
    people = last_person_id(cfg, eid) + 1
    active = np.minimum(people, cfg.num_active_people)
    return people - active + (rng.random(len(eid)) * (active + PERSON_ID_LEAD)).astype(np.int64)


def next_auction_id(cfg: NexmarkConfig, rng, eid):
    """``nextBase0AuctionId``: a random in-flight auction, or up to 10 ahead (base 0)."""
    last = last_auction_id(cfg, eid)
    low = np.maximum(last - cfg.num_in_flight_auctions, 0)
    return low + (rng.random(len(eid)) * (last - low + 1 + AUCTION_ID_LEAD)).astype(np.int64)


def next_price(rng, n: int):
    """``PriceGenerator.nextPrice``: ``round(10 ** (u * 6) * 100)``, 100 to 100,000,000
    (cents), log-uniform; Java's ``Math.round`` is ``floor(x + 0.5)``."""
    return np.floor(10.0 ** (rng.random(n) * 6.0) * 100.0 + 0.5).astype(np.int64)


def next_strings(rng, n: int, max_length: int, special: str = " ") -> list[str]:
    """``StringsGenerator.nextString``: ``3 + U[0, max_length - 3)`` characters, each
    ``special`` with probability 1/13, else a-z; trimmed as Java's ``trim`` (only when
    ``special`` is a space)."""
    lengths = MIN_STRING_LENGTH + rng.integers(0, max_length - MIN_STRING_LENGTH, n)
    total = int(lengths.sum())
    chars = (rng.integers(0, 26, total) + 97).astype(np.uint8)
    chars[rng.integers(0, 13, total) == 0] = ord(special)
    pool = chars.tobytes().decode("ascii")
    ends = np.cumsum(lengths).tolist()
    starts = [0] + ends[:-1]
    if special == " ":
        return [pool[s:e].strip() for s, e in zip(starts, ends)]
    return [pool[s:e] for s, e in zip(starts, ends)]


@lru_cache(maxsize=8)
def _static(seed: int):
    """The reference's static tables, drawn once per seed: the 1 MiB pool ``extra``
    strings are cut from (``nextExactString``: 6 letters per random int, ``'a' + rnd % 26``
    with Java's signed remainder, so characters 'H' to 'z'), the 4 hot URLs and the
    10,000 channels with their URLs (9 in 10 with ``&channel_id=`` + the bit-reversed
    channel number, as ``BidGenerator.createChannelUrlCache``)."""
    rng = np.random.default_rng([seed, 2**31])
    ints = rng.integers(-(2**31), 2**31, -(-EXTRA_POOL // 6), dtype=np.int64)
    digits = np.empty((len(ints), 6), dtype=np.int64)
    for k in range(6):
        d = np.fmod(ints, 26)
        digits[:, k] = 97 + d
        ints = (ints - d) // 26
    pool = digits.ravel()[:EXTRA_POOL].astype(np.uint8).tobytes().decode("ascii")

    def base_urls(n):
        parts = [next_strings(rng, n, 5, "_") for _ in range(3)]
        return [f"https://www.nexmark.com/{a}/{b}/{c}/item.htm?query=1" for a, b, c in zip(*parts)]

    hot_urls = base_urls(len(HOT_CHANNELS))
    urls = base_urls(CHANNELS_NUMBER)
    with_id = rng.integers(0, 10, CHANNELS_NUMBER) > 0
    channel_urls = [u + f"&channel_id={_abs_int(_reverse32(i))}" if w else u
                    for i, (u, w) in enumerate(zip(urls, with_id))]
    return pool, hot_urls, np.array(channel_urls, dtype=object)


def _reverse32(i: int) -> int:
    """Java's ``Integer.reverse``: the 32 bits of ``i`` in reverse order, as a signed int."""
    r = int(f"{i & 0xFFFFFFFF:032b}"[::-1], 2)
    return r - (1 << 32) if r >= 1 << 31 else r


def _abs_int(i: int) -> int:
    """Java's ``Math.abs`` on an int: ``Integer.MIN_VALUE`` stays negative."""
    return i if i == -(2**31) else abs(i)


def next_extras(rng, pool: str, current, average: int) -> list[str]:
    """``StringsGenerator.nextExtra``: pads a record whose fields take ``current`` bytes
    to ``average`` on average: ``desired = average - current``, length
    ``desired - delta + U[0, 2 * delta)`` with ``delta = round(0.2 * desired)``, cut from
    the pool at a random offset; empty when ``current > average``."""
    current = np.asarray(current, dtype=np.int64)
    desired = average - current
    delta = np.floor(desired * 0.2 + 0.5).astype(np.int64)
    size = desired - delta + (rng.random(len(current)) * (2 * np.maximum(delta, 0))).astype(np.int64)
    size = np.where(current > average, 0, np.maximum(size, 0))
    offsets = (rng.random(len(current)) * (len(pool) - size)).astype(np.int64)
    return [pool[o:o + s] for o, s in zip(offsets.tolist(), size.tolist())]


def _lengths(strings) -> np.ndarray:
    return np.fromiter((len(s) for s in strings), dtype=np.int64, count=len(strings))


def _pick(table: list[str], idx) -> np.ndarray:
    return np.array(table, dtype=object)[idx]


def _persons(cfg, rng, pool, n, eid, ts) -> pd.DataFrame:
    k = len(n)
    names = _pick([f"{f} {last}" for f in FIRST_NAMES for last in LAST_NAMES],
                  rng.integers(0, len(FIRST_NAMES), k) * len(LAST_NAMES) + rng.integers(0, len(LAST_NAMES), k))
    emails = np.array([f"{a}@{b}.com" for a, b in zip(next_strings(rng, k, 7), next_strings(rng, k, 5))],
                      dtype=object)
    four = _pick([f"{i:04d}" for i in range(10_000)], rng.integers(0, 10_000, (4, k)))
    cards = four[0] + " " + four[1] + " " + four[2] + " " + four[3]
    cities = _pick(US_CITIES, rng.integers(0, len(US_CITIES), k))
    states = _pick(US_STATES, rng.integers(0, len(US_STATES), k))
    size = 8 + _lengths(names) + _lengths(emails) + 19 + _lengths(cities) + 2
    extra = next_extras(rng, pool, size, cfg.avg_person_bytes)
    return pd.DataFrame({"event": n, "id": last_person_id(cfg, eid) + FIRST_PERSON_ID, "name": names,
                         "emailAddress": emails, "creditCard": cards, "city": cities, "state": states,
                         "dateTime": ts, "extra": extra})


def _hot_or(rng, ratio: int, hot, other):
    """``random.nextInt(ratio) > 0 ? hot : other``: hot with probability 1 - 1/ratio."""
    return np.where(rng.integers(0, ratio, len(hot)) > 0, hot, other)


def _auctions(cfg, rng, pool, n, eid, ts) -> pd.DataFrame:
    k = len(n)
    hot = last_person_id(cfg, eid) // HOT_BATCH * HOT_BATCH
    seller = _hot_or(rng, cfg.hot_sellers_ratio, hot, next_person_id(cfg, rng, eid)) + FIRST_PERSON_ID
    category = FIRST_CATEGORY_ID + rng.integers(0, NUM_CATEGORIES, k)
    initial = next_price(rng, k)
    # nextAuctionLengthMs: on average the time until numInFlightAuctions more auctions
    ahead = cfg.num_in_flight_auctions * cfg.total // cfg.auction_proportion
    horizon = cfg.timestamp(n + 1 + ahead) - ts
    expires = ts + 1 + (rng.random(k) * np.maximum(horizon * 2, 1)).astype(np.int64)
    names = next_strings(rng, k, 20)
    descriptions = next_strings(rng, k, 100)
    reserve = initial + next_price(rng, k)
    size = 8 + _lengths(names) + _lengths(descriptions) + 40
    extra = next_extras(rng, pool, size, cfg.avg_auction_bytes)
    return pd.DataFrame({"event": n, "id": last_auction_id(cfg, eid) + FIRST_AUCTION_ID,
                         "itemName": names, "description": descriptions, "initialBid": initial,
                         "reserve": reserve, "dateTime": ts, "expires": expires, "seller": seller,
                         "category": category, "extra": extra})


def _bids(cfg, rng, pool, hot_urls, channel_urls, n, eid, ts) -> pd.DataFrame:
    k = len(n)
    hot_auction = last_auction_id(cfg, eid) // HOT_BATCH * HOT_BATCH
    auction = _hot_or(rng, cfg.hot_auction_ratio, hot_auction, next_auction_id(cfg, rng, eid))
    hot_bidder = last_person_id(cfg, eid) // HOT_BATCH * HOT_BATCH + 1
    bidder = _hot_or(rng, cfg.hot_bidders_ratio, hot_bidder, next_person_id(cfg, rng, eid))
    price = next_price(rng, k)
    hot = rng.integers(0, 2, k) > 0  # HOT_CHANNELS_RATIO = 2
    hot_i = rng.integers(0, len(HOT_CHANNELS), k)
    chan_i = rng.integers(0, CHANNELS_NUMBER, k)
    channel = np.where(hot, _pick(HOT_CHANNELS, hot_i),
                       _pick([f"channel-{i}" for i in range(CHANNELS_NUMBER)], chan_i))
    url = np.where(hot, _pick(hot_urls, hot_i), channel_urls[chan_i])
    extra = next_extras(rng, pool, np.full(k, 32), cfg.avg_bid_bytes)
    return pd.DataFrame({"event": n, "auction": auction + FIRST_AUCTION_ID,
                         "bidder": bidder + 2 * FIRST_PERSON_ID,  # the reference adds it twice
                         "price": price, "channel": channel, "url": url, "dateTime": ts,
                         "extra": extra})


def generate(cfg: NexmarkConfig, start: int, count: int) -> Events:
    """Events ``start`` to ``start + count - 1`` (0-based counts), deterministic in
    ``cfg`` (its seed included): any split into chunks yields the same events.

    Raises:
        ValueError: a negative ``start`` or ``count``, or a proportion or rate below 1.
    """
    if start < 0 or count < 0:
        raise ValueError(f"start and count must be >= 0 (got {start}, {count})")
    if min(cfg.rate, cfg.person_proportion, cfg.auction_proportion, cfg.bid_proportion) < 1:
        raise ValueError("rate and proportions must be >= 1")
    parts = []
    first_block, last_block = start // BLOCK, (start + count - 1) // BLOCK
    for block in range(first_block, last_block + 1 if count else first_block):
        events = _block(cfg, block)
        lo, hi = max(start, block * BLOCK), min(start + count, (block + 1) * BLOCK)
        parts.append(Events(*(df[(df.event >= lo) & (df.event < hi)] for df in
                              (events.person, events.auction, events.bid))))
    if not parts:
        parts = [_block_of(cfg, 0, np.arange(0))]
    return Events(*(pd.concat([getattr(p, t) for p in parts], ignore_index=True)
                    for t in ("person", "auction", "bid")))


@lru_cache(maxsize=4)
def _block(cfg: NexmarkConfig, block: int) -> Events:
    return _block_of(cfg, block, np.arange(block * BLOCK, (block + 1) * BLOCK, dtype=np.int64))


def _block_of(cfg: NexmarkConfig, block: int, n) -> Events:
    pool, hot_urls, channel_urls = _static(cfg.seed)
    eid = n + EVENT_ID_OFFSET
    ts = cfg.timestamp(n + 1)
    rem = eid % cfg.total
    kind = np.where(rem < cfg.person_proportion, 0,
                    np.where(rem < cfg.person_proportion + cfg.auction_proportion, 1, 2))
    rngs = [np.random.default_rng([cfg.seed, block, t]) for t in range(3)]
    m = [kind == t for t in range(3)]
    return Events(_persons(cfg, rngs[0], pool, n[m[0]], eid[m[0]], ts[m[0]]),
                  _auctions(cfg, rngs[1], pool, n[m[1]], eid[m[1]], ts[m[1]]),
                  _bids(cfg, rngs[2], pool, hot_urls, channel_urls, n[m[2]], eid[m[2]], ts[m[2]]))


@lru_cache(maxsize=4096)
def _second_text(second: int) -> str:
    return datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


_MILLIS = np.array([f".{i:03d}" for i in range(1000)], dtype=object)


def format_times(ms) -> np.ndarray:
    """ms since the epoch as Flink SQL's JSON text of a ``TIMESTAMP(3)`` in UTC:
    ``2015-07-15 00:00:00.001`` (``json.timestamp-format.standard = SQL``, the default);
    Spark's JSON reader and streamjob's Kafka source read it as a TIMESTAMP."""
    ms = np.asarray(ms, dtype=np.int64)
    seconds, millis = np.divmod(ms, 1000)
    uniq, inverse = np.unique(seconds, return_inverse=True)
    texts = np.array([_second_text(int(s)) for s in uniq], dtype=object)
    return texts[inverse] + _MILLIS[millis]
