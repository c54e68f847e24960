"""Shared fixtures: real components only (TESTING.md). Session-scoped, so one broker and
one replay of the flights serve every test that needs them."""

from __future__ import annotations

import os

import pytest

#: The Spark JVMs of the tests (in-process sessions and `streamjob` processes alike, which
#: inherit the environment) compile with the client JIT only (-XX:TieredStopAtLevel=1):
#: the tests' JVMs live seconds to minutes and move little data, where C2's compilations
#: cost more CPU than they win back (a 4-file `streamjob run --until-idle` job: 0.79x the
#: wall time, 3 runs each, side by side). Spark reads SPARK_SUBMIT_OPTS into the driver
#: JVM's command line; a value set outside wins. Users' jobs keep the JVM's default.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")

#: Every test says what it costs, with one of these markers (setup.cfg describes them), on
#: itself, its class or its module; the closest one counts. `make test` runs tests/unit,
#: then tests/integration, each in parallel (pytest-xdist, costliest modules first).
COSTS = ("unit", "component", "spark", "system")


def pytest_collection_modifyitems(config, items):
    unmarked = [item.nodeid for item in items
                if not any(m.name in COSTS for m in item.iter_markers())]
    if unmarked:
        raise pytest.UsageError(
            f"{len(unmarked)} test(s) without a cost marker ({', '.join(COSTS)}), e.g. "
            f"{unmarked[0]}: mark the test or its module (tests/conftest.py)")
    items[:] = costliest_modules_first(items)


def costliest_modules_first(items: list) -> list:
    """``items`` with whole modules ordered by the costliest test they hold (system,
    spark, component, unit; slow before the rest), each module's tests in their own
    order. pytest-xdist (``--dist loadfile``) hands modules to its workers in this order,
    so the long process scenarios start first and the run does not end on one of them
    while the other worker idles. A module that declares ``EXPECTED_S`` (its seconds on
    a fast host) goes before every module that declares less or nothing: in the slow tier
    the benchmark harness, the chaos runs, the 3-minute outage and the fuzz start first."""
    rank: dict[str, tuple] = {}
    for item in items:
        expected = getattr(getattr(item, "module", None), "EXPECTED_S", 0)
        key = (-expected, -COSTS.index(cost(item)), item.get_closest_marker("slow") is None)
        module = item.nodeid.split("::")[0]
        rank[module] = min(rank.get(module, key), key)
    order = {m: i for i, m in enumerate(sorted(rank, key=lambda m: rank[m]))}
    return sorted(items, key=lambda item: order[item.nodeid.split("::")[0]])


def cost(item) -> str:
    """The test's cost: its closest cost marker."""
    return next(m.name for m in item.iter_markers() if m.name in COSTS)


@pytest.fixture(scope="session")
def broker():
    """A Tansu broker on a free port for the whole test session."""
    from streamjob_tools.dev.broker import LocalBroker

    b = LocalBroker.start()
    yield b
    b.stop()
