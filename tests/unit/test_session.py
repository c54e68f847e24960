"""The client session under the CLI and the shell (streamjob/client/session.py): SET values
carry over between statements, a script is parsed whole before anything runs, and a
START says, in fields, where the job runs. SQLite catalog, no Spark."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from streamjob.catalog import Catalog
from streamjob.exceptions import StreamJobError
from streamjob.grammar import parse_statement
from streamjob.home import Home
from streamjob.client.session import NO_SERVER, ClientSession, server_label

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM s (id INT) TBLPROPERTIES("source"="files", "path"="{d}", "format"="json");
CREATE TABLE t (id INT) STORED AS PARQUET LOCATION '{d}/../t';
"""


@pytest.fixture
def session(tmp_path):
    home = Home.open(str(tmp_path / "home"), {}, None)
    (tmp_path / "in").mkdir()
    s = ClientSession(Catalog(home.catalog_url), home)
    list(s.execute_script(SETUP.format(d=tmp_path / "in")))
    yield s
    s.close()


def test_set_values_carry_over_and_are_captured_by_a_new_job(session):
    list(session.execute_script('SET morphling.job.checkpoint.interval = 5000;'))
    assert session.properties == {"morphling.job.checkpoint.interval": "5000"}
    list(session.execute_script('CREATE STREAMJOB j AS ("insert into t select id from s");'))
    job = session.catalog.get_job("default", "j")
    assert job.session_properties == {"morphling.job.checkpoint.interval": "5000"}


def test_a_script_is_parsed_whole_before_anything_runs(session):
    results = session.execute_script('CREATE STREAM x (a INT) TBLPROPERTIES("source"="files", '
                                      '"path"="/tmp", "format"="json");\nSHOW STREAMZ;')
    with pytest.raises(StreamJobError) as err:
        next(results)
    assert err.value.line == 2 and session.catalog.get_stream("default", "x") is None


def test_a_statement_error_is_located_in_the_script_and_nothing_runs(session):
    results = session.execute_script("DROP TABLE t;\n\nDROP STREAM nope;\nSHOW TABLES;")
    with pytest.raises(StreamJobError) as err:
        next(results)  # tried whole on a scratch copy of the catalog first
    assert (err.value.line, err.value.column) == (3, 13) and err.value.note is None
    assert session.catalog.get_table("default", "t") is not None  # DROP TABLE did not run


def test_start_without_a_job_manager_is_pending_and_says_so(session):
    list(session.execute_script('CREATE STREAMJOB j AS ("insert into t select id from s");'))
    result = session.execute(parse_statement("START STREAMJOB j"))
    assert result.pending and result.runs_in is None and result.object == "default.j"
    assert result.message == f"streamjob default.j: desired state RUNNING; {NO_SERVER}"
    assert session.manager is None


def test_start_names_the_job_manager_holding_the_lease_and_hosts_nothing(session):
    session.host_jobs = True  # as the shell: it would host the job if no server ran
    session.catalog.lease_holder = lambda: SimpleNamespace(server_id="s1", host="h", pid=42)
    list(session.execute_script('CREATE STREAMJOB j AS ("insert into t select id from s");'))
    result = session.execute(parse_statement("START STREAMJOB j"))
    assert result.pending and result.runs_in == "h:42" and session.manager is None
    assert result.message == "streamjob default.j: desired state RUNNING; server h:42 starts it"


def test_server_label_names_a_job_manager_as_status_does():
    assert server_label(SimpleNamespace(server_id="s1", host="h", pid=7)) == "h:7"
    assert server_label(SimpleNamespace(server_id="s1", host=None, pid=None)) == "s1"
    assert server_label("s2") == "s2"
