"""ADD JAR across HTTP requests (issue 31, docs/functions.md "ADD JAR and sessions"):
a jar added in one request is usable by CREATE TEMPORARY FUNCTION in a later request of
the same client session, which carries the session's jars as it carries its SET values
and database (the server keeps no session); each jar carried is checked again against
the admin's jar directories. A real server (uvicorn on a free port of 127.0.0.1) over a
SQLite and a PostgreSQL catalog, driven with httpx and with the CLI's remote session;
the jar is the example GenericUDF compiled with the JDK's javac. No Spark: the
statements only change the catalog."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from streamjob.api.client import RemoteSession
from streamjob.exceptions import ValidationError
from streamjob.grammar import parse_script
from streamjob_tools.dev.hive_jar import build_jar

from .test_api import Api

pytestmark = pytest.mark.component  # PostgreSQL for the catalog; javac builds the jar

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "functions" / "Reverse.java"


@pytest.fixture(scope="module")
def jar(tmp_path_factory) -> Path:
    return build_jar([EXAMPLE], tmp_path_factory.mktemp("jar") / "text_udfs.jar")


@pytest.fixture
def api(tmp_path, catalog_url, jar):
    a = Api(tmp_path, catalog_url)
    functions = tmp_path / "home" / "functions"
    functions.mkdir(exist_ok=True)
    shutil.copy(jar, functions / "text_udfs.jar")
    yield a
    a.close()


def _post(api: Api, sql: str, **session):
    return api.http.post("/v1/statements", json={"sql": sql, **session})


def test_a_jar_added_in_one_request_serves_a_function_created_in_the_next(api, tmp_path):
    added = _post(api, "ADD JAR text_udfs.jar")
    assert added.status_code == 200, added.text
    real = str((tmp_path / "home" / "functions" / "text_udfs.jar").resolve())
    assert added.json()["jars"] == [real]

    # the next request without the session's jars: Hive's "no jar" error, nothing created
    alone = _post(api, "CREATE TEMPORARY FUNCTION reverse_text AS 'com.example.udf.Reverse'")
    assert alone.status_code == 400 and "no jar given" in alone.json()["error"]["message"]

    # with them (as the answer gave them): the class is found in the added jar
    created = _post(api, "CREATE TEMPORARY FUNCTION reverse_text AS 'com.example.udf.Reverse'",
                    jars=added.json()["jars"])
    assert created.status_code == 200, created.text
    assert created.json()["jars"] == [real]
    described = _post(api, "DESCRIBE FUNCTION reverse_text")
    rows = dict(described.json()["results"][0]["rows"])
    assert (rows["kind"], rows["location"]) == ("hive", real)
    assert rows["owner"] == "token:test"


def test_a_carried_jar_is_checked_again_like_add_jar(api, tmp_path, jar):
    outside = tmp_path / "elsewhere" / "x.jar"
    outside.parent.mkdir()
    shutil.copy(jar, outside)
    for carried in ([str(outside)], ["../../elsewhere/x.jar"], ["missing.jar"]):
        r = _post(api, "CREATE TEMPORARY FUNCTION r AS 'com.example.udf.Reverse'", jars=carried)
        assert r.status_code == 400, r.text
        message = r.json()["error"]["message"]
        assert ("not in the admin's jar directories" in message
                or "does not exist in the admin's jar directories" in message), message
        assert r.json()["results"] == []
    assert _post(api, "SHOW FUNCTIONS").json()["results"][0]["rows"] == []


def test_the_remote_client_session_carries_its_jars_between_statements(api, tmp_path):
    """What ``streamjob shell --server URL`` does: one request per statement."""
    session = RemoteSession(api.url, api.token)
    try:
        for stmt in parse_script("add jar text_udfs.jar;\n"
                                 "create temporary function reverse_text as "
                                 "'com.example.udf.Reverse';"):
            session.execute(stmt)
        assert session.jars == [str((tmp_path / "home" / "functions" / "text_udfs.jar").resolve())]
        assert [f.name for f in api.catalog.list_functions("default")] == ["reverse_text"]
        (tmp_path / "home" / "functions" / "text_udfs.jar").unlink()  # gone from the directory
        with pytest.raises(ValidationError, match="does not exist"):
            session.execute(parse_script("create temporary function r2 as "
                                         "'com.example.udf.Reverse'")[0])
    finally:
        session.close()
