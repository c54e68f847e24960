"""Real faults for the outage tests (TESTING.md): a Kafka broker that stops answering
(SIGSTOP/SIGCONT of its process: clients see a broker that hangs, memory storage kept),
and a PostgreSQL database that refuses connections (``ALLOW_CONNECTIONS false`` and its
backends terminated). Each is a context manager that ends the fault on exit."""

from __future__ import annotations

import os
import signal
import uuid
from contextlib import contextmanager

import sqlalchemy as sa

PG_ADMIN_URL = os.environ.get("STREAMJOB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@contextmanager
def broker_paused(broker):
    """The broker process (a LocalBroker) stopped with SIGSTOP until the block ends."""
    os.kill(broker.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(broker.process.pid, signal.SIGCONT)


def _admin():
    return sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")


@contextmanager
def scratch_database():
    """A new PostgreSQL database for one test; yields its SQLAlchemy URL; dropped after."""
    name = f"sj_fault_{uuid.uuid4().hex[:8]}"
    admin = _admin()
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
            conn.execute(sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                 "WHERE datname = :n"), {"n": name})
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


@contextmanager
def database_down(url: str):
    """The database of ``url`` refuses new connections and loses its open ones until the
    block ends (PostgreSQL: what a restart or a network cut looks like to clients)."""
    name = sa.engine.make_url(url).database
    admin = _admin()
    with admin.connect() as conn:
        conn.execute(sa.text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'))
        conn.execute(sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE datname = :n AND pid <> pg_backend_pid()"), {"n": name})
    try:
        yield
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
        admin.dispose()
