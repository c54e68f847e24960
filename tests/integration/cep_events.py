"""Events and the batch computation of the CEP tests: the issue's pattern
``e1=s[e1.cnt>0] FOLLOWEDBY e2=s[e2.id=e1.id and e2.cnt-e1.cnt>2][TIMES(2)] WITHIN
('10' minute)`` computed over the whole list in plain Python, written from the rules
(relaxed contiguity: for each start event, the first two later events of its id that
satisfy e2's condition; the match's span under WITHIN; every start event starts its own
match), not with streamjob's matcher."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime, timedelta, timezone

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
WITHIN = timedelta(minutes=10)
QUERY = ("insert into {table} select e1.id, e1.cnt, e1.ts, e2.cnt from pattern("
         "e1={stream}[e1.cnt>0] followedby e2={stream}[e2.id=e1.id and e2.cnt-e1.cnt>2][times(2)]"
         ") within ('10' minute)")
SENTINEL_ID = -1


def events(n: int, seed: int) -> list[dict]:
    """``n`` events ``{id, cnt, ts}`` in strictly increasing event time (1 to 60 s
    apart, so WITHIN cuts some matches), ids 0..4, counts 0..9."""
    rnd = random.Random(seed)
    out, t = [], 0
    for _ in range(n):
        t += rnd.randint(1, 60)
        out.append({"id": rnd.randint(0, 4), "cnt": rnd.randint(0, 9),
                    "ts": T0 + timedelta(seconds=t)})
    return out


def sentinels(last: datetime) -> list[dict]:
    """Two events far after ``last`` that match nothing: each pushes the watermark on, so
    every real event is matched by the time the second one is read."""
    return [{"id": SENTINEL_ID, "cnt": 0, "ts": last + timedelta(hours=h)} for h in (1, 2)]


def encode(evs: list[dict]) -> list[bytes]:
    return [json.dumps({**e, "ts": e["ts"].strftime("%Y-%m-%dT%H:%M:%SZ")}).encode()
            for e in evs]


def batch_matches(evs: list[dict]) -> Counter:
    """``Counter((e1.id, e1.cnt, e1.ts, last e2.cnt))`` of the pattern over ``evs``."""
    found = Counter()
    for i, e1 in enumerate(evs):
        if not e1["cnt"] > 0:
            continue
        taken = []
        for e in evs[i + 1:]:
            if e["ts"] - e1["ts"] >= WITHIN:
                break
            if e["id"] == e1["id"] and e["cnt"] - e1["cnt"] > 2:
                taken.append(e)
                if len(taken) == 2:
                    found[(e1["id"], e1["cnt"], e1["ts"], taken[-1]["cnt"])] += 1
                    break
    return found


def table_matches(location: str) -> Counter:
    """The sink's rows as :func:`batch_matches` keys them."""
    from streamjob.connectors.files.table import read_table

    rows = read_table(location).to_pylist()
    return Counter((r["id"], r["cnt"], r["ts"].replace(tzinfo=timezone.utc)
                    if r["ts"].tzinfo is None else r["ts"].astimezone(timezone.utc), r["last_cnt"])
                   for r in rows)
