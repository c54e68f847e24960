"""Tests of the catalog's alembic migrations on SQLite (a file) and PostgreSQL (a fresh
schema per test; URL overridable with STREAMJOB_TEST_PG_URL, as in test_catalog_*.py)."""

from __future__ import annotations

import ast
import logging
import multiprocessing
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import make_url

from streamjob.catalog import Catalog, migrations
from streamjob.catalog.models import SCHEMA_VERSION, Base, UTCDateTime
from streamjob.exceptions import CatalogError

pytestmark = pytest.mark.component

HEAD = "0015"
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
COLS = [{"name": "id", "type": "int"}]


@pytest.fixture
def url(catalog_url, tmp_path):
    """A URL to an empty database: a SQLite file, or a fresh PostgreSQL schema."""
    (tmp_path / "home").mkdir(exist_ok=True)
    return catalog_url


@pytest.fixture
def engine(url):
    """A plain engine on ``url`` (no streamjob events; SQLite foreign keys off)."""
    eng = sa.create_engine(url)
    yield eng
    eng.dispose()


def _alembic(engine, cmd, revision: str) -> None:
    with engine.begin() as conn:
        cmd(migrations.alembic_config(conn), revision)


def _revision(engine) -> str | None:
    with engine.connect() as conn:
        return migrations.current_revision(conn)


def _diff(engine) -> list:
    with engine.connect() as conn:
        return compare_metadata(MigrationContext.configure(conn), Base.metadata)


def _snapshot(engine) -> dict:
    """Every table's columns and rows (the whole database, to see that nothing changed)."""
    with engine.connect() as conn:
        insp = sa.inspect(conn)
        return {
            t: (
                [c["name"] for c in insp.get_columns(t)],
                sorted(map(repr, conn.execute(sa.text(f"SELECT * FROM {t}")).all())),
            )
            for t in sorted(insp.get_table_names())
        }


def _count(engine, table: str) -> int:
    with engine.connect() as conn:
        return conn.scalar(sa.text(f"SELECT count(*) FROM {table}"))


def _table(name: str, *plain: str, **typed) -> sa.TableClause:
    return sa.table(name, *map(sa.column, plain), *(sa.column(c, t) for c, t in typed.items()))


def _fill_0001(engine) -> None:
    """A stream, a job reading it and a run of the job, written with the 0001 columns."""
    ts, js = UTCDateTime(), sa.JSON()
    streams = _table("streams", "database", "name", "query", columns=js, properties=js,
                     row_format=js, created_at=ts)
    jobs = _table("jobs", "uid", "database", "name", "query", "desired_state", "status",
                  "attempts", "last_error", properties=js, created_at=ts, updated_at=ts)
    deps = _table("job_dependencies", "job_id", "kind", "database", "name", "role")
    runs = _table("runs", "job_id", "attempt", "status", started_at=ts)
    with engine.begin() as conn:
        conn.execute(streams.insert().values(
            database="default", name="s", query=None, columns=COLS, properties={"topic": "t"},
            row_format=None, created_at=T0))
        conn.execute(jobs.insert().values(
            uid="u1", database="default", name="j", query="insert into t select * from s",
            desired_state="STOPPED", status="CREATED", attempts=0, last_error=None,
            properties={"p": "1"}, created_at=T0, updated_at=T0))
        job_id = conn.scalar(sa.text("SELECT id FROM jobs WHERE uid = 'u1'"))
        conn.execute(deps.insert().values(
            job_id=job_id, kind="stream", database="default", name="s", role="source"))
        conn.execute(runs.insert().values(job_id=job_id, attempt=1, status="RUNNING", started_at=T0))


def _described(diff) -> tuple[str, str, str]:
    """An alembic diff as (kind, table, column); column "" for a whole table."""
    if diff[0] == "add_table":
        return ("add_table", diff[1].name, "")
    if diff[0] == "add_index":
        return ("add_index", diff[1].table.name, "")
    kind, _schema, table, column = diff
    return (kind, table, column.name)


def _assert_filled_rows_kept(cat: Catalog) -> None:
    assert [s.name for s in cat.list_streams()] == ["s"]
    job = cat.get_job("default", "j")
    assert (job.uid, job.properties, job.created_at) == ("u1", {"p": "1"}, T0)
    assert job.dependencies == (("stream", "default", "s", "source"),)
    assert job.session_properties == {}
    assert [r.attempt for r in cat.list_runs("u1")] == [1]
    # revision 0011: the job's query is its version 1, of its creation, by nobody known
    [v1] = cat.list_job_versions("u1")
    assert (v1.version, v1.query, v1.properties, v1.created_at, v1.principal) == (
        1, "insert into t select * from s", {"p": "1"}, T0, None)


