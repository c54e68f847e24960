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
