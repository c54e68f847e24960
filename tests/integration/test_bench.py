"""The benchmark harness works end to end on a tiny scale: ``python -m streamjob_tools.bench
--tiny`` runs scenario 1 (raw consumer, hand-written job, streamjob job over a few
thousand flights), scenario udf (the s1 job with one Python function beside it without)
and scenario 6 (control-plane statements on SQLite and PostgreSQL) and
writes the JSON results, and the Nexmark scenario over 3,000 events (two queries checked
against pandas). Nothing here judges a timing: only the structure and that every
rate is positive."""

from __future__ import annotations

import pytest

import json
import subprocess
import sys

# The benchmark harness end to end (its own Spark process): in the slow tier, which CI
# runs after `make test` (CI budget: `make test` under 15 minutes on the slow host kind).
pytestmark = [pytest.mark.system, pytest.mark.slow]
#: Seconds this module takes on a fast host (the tiny run, Nexmark and Flink): the
#: longest module of the slow tier, so it starts first (tests/conftest.py).
EXPECTED_S = 500


def test_bench_tiny_writes_results(tmp_path):
    out = tmp_path / "bench.json"
    res = subprocess.run(
        [sys.executable, "-m", "streamjob_tools.bench", "--tiny", "--only", "s1,s6,udf", "--repeat", "1",
         "--no-profile", "--compare-parser", "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "streamjob benchmark" in res.stdout  # the table was printed
    data = json.loads(out.read_text())
    assert data["machine"]["cores"] >= 1 and data["machine"]["versions"]["pyspark"]
    scenarios = {s["key"]: s for s in data["scenarios"]}
    assert set(scenarios) == {"s1", "s6", "udf"}
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
                 "streamjob job", "streamjob job into Delta", "parse only: kafka-python",
                 "streamjob job into Iceberg",
                 "parse only: bulk parser"):
        assert s1[name]["unit"] == "records/s" and s1[name]["median"] > 0
    assert {"streamjob / raw consumer", "streamjob / raw confluent-kafka",
            "streamjob / hand-written", "parse only: bulk / kafka-python",
            "bulk / kafka-python parser (hand-written)", "Delta / Parquet sink (streamjob)",
            "Iceberg / Parquet sink (streamjob)"} <= set(s1)
    assert {t["figure"] for t in scenarios["s1"]["targets"]} == {
        "streamjob / raw consumer", "streamjob / raw confluent-kafka",
        "streamjob / hand-written", "Delta / Parquet sink (streamjob)",
        "Iceberg / Parquet sink (streamjob)"}
    for name in ("Delta commit per micro-batch (no rows, median)",
                 "Delta sink: addBatch per micro-batch", "Parquet sink: addBatch per micro-batch",
                 "Iceberg commit per micro-batch (1 row, median)",
                 "Iceberg sink: addBatch per micro-batch"):
        assert s1[name]["unit"] == "ms" and s1[name]["median"] > 0  # issue 32: commit cost
    for key in ("breakdown", "delta_breakdown", "iceberg_breakdown"):
        breakdown = scenarios["s1"]["details"][key]
        assert breakdown["rows"] > 0 and "addBatch" in breakdown["mean_ms"]
    udf = {f["name"]: f for f in scenarios["udf"]["figures"]}  # issue 31: side by side
    assert {"job without the UDF", "job with one scalar Python UDF", "with UDF / without",
            "job with one Hive UDF", "with Hive UDF / without"} <= set(udf)
    assert [t["figure"] for t in scenarios["udf"]["targets"]] == [
        "with UDF / without", "with Hive UDF / without"]
    s6 = {f["name"] for f in scenarios["s6"]["figures"]}
    assert {"SQLite: CREATE STREAMJOB", "SQLite: DROP STREAMJOB"} <= s6


def test_bench_tiny_nexmark(tmp_path):
    """A tiny Nexmark scenario (3,000 events, q1 and q7): the generator's rates, each
    query's events/s and per core beside Flink's published figure, and its result equal
    to the same query computed by pandas (the windowed q7 through its sentinels)."""
    out = tmp_path / "bench.json"
    res = subprocess.run(
        [sys.executable, "-m", "streamjob_tools.bench", "--tiny", "--only", "nexmark",
         "--no-profile", "--out", str(out)],
        capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    data = json.loads(out.read_text())
    (s,) = data["scenarios"]
    assert s["key"] == "nexmark" and s["error"] is None
    figs = {f["name"]: f for f in s["figures"]}
    assert figs["generator: events to JSON"]["median"] > 0
    assert figs["generator: events into Kafka"]["median"] > 0
    for q, flink in (("q1", "157,940"), ("q7", "12,330")):
        assert figs[f"{q}: events/s"]["median"] > 0
        per_core = figs[f"{q}: events/s per core (Flink published {flink})"]
        assert per_core["median"] == figs[f"{q}: events/s"]["median"] / 2  # local[2]
        assert figs[f"{q}: result equals batch (pandas)"]["values"] == [1.0]
        detail = s["details"]["queries"][q]
        assert detail["equal"] and detail["rows"] == detail["expected_rows"] > 0
    assert s["details"]["events"] == 3_000 and s["details"]["job_cores"] == 2
    assert s["details"]["flink"]["commit"] == "6b3646c3baec701f1fa74baf938d235f742e5d3c"
    targets = {t["text"]: t for t in s["targets"]}
    assert targets["q1 result equals the same query in pandas"]["met"] is True
    assert targets["q7 result equals the same query in pandas"]["met"] is True
    assert targets["q7 per core >= Flink's published 12,330/s"]["met"] is not None
    assert "Nexmark over Kafka" in res.stdout  # the table was printed


def test_bench_tiny_flink_beside_streamjob(tmp_path):
    """Scenario flink on a tiny scale against a real Flink mini-cluster (the bench creates
    .venv-flink on first use). CI reaches PyPI and has Java (TESTING.md): a Flink that
    cannot be installed fails this test with the bench's reason, it is never skipped."""
    out = tmp_path / "bench.json"
    res = subprocess.run(
        [sys.executable, "-m", "streamjob_tools.bench", "--tiny", "--only", "flink", "--no-profile",
         "--out", str(out)],
        capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (scenario,) = json.loads(out.read_text())["scenarios"]
    assert not scenario["details"].get("skipped"), scenario["details"].get("skipped")
    assert scenario["error"] is None
    figures = {f["name"]: f for f in scenario["figures"]}
    for work in ("A flights", "B nexmark q7"):
        for side in ("Flink", "streamjob", "streamjob/Flink"):
            assert figures[f"{work}: {side}"]["n"] == 1 and figures[f"{work}: {side}"]["min"] > 0
    assert {t["figure"] for t in scenario["targets"]} == {
        "A flights: streamjob/Flink", "B nexmark q7: streamjob/Flink"}
    runs = {r["workload"]: r for r in scenario["details"]["runs"]}
    assert runs["A flights"]["groups"] > 0 and runs["A flights"]["sj_rows"] == 3000
    # q7: each streamjob row is among Flink's highest bids (checked by the bench); 5,000
    # events may close no window in Spark (its watermark never passes the last ones)
    assert runs["B nexmark q7"]["flink_rows"] > 0
    assert runs["B nexmark q7"]["streamjob_rows"] <= runs["B nexmark q7"]["flink_rows"]
    for run in runs.values():
        assert run["flink_job_s"] > 0 and run["sj_batches"] >= 1
        assert 0 < run["sj_jvm_launch_s"] < run["sj_start_s"] < run["streamjob_s"]


def test_flink_venv_without_pypi_says_why(tmp_path, monkeypatch):
    """No index to install from: no Flink figures, a reason naming the package, and no
    half-made venv left behind (the next run tries again)."""
    from streamjob_tools.bench import flink

    monkeypatch.setattr(flink, "VENV", tmp_path / ".venv-flink")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))  # an empty directory
    logged = []
    py, reason = flink.flink_python(logged.append)
    assert py is None and f"apache-flink {flink.FLINK_VERSION} not installable" in reason
    assert "apache-flink" in reason.split(": ", 1)[1], reason  # pip's own last line
    assert not (tmp_path / ".venv-flink").exists()
    assert len(logged) == 1 and "creating" in logged[0]
