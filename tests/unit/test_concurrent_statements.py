"""Two processes issuing statements at once against one catalog (SQLite file and
PostgreSQL) lose nothing and leave it consistent (issue: catalog concurrency)."""

from __future__ import annotations

import pytest

import multiprocessing

from streamjob.catalog import Catalog
from streamjob.exceptions import ObjectExistsError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.component

OBJECTS = 12


def _script(tag: str) -> str:
    parts = ['CREATE STREAM IF NOT EXISTS shared (a INT) TBLPROPERTIES ("topic"="t", '
             '"kafka.broker.list"="h:9092")']
    for i in range(OBJECTS):
        parts += [
            f'CREATE TABLE t_{tag}_{i} (a INT)',
            f'CREATE STREAMJOB j_{tag}_{i} AS ("insert into t_{tag}_{i} select a from shared") '
            f'JOBPROPERTIES ("morphling.checkpoint.retained"="{i + 1}")',
            f'START STREAMJOB j_{tag}_{i}',
        ]
    return ";\n".join(parts) + ";"


def _worker(url: str, home: str, tag: str, barrier, results) -> None:
    catalog = Catalog(url)
    executor = Executor(catalog, Home.open(home))
    statements = parse_script(_script(tag))
    # into a table the parent made: the other worker may not have created its own yet
    race = parse_script('CREATE STREAMJOB race AS ("insert into t_race select a from shared")')[0]
    barrier.wait()
    outcome = []
    for stmt in statements:
        executor.execute(stmt)
    try:
        executor.execute(race)
        outcome.append("created race")
    except ObjectExistsError:
        outcome.append("race exists")
    results.put((tag, outcome))


def test_two_processes_issue_statements_at_once(catalog_url, tmp_path):
    with Catalog(catalog_url) as catalog:  # schema first, so that the race is on statements
        catalog.create_table("default", "t_race", [{"name": "a", "type": "int"}], {})
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(catalog_url, str(tmp_path / "home"), tag,
                                               barrier, results)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    outcomes = dict(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert sorted(o[0] for o in outcomes.values()) == ["created race", "race exists"]

    catalog = Catalog(catalog_url)
    jobs = {j.name: j for j in catalog.list_jobs()}
    assert len(jobs) == 2 * OBJECTS + 1
    for tag in ("a", "b"):
        for i in range(OBJECTS):
            job = jobs[f"j_{tag}_{i}"]
            assert job.desired_state == "RUNNING"
            assert job.properties == {"morphling.checkpoint.retained": str(i + 1)}
            assert ("table", "default", f"t_{tag}_{i}", "sink") in job.dependencies
    assert [s.name for s in catalog.list_streams()] == ["shared"]
    assert len(catalog.list_tables()) == 2 * OBJECTS + 1  # and t_race
