"""The preview protocol (issue 29, item 4): :class:`streamjob.client.preview.Previews` is the
one object the shell and ``-e`` run a bare SELECT through, over their client session; no
front end stands in for another. Real SQLite catalog, no Spark (the SELECTs here end
before a query would start: LIMIT 0, a refusal, a planning error)."""

from __future__ import annotations

import pytest

from streamjob.catalog import Catalog
from streamjob.client.preview import Previews
from streamjob.client.session import ClientSession
from streamjob.exceptions import ValidationError
from streamjob.home import Home

pytestmark = pytest.mark.unit

STREAM = ('CREATE STREAM {name} (id int, name string) TBLPROPERTIES("topic"="clicks", '
          '"kafka.broker.list"="127.0.0.1:9", "format"="json");')


def _no_spark():
    raise AssertionError("the preview started Spark")


@pytest.fixture
def session(tmp_path):
    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    session = ClientSession(catalog, home)
    list(session.execute_script("CREATE DATABASE d;\n" + STREAM.format(name="clicks")
                                + "\n" + STREAM.format(name="d.other")))
    yield session
    catalog.close()


def test_limit_0_is_planned_against_the_session_and_starts_no_spark(session):
    lines: list[str] = []
    previews = Previews(session, _no_spark, echo=lines.append)
    previews.run("SELECT id FROM clicks LIMIT 0")
    assert lines == ["0 rows"] and not previews.started


def test_the_sessions_current_database_names_the_stream(session):
    previews = Previews(session, _no_spark, echo=lambda line="": None)
    with pytest.raises(ValidationError, match="other"):
        previews.run("SELECT id FROM other LIMIT 0")
    list(session.execute_script("USE d"))  # the session's USE is the preview's
    previews.run("SELECT id FROM other LIMIT 0")


def test_a_planning_error_is_located_in_the_select(session):
    previews = Previews(session, _no_spark)
    with pytest.raises(ValidationError) as caught:
        previews.run("SELECT id,\n  nope FROM clicks")
    assert (caught.value.line, caught.value.column) == (2, 3)


def test_a_refused_preview_reads_nothing_and_starts_nothing():
    # a client of the HTTP API: the session is not read (it has no catalog here)
    previews = Previews(None, _no_spark, refusal="no previews through --server")
    with pytest.raises(ValidationError) as caught:
        previews.run("SELECT id FROM clicks LIMIT 5")
    assert caught.value.message == "no previews through --server"
    assert (caught.value.line, caught.value.column) == (1, 1)
    assert not previews.started
