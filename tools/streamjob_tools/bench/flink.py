"""Scenario flink: Apache Flink beside streamjob, the same work on the same machine.

Apache Flink (PyPI ``apache-flink``, :data:`FLINK_VERSION`) runs as a local mini-cluster
(PyFlink's Table API in streaming mode, parallelism 2 as Spark's ``local[2]``) in its own
virtual environment, ``~/.cache/streamjob/venv-flink-<version>`` (:data:`VENV`), created here on first use with this
interpreter's base Python (never the project's venv: Flink pins its own pyarrow, pandas
and numpy). Without PyPI or Java the Flink figures are skipped, with the reason shown.

Both sides are whole processes timed from process start to exit, as a user runs them:
``.venv-flink/bin/python flink_job.py SPEC`` for Flink, ``streamjob run --until-idle
FILE`` for streamjob (a fresh home each run), one after the other on an otherwise idle
machine, alternating which goes first; one unmeasured run of each before the first
workload when repeating.

- **Workload A**: the flights replayed three times (1,010,328 rows; ``--quick`` one
  replay) as CSV files (no header, two files per replay), a carrier x month count and
  average of ``dep_delay``, streaming mode. Flink: filesystem source -> aggregation ->
  ``print`` sink (its upsert changelog on stdout, folded into the final rows).
  streamjob: a file stream (``"source"="files"``, csv) -> the same aggregation upserted
  into a SQLite table, exactly-once. The final tables must agree (keys, counts, averages
  to 1e-9 relative), else the run fails.
- **Workload B**: Nexmark queries over the bids of ``python -m streamjob_tools.dev nexmark``
  (JSON files, 1,000,000 events; ``--quick`` 200,000 and q1 only): q0, q1, q2
  (stateless) and q7 (highest bid per 10-second window, stateful). Flink runs nexmark-flink's SQL into JSON files (Flink's filesystem sink),
  streamjob the queries of ``examples/nexmark/queries`` over the file streams of
  ``examples/nexmark/streams_files.sql`` into Parquet. Checked: q0-q2 the same row count;
  q7 each streamjob row is among Flink's (Spark emits a window once the watermark passes
  its end, so the last windows of a finite input stay open; Flink's bounded source ends
  with the maximal watermark and emits them, and keeps ties).

Reported per workload (and per query): Flink s, streamjob s (min/median/max over the
repeats) and streamjob/Flink (the ratio of each repeat); target: ratio <= 1.0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .. import REPO
from . import flink_job
from .harness import QUICK, TINY, Bench, ScenarioResult, Target
from streamjob.spark.home import cache_dir
from .jobs import job_props

FLINK_VERSION = "2.3.0"
VENV = cache_dir() / f"venv-flink-{FLINK_VERSION}"
"""Flink's venv: in streamjob's per-user cache (``~/.cache/streamjob``, as the CDS
archive), so every checkout and CI clone on a machine shares one (about 850 MB)."""
PARALLELISM = 2
FLIGHTS_PER_REPLAY = 336_776
NEXMARK_DIR = REPO / "examples" / "nexmark"


def sizes_of(bench: Bench) -> dict:
    """Rows of workload A, events and queries of workload B for the bench's mode."""
    if bench.sizes == TINY:
        return {"flight_rows": 3_000, "events": 5_000, "queries": ("q7",)}  # the slow tier: 4 processes
    if bench.sizes == QUICK:
        return {"flight_rows": FLIGHTS_PER_REPLAY, "events": 200_000, "queries": ("q1",)}
    return {"flight_rows": 3 * FLIGHTS_PER_REPLAY, "events": 1_000_000,
            "queries": ("q0", "q1", "q2", "q7")}


# -- the Flink venv -------------------------------------------------------------------