# ---------------------------------------------------------------------- tests


def test_revisions_and_schema_version():
    assert migrations.head_revision() == HEAD == SCHEMA_VERSION
    assert migrations.known_revisions() == {"0001", "0002", "0003", "0004", "0005", "0006", "0007", "0008", "0009", "0010", "0011", "0012", "0013", "0014", "0015"}
    for path in Path(migrations.SCRIPT_LOCATION, "versions").glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        imported += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in imported if m and m.startswith("streamjob")], path.name


def test_fresh_database_is_at_head_and_equals_models(url, engine):
    Catalog(url).close()
    assert _revision(engine) == HEAD
    assert _diff(engine) == []
    with engine.connect() as conn:
        meta = conn.execute(sa.text("SELECT key, value FROM catalog_meta")).all()
    assert meta == [("schema_version", HEAD)]
    # constraint and index names follow models.NAMING_CONVENTION
    with engine.connect() as conn:
        insp = sa.inspect(conn)
        for name, table in Base.metadata.tables.items():
            reflected = {insp.get_pk_constraint(name)["name"]}
            reflected |= {u["name"] for u in insp.get_unique_constraints(name)}
            reflected |= {f["name"] for f in insp.get_foreign_keys(name)}
            assert reflected == {c.name for c in table.constraints}, name
            indexes = {i["name"] for i in insp.get_indexes(name) if not i.get("duplicates_constraint")}
            assert indexes == {i.name for i in table.indexes}, name


def test_database_at_0001_is_upgraded_on_open_keeping_rows(url, engine):
    _alembic(engine, command.upgrade, "0001")
    assert _revision(engine) == "0001"
    added = sorted(_described(d) for d in _diff(engine))
    assert added == [("add_column", "checkpoints", "state_bytes"),  # what 0002..0015 add
                     ("add_column", "jobs", "expired_checkpoints"),
                     ("add_column", "jobs", "malformed_counts"),
                     ("add_column", "jobs", "missing_columns"),
                     ("add_column", "jobs", "owner"),
                     ("add_column", "jobs", "pending_switch"),
                     ("add_column", "jobs", "progress"),
                     ("add_column", "jobs", "session_properties"),
                     ("add_column", "tables", "partitioned_by"),
                     ("add_index", "job_leases", ""),
                     ("add_index", "progress_samples", ""),
                     ("add_index", "statement_log", ""),
                     ("add_table", "api_tokens", ""),
                     ("add_table", "databases", ""),
                     ("add_table", "functions", ""),
                     ("add_table", "job_leases", ""),
                     ("add_table", "job_versions", ""),
                     ("add_table", "leases", ""),
                     ("add_table", "progress_samples", ""),
                     ("add_table", "savepoints", ""),
                     ("add_table", "servers", ""),
                     ("add_table", "statement_log", "")]
    _fill_0001(engine)
    with Catalog(url) as cat:
        _assert_filled_rows_kept(cat)
    assert _revision(engine) == HEAD and _diff(engine) == []


def test_legacy_catalog_is_stamped_and_upgraded(url, engine):
    # what streamjob made before alembic: create_all of the 0001 models, schema_version 1
    Base.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE jobs DROP COLUMN session_properties"))
        conn.execute(sa.text("ALTER TABLE jobs DROP COLUMN expired_checkpoints"))
        conn.execute(sa.text("ALTER TABLE jobs DROP COLUMN malformed_counts"))
        conn.execute(sa.text("ALTER TABLE tables DROP COLUMN partitioned_by"))
        conn.execute(sa.text("ALTER TABLE jobs DROP COLUMN owner"))
        conn.execute(sa.text("ALTER TABLE jobs DROP COLUMN progress"))
        conn.execute(sa.text("ALTER TABLE jobs DROP COLUMN missing_columns"))
        conn.execute(sa.text("ALTER TABLE jobs DROP COLUMN pending_switch"))
        conn.execute(sa.text("DROP TABLE servers"))
        conn.execute(sa.text("DROP TABLE leases"))
        conn.execute(sa.text("ALTER TABLE checkpoints DROP COLUMN state_bytes"))
        for table in ("api_tokens", "statement_log", "progress_samples", "databases",
                      "functions", "savepoints", "job_leases",
                      "job_versions"):
            conn.execute(sa.text(f"DROP TABLE {table}"))
        conn.execute(sa.text("INSERT INTO catalog_meta VALUES ('schema_version', '1')"))
    assert _revision(engine) is None
    _fill_0001(engine)
    with Catalog(url) as cat:
        _assert_filled_rows_kept(cat)
    assert _revision(engine) == HEAD and _diff(engine) == []
    assert _count(engine, "alembic_version") == 1 and _count(engine, "catalog_meta") == 1


