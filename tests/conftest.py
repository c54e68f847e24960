"""Shared fixtures: real components only (TESTING.md). Session-scoped, so one broker and
one replay of the flights serve every test that needs them."""

from __future__ import annotations

import os
import time

import pytest

#: Epoch seconds after which no further `slow` test starts (set by .ci/run, whose whole
#: run must end within 90 minutes): on a slow host the rest of the slow tier is reported
#: as skipped instead of running the CI out of time. Unset: every selected test runs.
DEADLINE_ENV = "STREAMJOB_TEST_DEADLINE"


#: Every test says what it costs, with one of these markers (setup.cfg describes them), on
#: itself, its class or its module; the closest one counts. `make test` runs the unit and
#: component tests of tests/unit in parallel (pytest-xdist), then the rest.
COSTS = ("unit", "component", "spark", "system")


def pytest_collection_modifyitems(config, items):
    unmarked = [item.nodeid for item in items
                if not any(m.name in COSTS for m in item.iter_markers())]
    if unmarked:
        raise pytest.UsageError(
            f"{len(unmarked)} test(s) without a cost marker ({', '.join(COSTS)}), e.g. "
            f"{unmarked[0]}: mark the test or its module (tests/conftest.py)")


def cost(item) -> str:
    """The test's cost: its closest cost marker."""
    return next(m.name for m in item.iter_markers() if m.name in COSTS)


def pytest_runtest_setup(item):
    deadline = os.environ.get(DEADLINE_ENV)
    if deadline and item.get_closest_marker("slow") and time.time() > float(deadline):
        pytest.skip(f"CI time budget spent ({DEADLINE_ENV}); `make test-slow` runs it")


@pytest.fixture(scope="session")
def broker():
    """A Tansu broker on a free port for the whole test session."""
    from streamjob.dev.broker import LocalBroker

    b = LocalBroker.start()
    yield b
    b.stop()
