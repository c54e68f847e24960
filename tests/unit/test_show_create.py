"""SHOW CREATE STREAM|TABLE|STREAMJOB round-trips (issue 16): across the corpus of valid
scripts, the text SHOW CREATE prints, run on a fresh catalog, recreates each object with
the same catalog record; secrets are masked in it; and the database statements (CREATE /
USE / SHOW / DROP DATABASE) resolve unqualified names in the current database."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from streamjob import properties as jp
from streamjob.client.check import scratch_catalog
from streamjob.exceptions import ObjectInUseError, ObjectNotFoundError, StreamJobError
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.script import substitute
from streamjob.client.session import ClientSession

from . import example_functions

pytestmark = pytest.mark.unit

CORPUS = Path(__file__).parent.parent / "corpus"
EXAMPLES = Path(__file__).parent.parent.parent / "examples"
VALID = sorted((CORPUS / "valid").glob("*.sql")) + sorted(EXAMPLES.glob("*/*.sql"))


@pytest.fixture(scope="module")
def home(tmp_path_factory):  # with the example functions in its functions/
    return example_functions.install(Home.open(tmp_path_factory.mktemp("home")))


def _session(home, catalog=None) -> ClientSession:
    return ClientSession(catalog or scratch_catalog(None), home, dry_run=True)


def _run(session: ClientSession, text: str) -> list:
    return [result for _, result in session.execute_script(text)]


def _record(obj) -> dict:
    """A catalog record without what differs between incarnations, secrets masked."""
    data = asdict(obj)
    for key in ("created_at", "updated_at", "uid", "status", "desired_state", "owner",
                "attempts", "last_error", "progress"):
        data.pop(key, None)
    for key in ("properties", "session_properties"):
        if key in data:
            data[key] = {k: jp.mask(k, v) for k, v in (data[key] or {}).items()}
    return data


def _show_create(session, kind: str, qualified: str) -> str:
    [result] = _run(session, f"SHOW CREATE {kind} {qualified}")
    return result.text


def _objects(catalog) -> list[tuple[str, object]]:
    """Every object in an order that can be recreated: functions, sources and tables,
    then derived streams (as created), then jobs."""
    streams = sorted(catalog.list_streams(), key=lambda s: (s.query is not None, s.created_at))
    out = [("STREAM", s) for s in streams if s.query is None]
    out += [("TABLE", t) for t in catalog.list_tables()]
    out += [("STREAM", s) for s in streams if s.query is not None]
    out = [("FUNCTION", f) for f in catalog.list_functions()] + out
    return out + [("STREAMJOB", j) for j in catalog.list_jobs()]


def _get(catalog, kind: str, obj):
    getter = {"STREAM": catalog.get_stream, "TABLE": catalog.get_table,
              "STREAMJOB": catalog.get_job, "FUNCTION": catalog.get_function}[kind]
    return getter(obj.database, obj.name)


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_show_create_recreates_every_object_of_the_corpus(path, home):
    variables = {"STREAMJOB_HOME": str(home.root), "NEXMARK_DIR": str(home.root / "nexmark")}
    text = substitute(path.read_text(), variables, source=str(path))
    original = _session(home)
    for stmt in parse_script(text):  # every object the script makes, also those it drops
        if type(stmt).__name__ not in ("DropStream", "DropTable", "DropStreamJob"):
            original.execute(stmt)
    objects = _objects(original.catalog)
    assert objects, f"{path.name} creates nothing"
    fresh = _session(home)
    fresh.database = "elsewhere"  # the text names each object's database itself
    fresh.catalog.create_database("elsewhere")
    for kind, obj in objects:
        shown = _show_create(original, kind, f"`{obj.database}`.`{obj.name}`")
        assert parse_script(shown), shown
        _run(fresh, shown)
        assert _record(_get(fresh.catalog, kind, obj)) == _record(obj), shown
    assert fresh.properties == {}, "SET values of a job's text are reset after it"


def test_show_create_masks_secrets_but_keeps_references(home):
    session = _session(home)
    _run(session, """
        CREATE STREAM s (a int) TBLPROPERTIES ('topic'='t', 'kafka.broker.list'='h:9092',
          'kafka.security.protocol'='SASL_PLAINTEXT', 'kafka.sasl.mechanism'='PLAIN',
          'kafka.sasl.username'='u', 'kafka.sasl.password'='hunter2');
        CREATE TABLE pg (a int) TBLPROPERTIES ('connector'='sql',
          'url'='postgresql://u:s3cret@h:5432/db', 'table'='x');
        CREATE TABLE pg2 (a int) TBLPROPERTIES ('connector'='sql',
          'url'='postgresql://u:${env:STREAMJOB_SECRET_PGPASS}@h:5432/db', 'table'='x');
    """)
    stream = _show_create(session, "STREAM", "s")
    assert "hunter2" not in stream and "'kafka.sasl.password' = '******'" in stream
    table = _show_create(session, "TABLE", "pg")
    assert "s3cret" not in table and "u:***@h:5432" in table
    assert "${env:STREAMJOB_SECRET_PGPASS}" in _show_create(session, "TABLE", "pg2")


def test_show_create_of_a_missing_object_suggests_the_nearest(home):
    session = _session(home)
    _run(session, "CREATE STREAM flights (value bigint) TBLPROPERTIES ('source'='rate')")
    with pytest.raises(ObjectNotFoundError, match="did you mean flights"):
        _run(session, "SHOW CREATE STREAM flight")


def test_use_resolves_unqualified_names_in_the_current_database(home):
    session = _session(home)
    results = _run(session, """
        CREATE DATABASE IF NOT EXISTS sales;
        CREATE DATABASE IF NOT EXISTS sales;
        USE sales;
        CREATE STREAM s (value bigint) TBLPROPERTIES ('source'='rate');
        CREATE TABLE t (value bigint) TBLPROPERTIES ('connector'='console');
        CREATE STREAMJOB j AS ("insert into t select value from s");
        SHOW DATABASES;
    """)
    assert [r.message for r in results[:3]] == ["database sales created", "database sales exists",
                                                "using database sales"]
    assert session.database == "sales"
    catalog = session.catalog
    assert catalog.get_stream("sales", "s") and catalog.get_stream("default", "s") is None
    job = catalog.get_job("sales", "j")
    assert ("stream", "sales", "s", "source") in [tuple(d) for d in job.dependencies]
    assert results[-1].rows == [("default", 0, 0, 0, None), ("sales", 1, 1, 1, "yes")]
    with pytest.raises(ObjectNotFoundError, match="database sale does not exist .did you mean sales"):
        _run(session, "USE sale")
    assert session.database == "sales"  # a failed USE changes nothing


def test_drop_database_refuses_while_it_holds_objects_unless_cascade(home):
    session = _session(home)
    _run(session, """CREATE DATABASE d; CREATE STREAM d.s (value bigint) TBLPROPERTIES ('source'='rate');
                     USE d""")
    with pytest.raises(ObjectInUseError, match="holds 1 object.*CASCADE"):
        _run(session, "DROP DATABASE d")
    with pytest.raises(ObjectInUseError, match="default cannot be dropped"):
        _run(session, "DROP DATABASE default")
    [result] = _run(session, "DROP DATABASE d CASCADE")
    assert result.message == "database d dropped; using database default"
    assert session.database == "default" and session.catalog.get_stream("d", "s") is None
    [result] = _run(session, "DROP DATABASE IF EXISTS d")
    assert result.message == "database d does not exist"
    _run(session, """CREATE DATABASE e; CREATE STREAM e.s (value bigint) TBLPROPERTIES ('source'='rate');
        CREATE TABLE t (value bigint) TBLPROPERTIES ('connector'='console');
        CREATE STREAMJOB j AS ("insert into t select value from e.s")""")
    with pytest.raises(ObjectInUseError, match="job default.j uses e.s"):
        _run(session, "DROP DATABASE e CASCADE")
    assert session.catalog.get_stream("e", "s") is not None


def test_a_script_checks_use_on_its_scratch_copy_first(home):
    session = ClientSession(scratch_catalog(None), home)  # applying, not a dry run
    with pytest.raises(StreamJobError, match="database nope does not exist"):
        _run(session, "CREATE DATABASE d; USE nope")
    assert not session.catalog.database_exists("d")  # nothing applied


def test_a_script_may_use_a_database_created_by_an_earlier_one(home, tmp_path):
    """The scratch copy a script is tried on first holds the declared databases too."""
    from streamjob.catalog import Catalog

    catalog = Catalog(f"sqlite:///{tmp_path}/catalog.db")
    _run(ClientSession(catalog, home), "CREATE DATABASE empty")
    session = ClientSession(catalog, home)
    _run(session, "USE empty; SHOW DATABASES")
    assert session.database == "empty"
    catalog.close()


def test_show_create_quotes_odd_names_and_values_and_keeps_a_jobs_set_values(home):
    session = _session(home)
    _run(session, r"""
        CREATE DATABASE `limit`;
        CREATE STREAM `limit`.`from` (`Mixed Case` string, `back``tick` int, `value` bigint,
            s struct<`A b`:int, c:array<string>>)
          ROW FORMAT DELIMITED FIELDS TERMINATED BY '\t' LINES TERMINATED BY '\001'
          TBLPROPERTIES ('topic'='it''s back\\slash \% and "quotes"', 'kafka.broker.list'='h:1',
                         "format"='delimited');
        CREATE TABLE `limit`.t (`value` bigint) TBLPROPERTIES ('connector'='console');
        SET morphling.job.checkpoint.interval = '3000';
        CREATE STREAMJOB `limit`.j AS ("insert into t select `value`
          from `from` where `Mixed Case` like 'a\\%'");
        RESET;
    """)
    fresh = _session(home)
    for kind, name in (("STREAM", "`limit`.`from`"), ("TABLE", "`limit`.t"),
                       ("STREAMJOB", "`limit`.j")):
        text = _show_create(session, kind, name)
        _run(fresh, text)
        db, _, obj = name.replace("`", "").partition(".")
        getter = {"STREAM": "get_stream", "TABLE": "get_table", "STREAMJOB": "get_job"}[kind]
        original = getattr(session.catalog, getter)(db, obj)
        assert _record(getattr(fresh.catalog, getter)(db, obj)) == _record(original), text
    job_text = _show_create(session, "STREAMJOB", "`limit`.j")
    assert job_text.startswith("SET morphling.job.checkpoint.interval = '3000';\n")
    assert job_text.endswith("\nRESET morphling.job.checkpoint.interval;")
    assert fresh.catalog.get_job("limit", "j").session_properties == {
        "morphling.job.checkpoint.interval": "3000"}


def test_print_names_what_it_cannot_read_before_contacting_a_broker(home):
    session = _session(home)
    _run(session, "CREATE STREAM r (value bigint) TBLPROPERTIES ('source'='rate')")
    with pytest.raises(StreamJobError, match="stream default.r is not a Kafka stream"):
        _run(session, "PRINT r LIMIT 1")
    with pytest.raises(StreamJobError, match="no Kafka stream or table is declared: say which "
                                             "broker, PRINT 'clicks' FROM 'host:port'"):
        _run(session, "PRINT clicks")
    with pytest.raises(StreamJobError, match="stream or table x.clicks does not exist"):
        _run(session, "PRINT x.clicks")
    [result] = _run(session, "SHOW TOPICS")
    assert result.message.startswith("no Kafka stream or table is declared")
