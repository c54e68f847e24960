"""Issue 13, point 10 (masking and modes): one masking function for every form of a
password in a URL, applied to what the catalog stores; the home and the SQLite catalog
owner-only. On the main of 2026-11-23 passwords with '/', blanks or '@' and
'?password=' leaked through the regex, errors went into last_error unmasked, and the
catalog file was created world-readable."""

from __future__ import annotations

import stat

import pytest

from streamjob import properties as jp
from streamjob.catalog import Catalog
from streamjob.home import Home
from streamjob.sensitive import mask_text, mask_url

pytestmark = pytest.mark.component


@pytest.mark.parametrize("url, secret", [
    ("postgresql://writer:s3cr/et@db:5432/sink", "s3cr/et"),
    ("postgresql://writer:pass word@db:5432/sink", "pass word"),
    ("postgresql://writer:p@ss@word@db:5432/sink", "p@ss@word"),
    ("postgresql://writer:p%40ss@db:5432/sink", "p%40ss"),
    ("postgresql://db:5432/sink?user=writer&password=hunter22", "hunter22"),
    ("mysql+pymysql://root:t0ken:x@db/sink?charset=utf8", "t0ken:x"),
])
def test_every_form_of_a_url_password_is_masked(url, secret):
    assert secret not in mask_url(url)
    assert secret not in jp.mask("url", url)
    assert secret not in mask_text(f"cannot reach SQL table 't' at {url}: timeout")
    host = "db:5432" if "5432" in url else "db"
    assert host in mask_url(url)


def test_errors_stored_in_the_catalog_are_masked(tmp_path):
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.create_job("default", "j", "insert into t select * from s", {}, ())
    error = ("cannot write batch 3 to SQL table 't' at postgresql://writer:s3 cr/et@db/sink: "
             "FATAL password=s3cret2 rejected")
    catalog.update_job("default", "j", last_error=error)
    job = catalog.get_job("default", "j")
    assert "s3 cr/et" not in job.last_error and "s3cret2" not in job.last_error
    assert "postgresql://writer:***@db/sink" in job.last_error
    run = catalog.start_run(job.uid, 1)
    catalog.end_run(run, "FAILED", error)
    raw = (tmp_path / "catalog.db").read_bytes()
    for path in tmp_path.glob("catalog.db*"):
        raw += path.read_bytes()
    assert b"s3 cr/et" not in raw and b"s3cret2" not in raw


def test_the_home_and_the_catalog_file_are_owner_only(tmp_path):
    home = Home.open(tmp_path / "home", {})
    Catalog(home.catalog_url).list_jobs()
    assert stat.S_IMODE((tmp_path / "home").stat().st_mode) == 0o700
    catalog_file = next((tmp_path / "home").glob("*.db"))
    assert stat.S_IMODE(catalog_file.stat().st_mode) == 0o600


def test_a_secret_reference_reaches_the_driver_never_the_catalog(tmp_path, monkeypatch):
    """Issue 13 point 10: ``${env:NAME}`` / ``${file:/path}`` in a SQL table's URL are
    resolved when the connection is made; the catalog holds the reference only."""
    import sqlalchemy as sa

    from streamjob.connectors.spec import SqlTableSpec
    from streamjob.connectors.sql.engine import engine_for
    from streamjob.connectors.sql.sink import SqlSink
    from streamjob.exceptions import ConnectorError
    from streamjob.executor import Executor
    from streamjob.grammar import parse_script

    secret = "p@ss/w:rd-4815162342"
    monkeypatch.setenv("STREAMJOB_SECRET_TEST_PG", secret)  # the admin's pattern (issue 28)
    home = Home.open(tmp_path / "home", {})
    (home.root / "secrets" / "pw").write_text(secret + "\n")  # the admin's secret directory
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home)
    for ref in ("${env:STREAMJOB_SECRET_TEST_PG}", f"${{file:{home.root / 'secrets' / 'pw'}}}", "${file:pw}"):
        url = f"postgresql+psycopg://postgres:{ref}@127.0.0.1:5432/test"
        engine = engine_for(url)
        assert engine.url.password == secret  # percent-encoded in the URL, whole for the driver
        with engine.connect() as conn:  # trust auth here: the connection itself is real
            assert conn.execute(sa.text("select 1")).scalar() == 1
    [stmt] = parse_script('CREATE TABLE t (a INT) TBLPROPERTIES ("connector"="sql", '
                          '"url"="postgresql+psycopg://postgres:${env:STREAMJOB_SECRET_TEST_PG}@127.0.0.1:5432/test");')
    ex.execute(stmt)
    SqlSink(SqlTableSpec("postgresql+psycopg://postgres:${env:STREAMJOB_SECRET_TEST_PG}@127.0.0.1:5432/test",
                         "sj_secret_ref_t", ()), [{"name": "a", "type": "int"}], "u", True, False).check()
    raw = b"".join(p.read_bytes() for p in (tmp_path / "home").glob("*.db*"))
    assert b"${env:STREAMJOB_SECRET_TEST_PG}" in raw and secret.encode() not in raw
    assert secret not in mask_text(f"driver said: password {secret} rejected")

    monkeypatch.delenv("STREAMJOB_SECRET_TEST_PG")
    with pytest.raises(ConnectorError) as e:
        engine_for("postgresql+psycopg://postgres:${env:STREAMJOB_SECRET_TEST_PG}@127.0.0.1:5432/other")
    assert "${env:STREAMJOB_SECRET_TEST_PG}" in str(e.value) and "not set" in str(e.value)
