"""The Flink comparison's pieces without Flink: the Flink SQL it submits, the folding of
Flink's print changelog, the StreamSQL scripts of the streamjob side (parsed by
streamjob's own parser), the CSV files both read and the result check (real SQLite).
The whole scenario against a real Flink runs in tests/integration/test_bench.py."""

from __future__ import annotations

import sqlite3

import pytest

from streamjob_tools.bench import flink, flink_job
from streamjob.grammar import parse_script

pytestmark = pytest.mark.unit


def test_flights_spec_reads_the_csv_directory_in_streaming_with_nexmark_options():
    spec = flink_job.flights_spec("/data/it's", 2)
    source, sink = spec["statements"]
    assert "'connector'='filesystem'" in source and "'format'='csv'" in source
    assert "'path'='/data/it''s'" in source  # a quote in the path is doubled
    assert "`month` INT" in source and "dep_delay DOUBLE" in source
    assert "'connector'='print'" in sink and "PRIMARY KEY (carrier, `month`)" in sink
    assert spec["inserts"] == [f"INSERT INTO carrier_month {flink_job.AGG_SELECT}"]
    assert spec["options"]["parallelism.default"] == "2"
    assert spec["options"]["table.exec.mini-batch.enabled"] == "true"


@pytest.mark.parametrize("query", sorted(flink_job.NEXMARK_QUERIES))
def test_nexmark_spec_sinks(query):
    hole = flink_job.nexmark_spec("/nx/bid", query, 2)
    files = flink_job.nexmark_spec("/nx/bid", query, 2, "/out")
    assert "'connector'='blackhole'" in hole["statements"][1]
    assert "'path'='/out'" in files["statements"][1] and "'format'='json'" in files["statements"][1]
    assert "WATERMARK FOR `dateTime`" in files["statements"][0]
    assert files["inserts"][0].startswith(f"INSERT INTO nexmark_{query} SELECT")


def test_final_rows_folds_the_upsert_changelog():
    lines = ["1> +I[AA, 1, 10, 2.5]", "2> +I[UA, 1, 3, null]", "+U[AA, 1, 12, 3.0]",
             "-U[AA, 1, 12, 3.0]", "+I[DL, 2, 1, 1.0]", "-D[DL, 2, 1, 1.0]",
             "log line", "+I[incomplete"]
    rows = flink_job.final_rows(lines)
    assert rows == {("AA", "1"): ["AA", "1", "12", "3.0"], ("UA", "1"): ["UA", "1", "3", "null"]}


def test_streamjob_scripts_parse(tmp_path):
    flights = parse_script(flink.flights_script(tmp_path / "csv"))
    assert [type(s).__name__ for s in flights][-1].startswith("Start")
    assert len(flights) == 4
    for query in flink_job.NEXMARK_QUERIES:
        stmts = parse_script(flink.nexmark_script(query))
        assert type(stmts[-1]).__name__.startswith("Start")


def test_write_flights_csv_replays_and_writes_ints_and_nulls(tmp_path):
    import pandas as pd

    from streamjob_tools.bench.jobs import COLUMN_NAMES

    row = dict.fromkeys(COLUMN_NAMES, 1)
    df = pd.DataFrame([{**row, "dep_time": 517.0, "carrier": "UA"},
                       {**row, "dep_time": float("nan"), "carrier": "AA"},
                       {**row, "dep_time": 2.0, "carrier": "B6", "tailnum": None}])
    n = flink.write_flights_csv(tmp_path, 7, df)
    files = sorted(tmp_path.iterdir())
    lines = [ln.split(",") for f in files for ln in f.read_text().splitlines()]
    assert n == 7 and len(files) == 5 and len(lines) == 7  # 2 files per replay; 1 row: 1
    assert all(len(fields) == 14 for fields in lines)
    assert [fields[3] for fields in lines[:3]] == ["517", "", "2"]  # no "517.0"; NULL empty
    assert [fields[7] for fields in lines] == ["UA", "AA", "B6"] * 2 + ["UA"]
    assert lines[2][9] == ""


