"""Shared fixtures of the unit tests: an empty catalog database on SQLite (a file) and
on PostgreSQL (a fresh schema per test, at STREAMJOB_TEST_PG_URL or 127.0.0.1:5432/test;
the tests fail, not skip, when PostgreSQL is down)."""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

PG_URL = os.environ.get(
    "STREAMJOB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


@pytest.fixture(scope="session")
def pg_admin():
    """An engine on the test PostgreSQL database (fails the tests if unreachable)."""
    engine = create_engine(PG_URL)
    with engine.connect() as conn:  # raises if PostgreSQL is down: the tests fail
        conn.execute(text("SELECT 1"))
    yield engine
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog_url(request, tmp_path):
    """A URL to an empty catalog: a SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/home/catalog.db"
        return
    admin = request.getfixturevalue("pg_admin")
    schema = f"sj_test_{uuid.uuid4().hex[:12]}"
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture
def catalog(catalog_url):
    """A Catalog on :func:`catalog_url` (SQLite and PostgreSQL), closed afterwards."""
    from streamjob.catalog import Catalog

    cat = Catalog(catalog_url)
    yield cat
    cat.close()


def _active_spark_context():
    """The process's active SparkContext, or None (without importing pyspark)."""
    import sys

    context = sys.modules.get("pyspark.core.context") or sys.modules.get("pyspark.context")
    return getattr(getattr(context, "SparkContext", None), "_active_spark_context", None)


@pytest.fixture(autouse=True)
def no_spark_starter_left_behind():
    """A CLI invocation run in this process (click's CliRunner) lets a Hadoop URI start
    Spark on demand (``cli/context.py``): withdrawn after each test, so that no later test
    of the worker (``make test`` runs both folders in one session) finds it."""
    yield
    from streamjob.checkpoint import filesystems

    filesystems.start_on_demand(None)


@pytest.fixture(autouse=True)
def no_spark_in_unit_tests(request):
    """tests/unit holds unit and component tests, which run without Spark (setup.cfg's
    markers): a test that started a Spark JVM in this process fails, naming it, so that
    the tier stays fast (a JVM costs 10-16 s) and the markers stay true. A Spark that an
    integration test of the same worker started before (``make test-slow`` runs both
    folders in one session) is not this test's."""
    before = _active_spark_context()
    yield
    after = _active_spark_context()
    if after is not None and after is not before:
        pytest.fail(f"{request.node.nodeid} started Spark: tests/unit run without it "
                    "(move the test to tests/integration and mark it `spark`)")
