"""The benchmark harness works end to end on a tiny scale: ``python -m streamjob.bench
--tiny`` runs scenario 1 (raw consumer, hand-written job, streamjob job over a few
thousand flights) and scenario 6 (control-plane statements on SQLite and PostgreSQL) and
writes the JSON results. Nothing here judges a timing: only the structure and that every
rate is positive."""

from __future__ import annotations

import pytest

import json
import subprocess
import sys

# The benchmark harness end to end (its own Spark process): in the slow tier, which CI
# runs after `make test` (CI budget: `make test` under 15 minutes on the slow host kind).
pytestmark = [pytest.mark.system, pytest.mark.slow]


def test_bench_tiny_writes_results(tmp_path):
    out = tmp_path / "bench.json"
    res = subprocess.run(
        [sys.executable, "-m", "streamjob.bench", "--tiny", "--only", "s1,s6", "--repeat", "1",
         "--no-profile", "--compare-parser", "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "streamjob benchmark" in res.stdout  # the table was printed
    data = json.loads(out.read_text())
    assert data["machine"]["cores"] >= 1 and data["machine"]["versions"]["pyspark"]
    scenarios = {s["key"]: s for s in data["scenarios"]}
    assert set(scenarios) == {"s1", "s6"}
    for s in scenarios.values():
        assert s["error"] is None
        for fig in s["figures"]:
            assert set(fig) >= {"name", "unit", "values", "min", "median", "max", "n"}
            assert fig["n"] == len(fig["values"]) >= 1
            assert fig["min"] <= fig["median"] <= fig["max"]
            assert fig["min"] > 0, fig
    s1 = {f["name"]: f for f in scenarios["s1"]["figures"]}
    for name in ("raw kafka-python consumer", "raw confluent-kafka consumer",
                 "hand-written PySpark job", "hand-written, recordParser=kafka-python",
                 "streamjob job", "parse only: kafka-python", "parse only: bulk parser"):
        assert s1[name]["unit"] == "records/s" and s1[name]["median"] > 0
    assert {"streamjob / raw consumer", "streamjob / raw confluent-kafka",
            "streamjob / hand-written", "parse only: bulk / kafka-python",
            "bulk / kafka-python parser (hand-written)"} <= set(s1)
    assert {t["figure"] for t in scenarios["s1"]["targets"]} == {
        "streamjob / raw consumer", "streamjob / raw confluent-kafka",
        "streamjob / hand-written"}
    breakdown = scenarios["s1"]["details"]["breakdown"]
    assert breakdown["rows"] > 0 and "addBatch" in breakdown["mean_ms"]
    s6 = {f["name"] for f in scenarios["s6"]["figures"]}
    assert {"SQLite: CREATE STREAMJOB", "SQLite: DROP STREAMJOB"} <= s6
