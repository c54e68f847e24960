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
