"""The Nexmark queries of examples/nexmark computed in batch with pandas, and the sinks of
their streamjob jobs read back, both as multisets of rows (``Counter`` of tuples), so a
job's result can be compared with the same query over the same events: in the tests
(tests/integration/test_nexmark.py, small) and in the benchmark (streamjob_tools.bench.nexmark,
large).

Inputs are the frames of :func:`~streamjob_tools.dev.nexmark.generate` (``person``,
``auction``, ``bid``; times in ms since the epoch). Each :class:`Reference` names the
sink's columns, which of them are times (read back as ms), whether the query needs the
watermark pushed past its last window (``windowed``: two sentinel bids, see
:func:`sentinel_bid`) and, for the SQL sinks, the SQLite table. The semantics follow
each query file's comment (examples/nexmark/README.md); where Nexmark's own query
differs (ties, rewrites) the file's rewrite is what is computed here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timezone
from decimal import Decimal
from pathlib import Path
from typing import Callable

import pandas as pd

SENTINEL = -1
"""``auction`` and ``bidder`` of the sentinel bids; their own result rows are left out."""


@dataclass(frozen=True)
class Reference:
    """One query: ``expected(person, auction, bid) -> Counter`` of row tuples in the
    order of ``columns`` (the sink's columns compared), ``times`` among them read back as
    ms, ``windowed`` (results appear once the watermark passes a window), ``sql_table``
    (a SQL sink in ``${STREAMJOB_HOME}/nexmark.db``; None: Parquet at the table's
    location) and ``drop`` (the column whose value -1 marks a sentinel's row)."""

    name: str
    columns: tuple[str, ...]
    expected: Callable[[pd.DataFrame, pd.DataFrame, pd.DataFrame], Counter]
    times: tuple[str, ...] = ()
    windowed: bool = False
    sql_table: str | None = None
    drop: str | None = "auction"

    def actual(self, location: str | Path | None = None, db: str | Path | None = None) -> Counter:
        """The job's sink as a Counter of ``columns`` tuples: the Parquet table at
        ``location``, or ``sql_table`` in the SQLite file ``db``; sentinel rows left out."""
        if self.sql_table:
            return _sql_rows(db, self.sql_table, self.columns, self.drop)
        return _parquet_rows(location, self.columns, self.times, self.drop)


def sentinel_bid(base_time_ms: int, hours: int) -> dict:
    """A bid ``hours`` after ``base_time_ms`` (auction and bidder -1), as the JSON record
    of the bid stream: producing one after the events (each in its own micro-batch, one
    per partition) moves the watermark past every window of the events
    (tests/integration/test_windows_and_derived.py)."""
    from .generator import format_times

    ms = base_time_ms + hours * 3_600_000
    return {"auction": SENTINEL, "bidder": SENTINEL, "price": 1, "channel": "x", "url": "x",
            "datetime": format_times([ms])[0], "extra": ""}


def _ms(value) -> int:
    """A timestamp read back from Parquet (UTC) as ms since the epoch."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return round(value.timestamp() * 1000)


def _parquet_rows(location, cols, times, drop) -> Counter:
    from streamjob.connectors.files.table import read_table

    rows = [{k.lower(): v for k, v in r.items()} for r in read_table(str(location)).to_pylist()]
    low = [c.lower() for c in cols]
    tlow = {c.lower() for c in times}
    return Counter(tuple(_ms(r[c]) if c in tlow and r[c] is not None else r[c] for c in low)
                   for r in rows if not (drop and r.get(drop.lower()) == SENTINEL))


def _sql_rows(db, table, cols, drop) -> Counter:
    import sqlite3

    where = f" where {drop} <> {SENTINEL}" if drop else ""
    with sqlite3.connect(str(db)) as conn:
        return Counter(conn.execute(f"select {', '.join(cols)} from {table}{where}").fetchall())


def rows(df: pd.DataFrame, cols) -> Counter:
    """``df``'s rows as a Counter of ``cols`` tuples."""
    return Counter(map(tuple, df[list(cols)].itertuples(index=False, name=None)))


BID = ("auction", "bidder", "price", "dateTime", "extra")


def _q0(person, auction, bid):
    return rows(bid, BID)


def _q1(person, auction, bid):
    return rows(bid.assign(price=[Decimal(p) * Decimal("0.908") for p in bid.price]), BID)


def _q2(person, auction, bid):
    return rows(bid[bid.auction % 123 == 0], ["auction", "price"])


def _q3(person, auction, bid):
    a = auction[auction.category == 10]
    p = person[person.state.isin(["OR", "ID", "CA"])]
    want = a.merge(p, left_on="seller", right_on="id", suffixes=("_a", ""))
    return rows(want.assign(id=want.id_a), ["name", "city", "state", "id"])


def _q5(person, auction, bid):
    counts = Counter()
    for a, t in zip(bid.auction, bid.dateTime):
        first = t // 2000 * 2000
        for start in range(first - 8000, first + 1, 2000):  # the 5 sliding windows holding t
            counts[(start, a)] += 1
    best: dict = {}
    for (start, a), n in counts.items():
        best[start] = max(best.get(start, (0, 0)), (n, a))
    return Counter((a, n, s) for s, (n, a) in best.items())


def _q7(person, auction, bid):
    cols = ["price", "auction", "bidder", "dateTime", "extra"]
    best = Counter()
    for _, w in bid.groupby(bid.dateTime // 10_000):
        best[max(map(tuple, w[cols].itertuples(index=False, name=None)))] += 1
    return best


def _q8(person, auction, bid):
    sellers = set(zip(auction.seller, auction.dateTime // 10_000))
    keep = [(i, t // 10_000) in sellers for i, t in zip(person.id, person.dateTime)]
    want = person[keep].assign(stime=person.dateTime[keep] // 10_000 * 10_000)
    return rows(want, ["id", "name", "stime"])


def _q10(person, auction, bid):
    return rows(bid, BID)


def _q11(person, auction, bid):
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
    return want


def _q13(person, auction, bid):
    want = bid.assign(value=(bid.auction % 10_000).astype(str))
    return rows(want, ["auction", "bidder", "price", "dateTime", "value"])


def _q14(person, auction, bid):
    euro = bid.price * 0.908
    want = bid[(euro > 1_000_000) & (euro < 50_000_000)]
    hour = pd.to_datetime(want.dateTime, unit="ms", utc=True).dt.hour
    want = want.assign(price=[Decimal(p) * Decimal("0.908") for p in want.price],
                       bidTimeType=["dayTime" if 8 <= h <= 18 else "nightTime" if h <= 6 or h >= 20
                                    else "otherTime" for h in hour],
                       c_counts=want.extra.str.count("c"))
    return rows(want, ["auction", "bidder", "price", "bidTimeType", "dateTime", "extra",
                       "c_counts"])


def _q17(person, auction, bid):
    p = bid.price
    per = bid.assign(day=pd.to_datetime(bid.dateTime, unit="ms", utc=True).dt.strftime("%Y-%m-%d"),
                     r1=(p < 10_000).astype("int64"),
                     r2=((p >= 10_000) & (p < 1_000_000)).astype("int64"),
                     r3=(p >= 1_000_000).astype("int64"))
    agg = per.groupby(["auction", "day"]).agg(
        total=("price", "size"), r1=("r1", "sum"), r2=("r2", "sum"), r3=("r3", "sum"),
        lo=("price", "min"), hi=("price", "max"), sum=("price", "sum")).reset_index()
    agg["avg"] = (agg["sum"] / agg["total"]).astype("int64")  # cast(avg as bigint) truncates
    return rows(agg, ["auction", "day", "total", "r1", "r2", "r3", "lo", "hi", "avg", "sum"])


def _q18(person, auction, bid):
    # max(struct(dateTime, price, channel, url, extra)) per (auction, bidder): the last
    # row of each group in that order
    order = ["auction", "bidder", "dateTime", "price", "channel", "url", "extra"]
    last = bid.sort_values(order, kind="stable").drop_duplicates(["auction", "bidder"],
                                                                 keep="last")
    return rows(last, ["auction", "bidder", "price", "channel", "url", "extra"])


def _q20(person, auction, bid):
    want = bid.merge(auction[auction.category == 10], left_on="auction", right_on="id",
                     suffixes=("", "_a"))
    return rows(want, ["auction", "bidder", "price", "channel", "url", "dateTime", "extra",
                       "itemName", "description", "initialBid", "reserve", "dateTime_a",
                       "expires", "seller", "category", "extra_a"])


def _q21(person, auction, bid):
    ids = {"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
    found = bid.url.str.extract(r"(&|^)channel_id=([^&]*)")[1]
    cid = [ids.get(c.lower(), f if isinstance(f, str) and f else None)
           for c, f in zip(bid.channel, found)]
    want = bid.assign(channel_id=cid)
    return rows(want[want.channel_id.notna()], ["auction", "bidder", "price", "channel",
                                                "channel_id"])


def _q22(person, auction, bid):
    parts = bid.url.str.split("/")
    want = bid.assign(dir1=parts.str[3], dir2=parts.str[4], dir3=parts.str[5])
    return rows(want, ["auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"])


QUERIES: dict[str, Reference] = {r.name: r for r in (
    Reference("q0", BID, _q0, times=("dateTime",)),
    Reference("q1", BID, _q1, times=("dateTime",)),
    Reference("q2", ("auction", "price"), _q2),
    Reference("q3", ("name", "city", "state", "id"), _q3, drop=None),
    Reference("q5", ("auction", "num", "starttime"), _q5, times=("starttime",), windowed=True),
    Reference("q7", ("price", "auction", "bidder", "dateTime", "extra"), _q7,
              times=("dateTime",), windowed=True),
    Reference("q8", ("id", "name", "stime"), _q8, times=("stime",), drop=None),
    Reference("q10", BID, _q10, times=("dateTime",)),
    Reference("q11", ("bidder", "bid_count", "starttime", "endtime"), _q11,
              times=("starttime", "endtime"), windowed=True, drop="bidder"),
    Reference("q13", ("auction", "bidder", "price", "dateTime", "value"), _q13,
              times=("dateTime",)),
    Reference("q14", ("auction", "bidder", "price", "bidTimeType", "dateTime", "extra",
                      "c_counts"), _q14, times=("dateTime",)),
    Reference("q17", ("auction", "day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
                      "min_price", "max_price", "avg_price", "sum_price"), _q17,
              sql_table="nexmark_q17"),
    Reference("q18", ("auction", "bidder", "price", "channel", "url", "extra"), _q18,
              sql_table="nexmark_q18"),
    Reference("q20", ("auction", "bidder", "price", "channel", "url", "bid_dateTime",
                      "bid_extra", "itemName", "description", "initialBid", "reserve",
                      "auction_dateTime", "expires", "seller", "category", "auction_extra"),
              _q20, times=("bid_dateTime", "auction_dateTime", "expires")),
    Reference("q21", ("auction", "bidder", "price", "channel", "channel_id"), _q21),
    Reference("q22", ("auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"), _q22),
)}
"""The queries with a batch reference. Not here: q12 (processing-time windows: their
contents depend on when each micro-batch ran, there is no batch equivalent) and q23
(not in Nexmark's published results; its output outgrows its input, docs/performance.md)."""