def _table(path, rows):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE carrier_month (carrier TEXT, month INT, flights INT, "
                "avg_dep_delay REAL)")
    con.executemany("INSERT INTO carrier_month VALUES (?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return path


def test_check_flights_accepts_equal_and_names_a_difference(tmp_path):
    out = "1> +I[AA, 1, 10, 2.5]\n2> +I[UA, 2, 3, null]\n1> +U[AA, 1, 11, 2.75]\n"
    ok = _table(tmp_path / "ok.db", [("AA", 1, 11, 2.75 + 1e-13), ("UA", 2, 3, None)])
    assert flink.check_flights(out, ok) == 2
    bad = _table(tmp_path / "bad.db", [("AA", 1, 10, 2.5), ("UA", 2, 3, None)])
    with pytest.raises(RuntimeError, match=r"\('AA', 1\): Flink count 11"):
        flink.check_flights(out, bad)
    short = _table(tmp_path / "short.db", [("AA", 1, 11, 2.75)])
    with pytest.raises(RuntimeError, match="Flink has 2 groups, streamjob 1"):
        flink.check_flights(out, short)


def test_no_java_skips_with_a_reason(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    py, reason = flink.flink_python()
    assert py is None and "no java" in reason


def _q7_parquet(path, rows):
    """streamjob's q7 sink as its Parquet table: auction, bidder, price, dateTime, extra."""
    from datetime import datetime, timezone

    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True)
    table = pa.table({
        "auction": pa.array([r[1] for r in rows], pa.int64()),
        "bidder": pa.array([r[2] for r in rows], pa.int64()),
        "price": pa.array([r[0] for r in rows], pa.int64()),
        "dateTime": pa.array([datetime.fromtimestamp(r[3] / 1000, timezone.utc) for r in rows],
                             pa.timestamp("us", tz="UTC")),
        "extra": pa.array([r[4] for r in rows], pa.string())})
    pq.write_table(table, path / "part-0.parquet")


def test_q7_is_judged_against_the_batch_reference_not_against_flink(tmp_path):
    """At 1,000,000 events Flink's q7 lacked the highest bid of some windows and the old
    check, which took Flink's rows as the truth, failed streamjob's correct rows."""
    from streamjob_tools.dev.nexmark import NexmarkConfig, generate
    from streamjob_tools.dev.nexmark.reference import QUERIES

    events = 250_000  # 25 s of event time (10,000 events/s): three q7 windows
    frames = generate(NexmarkConfig(seed=0), 0, events)
    want = sorted(QUERIES["q7"].expected(frames.person, frames.auction, frames.bid),
                  key=lambda r: r[3])  # by window
    assert len(want) >= 3
    last_open = want[:-1] if want[-1][3] // 10_000 * 10_000 + 10_000 > \
        int(frames.bid.dateTime.max()) - 4_000 else want  # the final watermark's window
    # Flink's rows swap bidder and price; the first window's highest bid is missing there
    flink_rows = [{"auction": r[1], "bidder": r[0], "price": r[2]} for r in want[1:]]
    _q7_parquet(tmp_path / "ours", last_open)
    got = flink.check_q7(flink_rows, tmp_path / "ours", events)
    assert got == {"reference_windows": len(want), "flink_windows_without_highest": 1}

    wrong = [(r[0] - 1,) + r[1:] for r in last_open[:1]] + last_open[1:]  # not the highest
    _q7_parquet(tmp_path / "wrong", wrong)
    with pytest.raises(RuntimeError, match="not their window's highest bid"):
        flink.check_q7(flink_rows, tmp_path / "wrong", events)

    _q7_parquet(tmp_path / "short", last_open[1:])  # a closed window without its row
    with pytest.raises(RuntimeError, match="closed by the watermark have no streamjob row"):
        flink.check_q7(flink_rows, tmp_path / "short", events)
