"""Scenario 6: the control plane — median time of CREATE / START / STOP / DROP STREAMJOB
statements, executed as a client without a job manager does (``streamjob -e``: the
statement changes the catalog; a server would run the job), against a SQLite catalog
(a file in a fresh home) and a PostgreSQL catalog (a fresh schema at
``STREAMJOB_BENCH_PG_URL`` or ``postgresql+psycopg://postgres@127.0.0.1:5432/test``).
"""

from __future__ import annotations

import os
import time
import uuid

from .harness import Bench, ScenarioResult
from .jobs import job_props, stream_sql

PG_URL = os.environ.get("STREAMJOB_BENCH_PG_URL",
                        os.environ.get("STREAMJOB_TEST_PG_URL",
                                       "postgresql+psycopg://postgres@127.0.0.1:5432/test"))
VERBS = ("CREATE", "START", "STOP", "DROP")


def _statements(bench: Bench, catalog_url: str, home, count: int) -> dict[str, list[float]]:
    from streamjob.catalog import Catalog
    from streamjob.executor import Executor
    from streamjob.grammar import parse_script

    catalog = Catalog(catalog_url)
    try:
        ex = Executor(catalog, home)
        for stmt in parse_script(stream_sql("src", "bench_control", bench.bootstrap)
                                 + "CREATE TABLE out (carrier STRING, month INT) STORED AS PARQUET;"):
            ex.execute(stmt)
        times: dict[str, list[float]] = {v: [] for v in VERBS}
        for i in range(count):
            texts = {
                "CREATE": f'CREATE STREAMJOB j{i} AS ("insert into out select carrier, month '
                          f'from src") {job_props(1000, 0)};',
                "START": f"START STREAMJOB j{i};",
                "STOP": f"STOP STREAMJOB j{i};",
                "DROP": f"DROP STREAMJOB j{i};",
            }
            for verb in VERBS:
                (stmt,) = parse_script(texts[verb])
                t0 = time.perf_counter()
                ex.execute(stmt)
                times[verb].append((time.perf_counter() - t0) * 1000)
        return times
    finally:
        catalog.close()


def run(bench: Bench) -> ScenarioResult:
    """Scenario 6 (see the module docstring)."""
    import statistics

    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    count = bench.sizes.s6_statements
    res = ScenarioResult("s6", "6 control plane")
    res.details.update(statements_per_verb=count * bench.repeat)
    bench.new_topic("bench_control")
    home = bench.home("control")
    catalogs = {"SQLite": home.catalog_url}
    schema = f"sj_bench_{uuid.uuid4().hex[:10]}"
    admin = None
    try:
        admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        catalogs["PostgreSQL"] = make_url(PG_URL).update_query_dict(
            {"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
    except Exception as exc:  # noqa: BLE001 - reported, the SQLite half still runs
        res.details["postgresql_error"] = str(exc).splitlines()[0]
        bench.log(f"  s6: PostgreSQL unavailable: {res.details['postgresql_error']}")
    try:
        for name, url in catalogs.items():
            all_times: dict[str, list[float]] = {v: [] for v in VERBS}
            for _ in range(bench.repeat):
                times = _statements(bench, url, home, count)
                for verb in VERBS:
                    all_times[verb] += times[verb]
                    res.figure(f"{name}: {verb} STREAMJOB", "ms", "lower").add(
                        statistics.median(times[verb]))
                # a fresh catalog per repeat: the SQLite file is reused, so drop the objects
                _reset(url)
            bench.log(f"  s6 {name}: " + ", ".join(
                f"{v} {statistics.median(all_times[v]):.1f} ms" for v in VERBS))
    finally:
        if admin is not None:
            try:
                with admin.connect() as conn:
                    conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            finally:
                admin.dispose()
    return res


def _reset(url: str) -> None:
    """Drop the bench's stream and table from the catalog at ``url``."""
    from streamjob.catalog import Catalog

    catalog = Catalog(url)
    try:
        catalog.drop_table("default", "out", if_exists=True)
        catalog.drop_stream("default", "src", if_exists=True)
    finally:
        catalog.close()