def test_downgrade_to_0001_and_upgrade_again(url, engine):
    with Catalog(url) as cat:
        assert cat.create_stream("default", "s", COLS, {})
        assert cat.create_job("default", "j", "q", {}, [("stream", "default", "s", "source")],
                              session_properties={"k": "v"})
        uid = cat.get_job("default", "j").uid
        cat.start_run(uid, 1)
    _alembic(engine, command.downgrade, "0001")
    assert _revision(engine) == "0001"
    with engine.connect() as conn:
        assert "session_properties" not in {c["name"] for c in sa.inspect(conn).get_columns("jobs")}
        assert conn.scalar(sa.text("SELECT value FROM catalog_meta")) == "1"
    assert (_count(engine, "jobs"), _count(engine, "runs"), _count(engine, "job_dependencies")) == (
        1, 1, 1)
    with Catalog(url) as cat:
        job = cat.get_job("default", "j")
        assert job.session_properties == {} and job.dependencies
        assert len(cat.list_runs(uid)) == 1
    assert _revision(engine) == HEAD and _diff(engine) == []


def test_unknown_revision_raises_and_changes_nothing(url, engine):
    with Catalog(url) as cat:
        cat.create_stream("default", "s", COLS, {})
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0099'"))
    before = _snapshot(engine)
    with pytest.raises(CatalogError) as err:
        Catalog(url)
    message = str(err.value)
    assert "schema revision 0099, which this streamjob does not know" in message
    assert "upgrade streamjob" in message
    assert make_url(url).render_as_string(hide_password=True) in message
    assert _snapshot(engine) == before
    with engine.begin() as conn:  # two rows: alembic branches, which streamjob never makes
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0002'"))
        conn.execute(sa.text("INSERT INTO alembic_version VALUES ('0001')"))
    with pytest.raises(CatalogError, match="several schema revisions: 000[12], 000[12]"):
        Catalog(url)


