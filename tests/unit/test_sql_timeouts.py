"""Issue 13, point 12: SQL sinks and static SQL tables give up on a database that does
not answer. On the main of 2026-11-23 a server that accepts TCP and never answers blocked
START and DROP for over two minutes (no connect timeout), and a statement could run for
ever. Real sockets and the real PostgreSQL of TESTING.md; no Spark."""

from __future__ import annotations

import os
import socket
import threading

import pytest
import sqlalchemy as sa

from streamjob.connectors.sql import engine as sql_engine
from streamjob.connectors.spec import SqlTableSpec
from streamjob.connectors.sql.sink import SqlSink
from streamjob.exceptions import ConnectorError

pytestmark = pytest.mark.component

PG_URL = os.environ.get("STREAMJOB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@pytest.fixture
def silent_server():
    """A TCP server that accepts connections (the kernel's backlog) and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield sock.getsockname()[1]
    sock.close()


def outcome_within(seconds: float, call):
    """Run ``call`` in a thread; its exception (or None), failing if it is still blocked
    after ``seconds`` (a deadline, not a timing assertion)."""
    box = {}

    def target():
        try:
            call()
            box["exc"] = None
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            box["exc"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert "exc" in box, f"still blocked after {seconds} s"
    return box["exc"]


def test_a_silent_database_is_an_error_naming_its_address(silent_server, monkeypatch):
    monkeypatch.setattr(sql_engine, "CONNECT_TIMEOUT_S", 2)  # the default is 10 s
    url = f"postgresql+psycopg://writer:s3cret@127.0.0.1:{silent_server}/sink"
    sink = SqlSink(SqlTableSpec(url, "t", ()), [{"name": "a", "type": "int"}], "uid", True, False)
    exc = outcome_within(60, sink.check)
    assert isinstance(exc, ConnectorError), exc
    assert f"127.0.0.1:{silent_server}" in str(exc) and "s3cret" not in str(exc)
    # DROP STREAMJOB's marker purge gives up the same way (a warning, not a hang)
    assert outcome_within(60, sink.purge_markers) is None


def test_statements_have_a_timeout_on_postgresql(monkeypatch):
    monkeypatch.setattr(sql_engine, "STATEMENT_TIMEOUT_MS", 300)
    engine = sql_engine.engine_for(PG_URL + "?application_name=sj_timeout_test")
    try:
        with pytest.raises(sa.exc.OperationalError) as e:
            with engine.connect() as conn:
                conn.execute(sa.text("select pg_sleep(30)"))
        assert "statement timeout" in str(e.value)
    finally:
        engine.dispose()
        sql_engine._ENGINES.pop(PG_URL + "?application_name=sj_timeout_test", None)


def test_a_urls_own_timeouts_win():
    args = sql_engine._timeouts("postgresql+psycopg://u@h/db?connect_timeout=3&options=-c%20x%3D1")
    assert args == {}
    assert sql_engine._timeouts("postgresql://u@h/db")["connect_timeout"] == sql_engine.CONNECT_TIMEOUT_S
