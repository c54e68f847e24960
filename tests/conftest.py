"""Shared fixtures: real components only (TESTING.md). Session-scoped, so one broker and
one replay of the flights serve every test that needs them."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def broker():
    """A Tansu broker on a free port for the whole test session."""
    from streamjob.dev.broker import LocalBroker

    b = LocalBroker.start()
    yield b
    b.stop()
