"""Shared helpers of the planner tests: an executor over a fresh SQLite catalog holding a
script's objects, and planning one job query placed after a given script head."""

from __future__ import annotations

import pytest

from streamjob.catalog import Catalog
from streamjob.exceptions import ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.planner.plan import plan_job


def executor(tmp_path, setup: str):
    """Yield an Executor whose catalog holds the objects ``setup`` creates."""
    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home)
    for s in parse_script(setup):
        ex.execute(s)
    yield ex
    catalog.close()


def plan(ex, head: str, query: str):
    """Plan job ``j`` whose quoted query ``query`` follows ``head`` in the script."""
    [stmt] = parse_script(head + query + '");')
    return plan_job(ex.catalog, ex.home, "default", "j", stmt.query, {}, None, stmt.query_position)


def error(ex, head: str, query: str) -> ValidationError:
    """The ValidationError planning ``query`` raises."""
    with pytest.raises(ValidationError) as info:
        plan(ex, head, query)
    return info.value


def where(err: ValidationError):
    """``(line, column, text)`` of an error."""
    return err.line, err.column, err.text
