"""Pieces of the benchmark's Nexmark scenario that need no Spark: how a result is
compared, how a SQL sink is read back without the sentinel bids' rows, and that every
query it runs has a query file, a pandas reference and Flink's published figure."""

from __future__ import annotations

import sqlite3
from collections import Counter

import pytest

from streamjob_tools.bench import nexmark
from streamjob_tools.dev.nexmark import NexmarkConfig, generate, reference

pytestmark = pytest.mark.unit


def test_compare_names_what_differs():
    got = Counter({(1, "a"): 2})
    want = Counter({(1, "a"): 1, (2, "b"): 1})
    out = nexmark.compare(got, want)
    assert out["equal"] is False
    assert out["rows"] == out["expected_rows"] == 2
    assert out["missing"] == ["(2, 'b')"] and out["unexpected"] == ["(1, 'a')"]
    assert nexmark.compare(want, Counter(want))["equal"] is True


def test_sql_sink_read_back_without_sentinels(tmp_path):
    db = tmp_path / "nexmark.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table nexmark_q18 (auction, bidder, price, channel, url, extra)")
        conn.executemany("insert into nexmark_q18 values (?, ?, ?, ?, ?, ?)",
                         [(1001, 2001, 5, "Google", "u", "e"), (-1, -1, 1, "x", "x", "")])
    got = reference.QUERIES["q18"].actual(db=db)
    assert got == Counter({(1001, 2001, 5, "Google", "u", "e"): 1})


def test_every_benchmarked_query_has_a_file_a_reference_and_flink_figure():
    for name in nexmark.RUN_ORDER:
        assert (nexmark.EXAMPLES / "queries" / f"{name}.sql").is_file()
        assert name in reference.QUERIES and nexmark.FLINK_PER_CORE[name] > 0
    assert set(reference.QUERIES) == set(nexmark.RUN_ORDER)
    windowed = [q for q in nexmark.RUN_ORDER if reference.QUERIES[q].windowed]
    assert nexmark.RUN_ORDER[-len(windowed):] == tuple(windowed)  # sentinels come last


def test_references_run_on_generated_events():
    e = generate(NexmarkConfig(seed=19, rate=10), 0, 2_000)
    for name, ref in reference.QUERIES.items():
        want = ref.expected(e.person, e.auction, e.bid)
        assert all(len(row) == len(ref.columns) for row in want), name


def test_job_cores_and_cpu_time():
    assert nexmark.job_cores() == 2  # the bench's local[2]
    assert nexmark.tree_cpu_s(set()) > 0