def test_pre_alembic_tables_without_version_one_are_refused(url, engine):
    Base.metadata.tables["streams"].create(engine)
    with pytest.raises(CatalogError, match="has tables streams but no schema version"):
        Catalog(url)
    Base.metadata.tables["catalog_meta"].create(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO catalog_meta VALUES ('schema_version', '99')"))
    with pytest.raises(CatalogError, match="schema version 99, which this streamjob does not know"):
        Catalog(url)
    assert _revision(engine) is None


def _open_at_once(url: str, barrier, results) -> None:
    """Child process: wait for the others, open the catalog, report the upgrades it ran."""
    ran: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("Running upgrade"):
                ran.append(record.getMessage())

    log = logging.getLogger("alembic.runtime.migration")
    log.addHandler(Collect())
    log.setLevel(logging.INFO)
    barrier.wait()
    Catalog(url).close()
    results.put(len(ran))


def test_two_processes_open_a_fresh_catalog_at_once(url, engine):
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2, timeout=60)
    results = ctx.Queue()
    procs = [ctx.Process(target=_open_at_once, args=(url, barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    # an empty database is made at head in one step (catalog/fresh.py), by one of them
    assert sorted(results.get(timeout=10) for _ in procs) == [0, 0]
    assert _revision(engine) == HEAD and _diff(engine) == []
    assert _count(engine, "alembic_version") == 1 and _count(engine, "catalog_meta") == 1
    assert _count(engine, "leases") == 1


def test_database_at_0003_gains_partitions_and_malformed_counts(url, engine):
    _alembic(engine, command.upgrade, "0003")
    _fill_0001(engine)
    ts, js = UTCDateTime(), sa.JSON()
    tables = _table("tables", "database", "name", "stored_as", "location", columns=js,
                    properties=js, row_format=js, created_at=ts)
    with engine.begin() as conn:
        conn.execute(tables.insert().values(
            database="default", name="t", stored_as="parquet", location="/x", columns=COLS,
            properties={}, row_format=None, created_at=T0))
    with Catalog(url) as cat:
        _assert_filled_rows_kept(cat)
        assert cat.get_table("default", "t").partitioned_by == ()
        assert cat.get_job("default", "j").malformed_counts == {}
        cat.add_malformed_counts("u1", {"s": 2})
        assert cat.get_job("default", "j").malformed_counts == {"s": 2}
    assert _revision(engine) == HEAD and _diff(engine) == []
    _alembic(engine, command.downgrade, "0003")
    with engine.connect() as conn:
        assert "malformed_counts" not in {c["name"] for c in sa.inspect(conn).get_columns("jobs")}
        assert "partitioned_by" not in {c["name"] for c in sa.inspect(conn).get_columns("tables")}
        assert conn.scalar(sa.text("SELECT value FROM catalog_meta")) == "0003"
    assert (_count(engine, "jobs"), _count(engine, "tables")) == (1, 1)


def test_session_properties_round_trip(url):
    session = {"morphling.job.checkpoint.interval": "60 s", "n": 5, "nested": {"a": [1, 2]}}
    with Catalog(url) as cat:
        assert cat.create_job("default", "j", "q", {"x": "1"}, [], session_properties=session)
        assert cat.create_job("default", "k", "q", {}, [])
        session["n"] = 6  # stored as a copy
        j = cat.get_job("default", "j")
        assert j.session_properties == {**session, "n": 5} and j.properties == {"x": "1"}
        assert cat.get_job_by_uid(j.uid).session_properties == j.session_properties
        assert [x.session_properties for x in cat.list_jobs()] == [j.session_properties, {}]
        assert cat.update_job("default", "j", status="RUNNING").session_properties["n"] == 5


def _copy_jobs_table(conn) -> int:
    """A batch "move and copy" of ``jobs``; returns the runs left afterwards."""
    with Operations(MigrationContext.configure(conn)).batch_alter_table("jobs", recreate="always"):
        pass
    return conn.scalar(sa.text("SELECT count(*) FROM runs"))


def test_sqlite_table_copy_in_migration_keeps_referencing_rows(tmp_path):
    """What render_as_batch emits for most ALTERs on SQLite deletes runs and dependencies
    by cascade with foreign keys on; streamjob migrates with them off."""
    with Catalog(f"sqlite:///{tmp_path}/c.db") as cat:
        cat.create_stream("default", "s", COLS, {})
        cat.create_job("default", "j", "q", {}, [("stream", "default", "s", "source")])
        cat.start_run(cat.get_job("default", "j").uid, 1)
        with cat._engine.connect() as conn:  # noqa: SLF001 - the catalog's own connections
            with conn.begin() as tx:  # foreign keys on, as in every catalog transaction
                assert _copy_jobs_table(conn) == 0
                tx.rollback()
            with migrations.foreign_keys_off(conn), conn.begin() as tx:
                assert _copy_jobs_table(conn) == 1
                assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []
                tx.rollback()
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert len(cat.list_jobs()[0].dependencies) == 1


def test_migrations_print_nothing_and_leave_logging_alone(tmp_path, capsys):
    root = logging.getLogger()
    before = (root.level, list(root.handlers), logging.getLogger("alembic").handlers[:])
    Catalog(f"sqlite:///{tmp_path}/c.db").close()
    assert capsys.readouterr().out == ""
    after = (root.level, list(root.handlers), logging.getLogger("alembic").handlers[:])
    assert after == before
    assert not logging.getLogger("alembic.runtime.migration").disabled


def test_database_at_0004_gains_servers_leases_owner_and_progress(url, engine):
    _alembic(engine, command.upgrade, "0004")
    _fill_0001(engine)
    with Catalog(url) as cat:
        _assert_filled_rows_kept(cat)
        job = cat.get_job("default", "j")
        assert (job.owner, job.progress) == (None, {})
        assert cat.lease_holder() is None and cat.list_servers() == []
        cat.register_server("h:1:abcd", "h", 1, "local[2]")
        assert cat.acquire_lease("h:1:abcd", 5000)
        assert cat.lease_holder().server_id == "h:1:abcd"
        cat.update_job("default", "j", owner="h:1:abcd")
        cat.update_progress("u1", {"batch_id": 3})
        job = cat.get_job("default", "j")
        assert (job.owner, job.progress) == ("h:1:abcd", {"batch_id": 3})
    assert _revision(engine) == HEAD and _diff(engine) == []
    with engine.connect() as conn:  # the migration made the one lease row
        assert conn.execute(sa.text("SELECT name FROM leases")).scalars().all() == ["manager"]
    _alembic(engine, command.downgrade, "0004")
    with engine.connect() as conn:
        insp = sa.inspect(conn)
        assert not {"servers", "leases"} & set(insp.get_table_names())
        assert not {"owner", "progress"} & {c["name"] for c in insp.get_columns("jobs")}
        assert conn.scalar(sa.text("SELECT value FROM catalog_meta")) == "0004"
    assert _count(engine, "jobs") == 1