def flink_python(log=print) -> tuple[Path | None, str | None]:
    """The Python of the Flink venv, created (``pip install -q apache-flink``) when
    missing: (path, None), or (None, the reason it cannot be had: no Java, PyPI
    unreachable, pip's last error line)."""
    if shutil.which("java") is None:
        return None, "no java on PATH (Flink needs Java 11 or 17)"
    py = VENV / "bin" / "python"
    if py.exists() and list(VENV.glob("lib/python*/site-packages/pyflink")):
        return py, None
    log(f"  creating {VENV} (apache-flink {FLINK_VERSION} from PyPI, once; about a minute)")
    base = getattr(sys, "_base_executable", None) or sys.executable
    try:
        subprocess.run([base, "-m", "venv", "--clear", str(VENV)], check=True,
                       capture_output=True, timeout=300)
        pip = subprocess.run([str(py), "-m", "pip", "install", "-q", "--retries", "2",
                              "--timeout", "60", f"apache-flink=={FLINK_VERSION}"],
                             capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(VENV, ignore_errors=True)
        return None, f"cannot create {VENV}: {exc}"
    if pip.returncode != 0:
        shutil.rmtree(VENV, ignore_errors=True)
        lines = [ln for ln in (pip.stderr or pip.stdout).splitlines()
                 if ln.strip() and not ln.startswith("WARNING")]
        return None, (f"apache-flink {FLINK_VERSION} not installable from PyPI: "
                      + (lines[-1].strip() if lines else f"pip exit {pip.returncode}"))
    return py, None


# -- data -----------------------------------------------------------------------------


def write_flights_csv(directory: Path, rows: int, df=None) -> int:
    """The flights, replayed as often as ``rows`` needs, as headerless CSV files in
    ``directory`` (two per replay; integer columns without ``.0``, NULL as an empty
    field); returns the row count. ``df``: the flights (default: all 336,776)."""
    from ..dev import flights as nyc
    from .jobs import COLUMN_NAMES

    df = (nyc.flights() if df is None else df)[COLUMN_NAMES].copy()
    for col in ("dep_time", "arr_time"):  # INT columns with NULLs: no "517.0"
        df[col] = df[col].astype("Int64")
    directory.mkdir(parents=True, exist_ok=True)
    done = part = 0
    while done < rows:
        chunk = df.iloc[: min(len(df), rows - done)]
        half = (len(chunk) + 1) // 2
        for piece in (chunk.iloc[:half], chunk.iloc[half:]):
            if len(piece):
                piece.to_csv(directory / f"flights-{part:03d}.csv", header=False, index=False)
                part += 1
        done += len(chunk)
    return done


def write_nexmark(directory: Path, events: int) -> dict:
    """Nexmark's events (seed 0) as JSON-lines files under ``directory``; the counts."""
    from ..dev.nexmark import NexmarkConfig, to_files

    stats = to_files(NexmarkConfig(seed=0), events, directory)
    return dict(stats.records)


# -- running both sides -------------------------------------------------------------------


def run_flink(py: Path, spec: dict, workdir: Path) -> tuple[float, str, dict]:
    """Run ``spec`` in a fresh Flink process; (seconds from start to exit, its stdout,
    the runner's own setup/job split). RuntimeError with the log's tail on failure."""
    workdir.mkdir(parents=True, exist_ok=True)
    spec_path = workdir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    script = Path(flink_job.__file__)
    t0 = time.monotonic()
    # -P: the script's directory (tools/streamjob_tools/bench, with a profile.py) stays off sys.path
    proc = subprocess.run([str(py), "-P", str(script), str(spec_path)], cwd=workdir,
                          capture_output=True, text=True, timeout=1800)
    dt = time.monotonic() - t0
    (workdir / "flink.log").write_text(proc.stderr)
    if proc.returncode != 0:
        tail = [ln for ln in proc.stderr.splitlines() if "Exception" in ln or "Error" in ln]
        raise RuntimeError(f"Flink job failed (exit {proc.returncode}): "
                           f"{(tail or ['see ' + str(workdir / 'flink.log')])[-1][:300]}")
    split = {}
    for line in proc.stderr.splitlines():
        if line.startswith("{\"flink_setup_s\""):
            split = json.loads(line)
    return dt, proc.stdout, split


def run_streamjob(bench: Bench, name: str, script: str, variables: dict | None = None):
    """Run StreamSQL ``script`` with ``streamjob run --until-idle`` in a fresh home;
    (seconds from start to exit, the home's path, the phases of :func:`phases`)."""
    home = bench.home(name).root
    sql = home / "job.sql"
    sql.write_text(script)
    args = [sys.executable, "-m", "streamjob.cli", "--home", str(home), "run", "--until-idle"]
    for k, v in (variables or {}).items():
        args += ["--var", f"{k}={v}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    began = datetime.now(timezone.utc)
    t0 = time.monotonic()
    proc = subprocess.run([*args, str(sql)], capture_output=True, text=True, timeout=1800,
                          env=env)
    dt = time.monotonic() - t0
    (home / "run.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"streamjob run failed (exit {proc.returncode}): "
                           f"{(proc.stdout + proc.stderr).strip().splitlines()[-1:]}")
    return dt, home, phases(home, began, began + timedelta(seconds=dt))


def phases(home: Path, began: datetime, ended: datetime) -> dict:
    """Where a ``streamjob run`` process's time went, from its home's catalog (s):
    ``sj_start_s`` process start -> the job's run row (imports, statements, Spark's JVM
    and session, the plan), of it ``sj_jvm_launch_s`` process start -> the Spark
    driver JVM's launch (the header line of ``<home>/logs/spark.log``), ``sj_first_batch_s`` run row -> the first batch's start,
    ``sj_batches_s`` the committed batches' summed durations (``sj_batches``, ``sj_rows``),
    ``sj_exit_s`` last commit -> process exit (idle check, Spark's stop, JVM exit)."""
    from streamjob.catalog import Catalog

    cat = Catalog(f"sqlite:///{home / 'catalog.db'}")
    try:
        runs, ckpts = [], []
        for job in cat.list_jobs():
            runs += cat.list_runs(job.uid)
            ckpts += cat.list_checkpoints(job.uid)
    finally:
        cat.close()
    out = {"sj_batches": len(ckpts), "sj_rows": sum(c.input_rows or 0 for c in ckpts),
           "sj_batches_s": round(sum(c.duration_ms or 0 for c in ckpts) / 1000, 2)}
    try:
        head = (home / "logs" / "spark.log").read_text().split("\n", 1)[0]
        launched = datetime.fromisoformat(head.split()[1])
        out["sj_jvm_launch_s"] = round((launched - began).total_seconds(), 2)
    except (OSError, IndexError, ValueError):
        pass
    if runs:
        run_at = min(_utc(r.started_at) for r in runs)
        out["sj_start_s"] = round((run_at - began).total_seconds(), 2)
        if ckpts:
            out["sj_first_batch_s"] = round(
                (min(_utc(c.started_at) for c in ckpts) - run_at).total_seconds(), 2)
            last = max(_utc(c.ended_at or c.started_at) for c in ckpts)
            out["sj_exit_s"] = round((ended - last).total_seconds(), 2)
    return out


def _utc(moment: datetime) -> datetime:
    """``moment`` as an aware UTC datetime (a naive one read back from SQLite is UTC)."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def flights_script(csv_dir: Path) -> str:
    """Workload A in StreamSQL: the CSV file stream, the upserted SQLite table, the job."""
    from .harness import FLIGHT_COLUMNS

    return (f'CREATE STREAM flights ({FLIGHT_COLUMNS}) TBLPROPERTIES("source"="files", '
            f'"path"="{csv_dir}", "format"="csv");\n'
            "CREATE TABLE carrier_month (carrier STRING, month INT, flights BIGINT, "
            'avg_dep_delay DOUBLE) TBLPROPERTIES("connector"="sql", '
            '"url"="sqlite:///${STREAMJOB_HOME}/flights.db", "primary.key"="carrier,month");\n'
            'CREATE STREAMJOB agg AS ("insert into carrier_month select carrier, month, '
            'count(*), avg(dep_delay) from flights group by carrier, month") '
            + job_props(0, 0, **{"morphling.result.auto.flush": "false"})
            + ";\nSTART STREAMJOB agg;\n")


def nexmark_script(query: str) -> str:
    """Workload B in StreamSQL: the file streams, query ``query`` and its START."""
    return ((NEXMARK_DIR / "streams_files.sql").read_text() + "\n"
            + (NEXMARK_DIR / "queries" / f"{query}.sql").read_text()
            + f"\nSTART STREAMJOB nexmark_{query}_job;\n")


# -- checks ---------------------------------------------------------------------------


def check_flights(flink_stdout: str, db: Path) -> int:
    """Compare Flink's final carrier x month rows (its print sink's changelog) with
    streamjob's SQLite table: the same keys, counts equal, averages equal to 1e-9
    relative; returns the group count. RuntimeError naming the first difference."""
    import sqlite3

    flink = {(c, int(m)): (int(n), None if a == "null" else float(a))
             for (c, m), (c, m, n, a) in flink_job.final_rows(flink_stdout.splitlines()).items()}
    con = sqlite3.connect(db)
    try:
        ours = {(c, int(m)): (int(n), a) for c, m, n, a in con.execute(
            "SELECT carrier, month, flights, avg_dep_delay FROM carrier_month")}
    finally:
        con.close()
    if set(flink) != set(ours):
        diff = sorted(set(flink) ^ set(ours))[:3]
        raise RuntimeError(f"Flink has {len(flink)} groups, streamjob {len(ours)}; e.g. {diff}")
    for key, (n, avg) in sorted(flink.items()):
        m, a = ours[key]
        same_avg = (avg is None and a is None) or (
            avg is not None and a is not None and abs(avg - a) <= 1e-9 * max(1.0, abs(avg)))
        if n != m or not same_avg:
            raise RuntimeError(f"group {key}: Flink count {n} avg {avg}, streamjob {m} avg {a}")
    return len(flink)


def check_nexmark(query: str, flink_out: Path, home: Path, bids: int,
                  events: int = 0) -> dict:
    """Compare a Nexmark query's rows: Flink's JSON files against streamjob's Parquet
    (``<home>/nexmark/<query>``); the row counts. RuntimeError on a difference.

    q7 is judged against the batch reference (:mod:`streamjob_tools.dev.nexmark.reference`) of
    the same ``events`` (seed 0), not against Flink: every streamjob row must be its
    window's highest bid, and the only windows without a row the ones the final
    watermark (last event time - 4 s) has not passed. Flink's rows are counted against
    the same reference (``flink_windows_without_highest``): at 1,000,000 events Flink's
    output lacked the highest bid of some windows (2026-11-27), which a check against
    Flink had reported as streamjob's error."""
    import pyarrow.parquet as pq

    flink_rows = []
    for f in sorted(flink_out.rglob("*")):
        if f.is_file() and not f.name.startswith("."):
            flink_rows += [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]
    out = home / "nexmark" / query
    ours = pq.read_table(out).to_pylist() if out.exists() and any(out.glob("*.parquet")) else []
    counts = {"flink_rows": len(flink_rows), "streamjob_rows": len(ours)}
    if query in ("q0", "q1", "q2"):
        expected = bids if query != "q2" else len(flink_rows)
        if not len(flink_rows) == len(ours) == expected:
            raise RuntimeError(f"{query}: Flink wrote {len(flink_rows)} rows, streamjob "
                               f"{len(ours)} (bids: {bids})")
    elif query == "q7":
        counts.update(check_q7(flink_rows, out, events))
    return counts


Q7_WINDOW_MS, Q7_DELAY_MS = 10_000, 4_000  # q7's tumbling window; the streams' watermark


def check_q7(flink_rows: list[dict], ours: Path, events: int) -> dict:
    """q7 of both sides against the batch reference over the first ``events`` events of
    seed 0 (see :func:`check_nexmark`); RuntimeError naming a streamjob row that is not
    its window's highest bid, or a window closed by the watermark without a row."""
    from ..dev.nexmark import NexmarkConfig, generate
    from ..dev.nexmark.reference import QUERIES

    frames = generate(NexmarkConfig(seed=0), 0, events)
    ref = QUERIES["q7"]
    want = ref.expected(frames.person, frames.auction, frames.bid)
    got = ref.actual(ours)
    extra = got - want
    if extra:
        raise RuntimeError(f"q7: {sum(extra.values())} streamjob rows are not their window's "
                           f"highest bid, e.g. {next(iter(extra))}")
    closed_until = int(frames.bid.dateTime.max()) - Q7_DELAY_MS  # the final watermark
    at = ref.columns.index("dateTime")
    unclosed = [r for r in want - got if r[at] // Q7_WINDOW_MS * Q7_WINDOW_MS + Q7_WINDOW_MS
                <= closed_until]
    if unclosed:
        raise RuntimeError(f"q7: {len(unclosed)} windows closed by the watermark have no "
                           f"streamjob row, e.g. the highest bid {unclosed[0]}")
    # Flink's q7 inserts price into the bidder column (nexmark-flink q7.sql)
    theirs = {(r["auction"], r["bidder"]) for r in flink_rows}
    lacking = [r for r in want if (r[1], r[0]) not in theirs]
    return {"reference_windows": sum(want.values()),
            "flink_windows_without_highest": len(lacking)}


# -- the scenario ---------------------------------------------------------------------


def run(bench: Bench) -> ScenarioResult:
    """Scenario flink (see the module docstring)."""
    res = ScenarioResult("flink", "flink side by side")
    sz = sizes_of(bench)
    py, reason = flink_python(bench.log)
    if py is None:
        bench.log(f"  Flink figures skipped: {reason}")
        res.details["skipped"] = reason
        res.targets = [Target(f"streamjob at or ahead of Flink: skipped ({reason[:90]})",
                              "A flights: streamjob/Flink", "<=", 1.0)]
        return res
    root = bench.root / "flink"
    csv_dir = root / "flights_csv"
    rows = write_flights_csv(csv_dir, sz["flight_rows"])
    records = write_nexmark(root / "nexmark", sz["events"])
    res.details.update(flink_version=FLINK_VERSION, parallelism=PARALLELISM,
                       flight_rows=rows, nexmark_records=records, runs=[],
                       timing="whole processes, start to exit: .venv-flink/bin/python "
                              "flink_job.py / streamjob run --until-idle (fresh home)")
    bench.log(f"  flights: {rows:,} rows as CSV; nexmark: {sz['events']:,} events "
              f"({records.get('bid', 0):,} bids) as JSON")
    work = [("A flights", lambda d: flink_job.flights_spec(str(csv_dir), PARALLELISM),
             lambda: (flights_script(csv_dir), {}))]
    for q in sz["queries"]:
        work.append((f"B nexmark {q}",
                     lambda d, q=q: flink_job.nexmark_spec(str(root / "nexmark" / "bid"), q,
                                                           PARALLELISM, str(d / "out")),
                     lambda q=q: (nexmark_script(q), {"NEXMARK_DIR": str(root / "nexmark")})))
    # one unmeasured run of each side before the first workload (page cache, jars)
    warm = 1 if bench.sizes.warmup and bench.repeat > 1 else 0
    n = 0
    for w, (name, fspec, sscript) in enumerate(work):
        warm = warm if w == 0 else 0
        res.targets.append(Target(f"{name}: streamjob at or ahead of Flink (ratio <= 1.0)",
                                  f"{name}: streamjob/Flink", "<=", 1.0))
        for i in range(warm + bench.repeat):
            n += 1
            fdir = root / f"flink-run{n}"
            order = ("flink", "streamjob") if i % 2 == 0 else ("streamjob", "flink")
            got = {}
            for side in order:
                if side == "flink":
                    got["flink"] = run_flink(py, fspec(fdir), fdir)
                else:
                    script, variables = sscript()
                    got["streamjob"] = run_streamjob(bench, f"flink-sj{n}", script, variables)
            f_s, f_out, f_split = got["flink"]
            s_s, home, s_phases = got["streamjob"]
            if name.startswith("A"):
                checked = {"groups": check_flights(f_out, home / "flights.db")}
            else:
                checked = check_nexmark(name.split()[-1], fdir / "out", home,
                                        records.get("bid", 0), sz["events"])
            run_info = {"workload": name, "warmup": i < warm, "flink_s": round(f_s, 2),
                        "streamjob_s": round(s_s, 2), **f_split, **s_phases, **checked}
            res.details["runs"].append(run_info)
            bench.log(f"  {name}{' (warm-up)' if i < warm else ''}: Flink {f_s:.1f} s, "
                      f"streamjob {s_s:.1f} s (ratio {s_s / f_s:.2f}); "
                      + ", ".join(f"{k} {v}" for k, v in checked.items()))
            if i < warm:
                continue
            res.figure(f"{name}: Flink", "s", "lower").add(f_s)
            res.figure(f"{name}: streamjob", "s", "lower").add(s_s)
            res.figure(f"{name}: streamjob/Flink", "ratio", "lower").add(s_s / f_s)
    return res
