"""The fast paths of :func:`streamjob.spark.json_keys.json_columns` (a line whose key
tokens are all spelt as declared parsed as it is; a flat record whose keys differ from
their columns only in case renamed in its text, then parsed once) give what the general
path (keys parsed as ``map<string, variant>``, the record respelt, parsed again: the
implementation before them) gives, on generated lines with random key casings, nested
objects, escapes, duplicates, spaces, wrong types and malformed text (real Spark)."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamjob.spark.json_keys import _general, json_columns

pytestmark = [pytest.mark.spark, pytest.mark.slow]

COLUMNS = [{"name": "auction", "type": "bigint"}, {"name": "datetime", "type": "timestamp"},
           {"name": "itemName", "type": "string"}, {"name": "price", "type": "double"},
           {"name": "ok", "type": "boolean"}]
VALUES = {"bigint": st.one_of(st.integers(-2**40, 2**40), st.just("12"), st.none()),
          "timestamp": st.one_of(st.sampled_from(["2015-07-15 00:00:01.000",
                                                  "2024-01-01T00:00:02Z", "bad"]), st.none()),
          "string": st.one_of(st.text("ab {}[]\"\\/:,é", max_size=6), st.integers(0, 9),
                              st.none()),
          "double": st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.integers(0, 5)),
          "boolean": st.one_of(st.booleans(), st.just("true"))}


def casings(name: str):
    return st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
        lambda ups: "".join(c.upper() if u else c.lower() for c, u in zip(name, ups)))


@st.composite
def line(draw) -> str:
    pairs = []
    for col in COLUMNS:
        for _ in range(draw(st.integers(0, 2))):  # absent, once, or twice in some case
            key = draw(st.one_of(st.just(col["name"]), casings(col["name"])))
            pairs.append((key, draw(VALUES[col["type"]])))
    if draw(st.booleans()):
        pairs.append(("other", draw(st.sampled_from(["x", "DateTime", 3]))))
    if draw(st.integers(0, 5)) == 0:  # a nested object with a column's key
        pairs.append(("nested", {draw(casings("itemname")): 1}))
    draw(st.randoms()).shuffle(pairs)
    colon = draw(st.sampled_from([":", ":", " : "]))
    text = "{" + ",".join(json.dumps(k) + colon + json.dumps(v) for k, v in pairs) + "}"
    shape = draw(st.integers(0, 12))
    if shape == 0:
        text = text.replace("a", "\\u0061", 1)  # an escaped key or value
    elif shape == 1:
        text = text[:max(1, len(text) // 2)]  # malformed
    elif shape == 2:
        text = f"[{text}, {text}]"
    elif shape == 3:
        text = "  "
    return text


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from streamjob.home import Home
    from streamjob.spark.session import spark_session

    return spark_session(Home.open(tmp_path_factory.mktemp("jk") / "home",
                                   {"spark.master": "local[2]"}))


def both(spark, lines: list[str], columns=COLUMNS):
    df = spark.createDataFrame([(x,) for x in lines], "value string")
    fast = [tuple(r) for r in json_columns(df, columns).collect()]
    general = [tuple(r) for r in _general(df, columns).collect()]
    return fast, general


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(line(), min_size=1, max_size=40))
def test_fast_paths_equal_the_general_path(spark, lines):
    fast, general = both(spark, lines)
    assert fast == general, [x for x, a, b in zip(lines, fast, general) if a != b][:3]


NEXMARK = {  # examples/nexmark/streams_files.sql, unquoted names stored lower-case
    "bid": "auction bigint, bidder bigint, price bigint, channel string, url string, "
           "datetime timestamp, extra string",
    "auction": "id bigint, itemname string, description string, initialbid bigint, "
               "reserve bigint, datetime timestamp, expires timestamp, seller bigint, "
               "category bigint, extra string",
    "person": "id bigint, name string, emailaddress string, creditcard string, city string, "
              "state string, datetime timestamp, extra string"}


def test_nexmark_events_equal_the_general_path(spark, tmp_path):
    """Every Nexmark event of 20,000 (camelCase keys such as ``dateTime`` into columns
    stored lower-case: the renamed path) reads as on the general path."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "streamjob.dev", "nexmark", "--events", "20000",
                    "--seed", "1", "--dir", str(tmp_path)], check=True, capture_output=True)
    for stream, ddl in NEXMARK.items():
        columns = [{"name": n, "type": t} for n, t in (c.split() for c in ddl.split(", "))]
        df = spark.read.format("text").load(str(tmp_path / stream))
        fast = json_columns(df, columns).collect()
        assert fast == _general(df, columns).collect()
        assert len(fast) > 100 and all(r.datetime is not None for r in fast), stream
