"""Tests of streamjob.catalog against SQLite (a file) and PostgreSQL (a fresh schema).

PostgreSQL is required: if it is unreachable, the PostgreSQL half of these tests fails
(it is not skipped). Its URL can be overridden with STREAMJOB_TEST_PG_URL.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import create_engine, text

from streamjob.catalog import Catalog, CheckpointInfo, JobInfo, StreamInfo, TableInfo
from streamjob.catalog.models import SCHEMA_VERSION
from streamjob.exceptions import (
    CatalogError,
    ObjectExistsError,
    ObjectInUseError,
    ObjectNotFoundError,
)

COLS = [{"name": "id", "type": "int"}, {"name": "dest", "type": "string"}]
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def catalog(catalog_url):
    cat = Catalog(catalog_url)
    yield cat
    cat.close()


def _count(url: str, table: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.scalar(text(f"SELECT count(*) FROM {table}"))
    finally:
        engine.dispose()


def _job(cat: Catalog, name: str, *deps, db: str = "default", **kw) -> bool:
    return cat.create_job(db, name, f"insert into t select * from s -- {name}", {}, list(deps), **kw)


def _ckpt(cat: Catalog, uid: str, cid: int, retained: int = 5, **kw) -> None:
    values = dict(
        started_at=T0 + timedelta(seconds=cid),
        ended_at=T0 + timedelta(seconds=cid, milliseconds=250),
        duration_ms=250,
        source_offsets={"flights": {"0": cid * 10, "1": cid * 7}},
        input_rows=cid * 3,
        state_rows=cid,
        fingerprint="fp1",
        retained=retained,
    )
    values.update(kw)
    cat.record_checkpoint(uid, cid, **values)


# ----------------------------------------------------------------- streams, tables


def test_create_get_list_drop_streams_and_tables(catalog):
    assert catalog.create_stream(
        "default",
        "flights",
        COLS,
        {"topic": "flights", "kafka.broker.list": "h:9092"},
        row_format={"delimited": True, "fields_terminated_by": ","},
    )
    assert catalog.create_stream("default", "late", COLS, {}, query="SELECT * FROM flights")
    assert catalog.create_stream("other", "a", COLS, {})
    assert catalog.create_table("default", "delays", COLS, {}, stored_as="PARQUET", location="/tmp/x")
    assert catalog.create_table("default", "airports", COLS, {"connector": "sql", "url": "sqlite://"})

    s = catalog.get_stream("default", "flights")
    assert isinstance(s, StreamInfo)
    assert s.qualified_name == "default.flights" and s.kind == "stream"
    assert s.columns == tuple(COLS)
    assert s.properties == {"topic": "flights", "kafka.broker.list": "h:9092"}
    assert s.row_format == {"delimited": True, "fields_terminated_by": ","}
    assert s.query is None and not s.is_derived
    assert s.created_at.tzinfo is not None and s.created_at.utcoffset() == timedelta(0)
    assert catalog.get_stream("default", "late").is_derived
    assert catalog.get_stream("default", "late").row_format is None
    assert catalog.get_stream("default", "nope") is None
    assert catalog.get_stream("default", "delays") is None  # a table, not a stream

    t = catalog.get_table("default", "delays")
    assert isinstance(t, TableInfo)
    assert (t.stored_as, t.location, t.kind) == ("PARQUET", "/tmp/x", "table")
    assert catalog.get_table("default", "flights") is None

    assert [x.qualified_name for x in catalog.list_streams()] == [
        "default.flights",
        "default.late",
        "other.a",
    ]
    assert [x.name for x in catalog.list_streams("other")] == ["a"]
    assert [x.name for x in catalog.list_tables()] == ["airports", "delays"]
    assert catalog.list_tables("other") == []

    assert catalog.drop_stream("default", "late") is True
    assert catalog.drop_table("default", "delays") is True
    assert catalog.get_stream("default", "late") is None
    assert catalog.get_table("default", "delays") is None
    assert [x.name for x in catalog.list_streams("default")] == ["flights"]


def test_records_are_frozen_copies(catalog):
    catalog.create_stream("default", "s", COLS, {"k": "v"})
    s = catalog.get_stream("default", "s")
    with pytest.raises(AttributeError):
        s.name = "x"  # type: ignore[misc]
    s.properties["k"] = "changed"
    assert catalog.get_stream("default", "s").properties == {"k": "v"}


def test_streams_and_tables_share_one_namespace_per_database(catalog):
    catalog.create_stream("default", "x", COLS, {})
    with pytest.raises(ObjectExistsError, match="cannot create table default.x: a stream"):
        catalog.create_table("default", "x", COLS, {})
    with pytest.raises(ObjectExistsError, match="a stream of that name exists"):
        catalog.create_table("default", "x", COLS, {}, if_not_exists=True)
    catalog.create_table("default", "y", COLS, {})
    with pytest.raises(ObjectExistsError, match="cannot create stream default.y: a table"):
        catalog.create_stream("default", "y", COLS, {})
    # another database is another name space
    assert catalog.create_table("other", "x", COLS, {})
    with pytest.raises(ObjectNotFoundError, match=r"stream default.y does not exist \(default.y is a table"):
        catalog.drop_stream("default", "y")


def test_if_not_exists_and_duplicates(catalog):
    assert catalog.create_stream("default", "s", COLS, {"a": "1"})
    assert catalog.create_stream("default", "s", COLS, {"a": "2"}, if_not_exists=True) is False
    assert catalog.get_stream("default", "s").properties == {"a": "1"}
    with pytest.raises(ObjectExistsError, match="stream default.s already exists"):
        catalog.create_stream("default", "s", COLS, {})
    assert catalog.create_table("default", "t", COLS, {})
    assert catalog.create_table("default", "t", COLS, {}, if_not_exists=True) is False
    with pytest.raises(ObjectExistsError, match="table default.t already exists"):
        catalog.create_table("default", "t", COLS, {})


def test_drop_missing(catalog):
    with pytest.raises(ObjectNotFoundError, match="stream default.nope does not exist"):
        catalog.drop_stream("default", "nope")
    with pytest.raises(ObjectNotFoundError, match="table default.nope does not exist"):
        catalog.drop_table("default", "nope")
    assert catalog.drop_stream("default", "nope", if_exists=True) is False
    assert catalog.drop_table("default", "nope", if_exists=True) is False


def test_drop_refused_while_a_job_depends_on_it(catalog):
    catalog.create_stream("default", "flights", COLS, {})
    catalog.create_table("default", "delays", COLS, {})
    catalog.create_table("dim", "airports", COLS, {})
    _job(
        catalog,
        "delays",
        ("stream", "default", "flights", "source"),
        ("table", "default", "delays", "sink"),
        ("table", "dim", "airports", "static"),
    )
    with pytest.raises(ObjectInUseError) as err:
        catalog.drop_stream("default", "flights")
    assert str(err.value) == (
        "cannot drop stream default.flights: used by job default.delays (drop the job first)"
    )
    with pytest.raises(ObjectInUseError, match="cannot drop table default.delays: used by job default.delays"):
        catalog.drop_table("default", "delays")
    with pytest.raises(ObjectInUseError, match="used by job default.delays"):
        catalog.drop_table("dim", "airports", if_exists=True)

    _job(catalog, "also", ("stream", "default", "flights", "source"), db="b")
    with pytest.raises(ObjectInUseError, match=r"used by jobs b.also, default.delays \(drop the jobs first\)"):
        catalog.drop_stream("default", "flights")
    assert catalog.get_stream("default", "flights") is not None

    catalog.drop_job("default", "delays")
    catalog.drop_job("b", "also")
    assert catalog.drop_stream("default", "flights")
    assert catalog.drop_table("default", "delays")
    assert catalog.drop_table("dim", "airports")


def test_create_job_checks_dependencies(catalog):
    with pytest.raises(ObjectNotFoundError, match="stream default.flights does not exist"):
        _job(catalog, "j", ("stream", "default", "flights", "source"))
    assert catalog.get_job("default", "j") is None
    catalog.create_stream("default", "flights", COLS, {})
    # a table dependency must be a table, not a stream of that name
    with pytest.raises(ObjectNotFoundError, match="table default.flights does not exist"):
        _job(catalog, "j", ("table", "default", "flights", "sink"))
    assert _job(catalog, "k", ("table", "x", "unknown", "sink"), check_dependencies=False)
    with pytest.raises(ValueError, match="dependency role"):
        _job(catalog, "m", ("stream", "default", "flights", "reader"))
    with pytest.raises(ValueError, match="dependency kind"):
        _job(catalog, "m", ("view", "default", "flights", "source"))


# ------------------------------------------------------------------------- jobs


def test_jobs_crud(catalog):
    catalog.create_stream("default", "s", COLS, {})
    catalog.create_table("default", "t", COLS, {})
    deps = [("stream", "default", "s", "source"), ("table", "default", "t", "sink")]
    assert catalog.create_job("default", "zeta", "insert into t select * from s", {"a": "1"}, deps + deps[:1])
    assert _job(catalog, "alpha")
    assert _job(catalog, "beta", db="aaa")

    job = catalog.get_job("default", "zeta")
    assert isinstance(job, JobInfo)
    assert job.qualified_name == "default.zeta"
    assert len(job.uid) == 32 and int(job.uid, 16) >= 0
    assert job.query == "insert into t select * from s"
    assert job.properties == {"a": "1"}
    assert (job.desired_state, job.status, job.attempts, job.last_error) == ("STOPPED", "CREATED", 0, None)
    assert job.dependencies == tuple(deps)  # duplicates dropped, order kept
    assert job.created_at == job.updated_at and job.created_at.utcoffset() == timedelta(0)
    assert catalog.get_job_by_uid(job.uid) == job
    assert catalog.get_job("default", "nope") is None
    assert catalog.require_job("default", "zeta") == job
    with pytest.raises(ObjectNotFoundError, match=r"^streamjob default.x does not exist$"):
        catalog.require_job("default", "x")

    assert [j.qualified_name for j in catalog.list_jobs()] == ["aaa.beta", "default.alpha", "default.zeta"]
    assert [j.name for j in catalog.list_jobs("default")] == ["alpha", "zeta"]
    assert catalog.list_jobs()[2].dependencies == tuple(deps)

    with pytest.raises(ObjectExistsError, match="streamjob default.zeta already exists"):
        _job(catalog, "zeta")
    assert _job(catalog, "zeta", if_not_exists=True) is False
    assert catalog.get_job("default", "zeta").uid == job.uid

    time.sleep(0.01)
    updated = catalog.update_job("default", "zeta", status="FAILED", last_error="boom", attempts=3)
    assert (updated.status, updated.last_error, updated.attempts) == ("FAILED", "boom", 3)
    assert updated.updated_at > job.updated_at
    assert updated.desired_state == "STOPPED" and updated.properties == {"a": "1"}
    # last_error unchanged unless given; None clears it
    again = catalog.update_job("default", "zeta", desired_state="RUNNING", properties={"b": 2})
    assert (again.desired_state, again.last_error, again.properties) == ("RUNNING", "boom", {"b": 2})
    cleared = catalog.update_job("default", "zeta", status="RUNNING", last_error=None, attempts=0)
    assert (cleared.status, cleared.last_error, cleared.attempts) == ("RUNNING", None, 0)
    assert catalog.get_job("default", "zeta") == cleared

    with pytest.raises(ValueError, match="job status"):
        catalog.update_job("default", "zeta", status="BOGUS")
    with pytest.raises(ValueError, match="desired state"):
        catalog.update_job("default", "zeta", desired_state="PAUSED")
    with pytest.raises(ObjectNotFoundError, match="streamjob default.nope does not exist"):
        catalog.update_job("default", "nope", status="RUNNING")
    # guarded by uid: a stale writer's update is ignored
    assert catalog.update_job("default", "zeta", status="STOPPED", uid="0" * 32) is None
    assert catalog.update_job("default", "nope", status="STOPPED", uid=job.uid) is None
    assert catalog.get_job("default", "zeta").status == "RUNNING"
    assert catalog.update_job("default", "zeta", status="STOPPED", uid=job.uid).status == "STOPPED"


def test_drop_job_cascades_runs_checkpoints_and_dependencies(catalog, catalog_url):
    catalog.create_stream("default", "s", COLS, {})
    _job(catalog, "j", ("stream", "default", "s", "source"))
    _job(catalog, "keep", ("stream", "default", "s", "source"))
    job = catalog.get_job("default", "j")
    keep = catalog.get_job("default", "keep")
    for uid in (job.uid, keep.uid):
        run = catalog.start_run(uid, 0)
        catalog.end_run(run, "FAILED", "boom")
        catalog.start_run(uid, 1)
        for cid in range(3):
            _ckpt(catalog, uid, cid)

    dropped = catalog.drop_job("default", "j")
    assert dropped == job
    assert catalog.get_job("default", "j") is None
    assert catalog.list_runs(job.uid) == []
    assert catalog.list_checkpoints(job.uid) == []
    assert _count(catalog_url, "runs") == 2
    assert _count(catalog_url, "checkpoints") == 3
    assert _count(catalog_url, "job_dependencies") == 1
    assert len(catalog.list_runs(keep.uid)) == 2
    assert len(catalog.list_checkpoints(keep.uid)) == 3

    with pytest.raises(ObjectNotFoundError, match="streamjob default.j does not exist"):
        catalog.drop_job("default", "j")
    assert catalog.drop_job("default", "j", if_exists=True) is None


def test_uid_changes_on_recreate_and_stale_writes_are_ignored(catalog):
    _job(catalog, "j")
    old = catalog.get_job("default", "j")
    catalog.drop_job("default", "j")
    _job(catalog, "j")
    new = catalog.get_job("default", "j")
    assert new.uid != old.uid
    assert catalog.get_job_by_uid(old.uid) is None

    # the dropped incarnation's late events go nowhere
    assert catalog.start_run(old.uid, 0) is None
    _ckpt(catalog, old.uid, 7)
    assert catalog.truncate_checkpoints(old.uid, -1) == 0
    catalog.end_run(None, "STOPPED")
    catalog.end_run(987654, "STOPPED")
    assert catalog.list_runs(new.uid) == []
    assert catalog.list_checkpoints(new.uid) == []
    assert catalog.latest_checkpoint(new.uid) is None
    assert catalog.list_runs(old.uid) == [] and catalog.list_checkpoints(old.uid) == []


# ------------------------------------------------------------------------- runs


def test_runs(catalog):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    first = catalog.start_run(uid, 0)
    catalog.end_run(first, "FAILED", "java.lang.OutOfMemoryError")
    second = catalog.start_run(uid, 1)
    runs = catalog.list_runs(uid)
    assert [r.id for r in runs] == [first, second]
    assert (runs[0].attempt, runs[0].status, runs[0].cause) == (0, "FAILED", "java.lang.OutOfMemoryError")
    assert runs[0].ended_at is not None and runs[0].ended_at >= runs[0].started_at
    assert runs[0].started_at.utcoffset() == timedelta(0)
    assert (runs[1].status, runs[1].ended_at, runs[1].job_uid) == ("RUNNING", None, uid)

    catalog.end_run(second, "STOPPED", "STOP STREAMJOB")
    catalog.end_run(second, "FAILED", "late duplicate")  # already ended: left alone
    last = catalog.list_runs(uid)[1]
    assert (last.status, last.cause) == ("STOPPED", "STOP STREAMJOB")
    with pytest.raises(ValueError):
        catalog.end_run(second, "RUNNING")


# ------------------------------------------------------------------ checkpoints


def test_checkpoint_retention_keeps_the_highest_ids(catalog, catalog_url):
    _job(catalog, "j")
    _job(catalog, "other")
    uid = catalog.get_job("default", "j").uid
    other = catalog.get_job("default", "other").uid
    _ckpt(catalog, other, 0)
    for cid in range(20):
        _ckpt(catalog, uid, cid, retained=5)
    cps = catalog.list_checkpoints(uid)
    assert [c.checkpoint_id for c in cps] == [15, 16, 17, 18, 19]
    assert _count(catalog_url, "checkpoints") == 6  # the other job's checkpoint stays
    c = cps[-1]
    assert isinstance(c, CheckpointInfo)
    assert c == CheckpointInfo(
        job_uid=uid,
        checkpoint_id=19,
        started_at=T0 + timedelta(seconds=19),
        ended_at=T0 + timedelta(seconds=19, milliseconds=250),
        duration_ms=250,
        source_offsets={"flights": {"0": 190, "1": 133}},
        input_rows=57,
        state_rows=19,
        status="COMPLETED",
        fingerprint="fp1",
    )
    assert c.started_at.tzinfo is not None
    assert catalog.latest_checkpoint(uid) == c
    # a smaller retention applies at the next record
    _ckpt(catalog, uid, 20, retained=2)
    assert [c.checkpoint_id for c in catalog.list_checkpoints(uid)] == [19, 20]


def test_checkpoint_recorded_twice_is_upserted(catalog):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    for cid in range(3):
        _ckpt(catalog, uid, cid)
    _ckpt(catalog, uid, 1)  # replayed batch: no error, no duplicate
    _ckpt(catalog, uid, 2, status="EXPIRED", ended_at=None, duration_ms=None)
    _ckpt(catalog, uid, 2, status="LATE", input_rows=99)
    cps = catalog.list_checkpoints(uid)
    assert [c.checkpoint_id for c in cps] == [0, 1, 2]
    assert (cps[2].status, cps[2].input_rows, cps[2].duration_ms) == ("LATE", 99, 250)
    with pytest.raises(ValueError, match="checkpoint status"):
        _ckpt(catalog, uid, 3, status="DONE")
    with pytest.raises(ValueError, match="retained"):
        _ckpt(catalog, uid, 3, retained=0)


def test_naive_datetimes_are_taken_as_utc(catalog):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    naive = datetime(2024, 1, 2, 3, 4, 5, 600000)
    other_tz = datetime(2024, 1, 2, 5, 4, 5, 600000, tzinfo=timezone(timedelta(hours=2)))
    catalog.record_checkpoint(
        uid, 0, started_at=naive, ended_at=other_tz, duration_ms=0,
        source_offsets=None, input_rows=0, retained=5,
    )
    c = catalog.latest_checkpoint(uid)
    assert c.started_at == naive.replace(tzinfo=timezone.utc) == c.ended_at
    assert c.ended_at.tzinfo == timezone.utc
    assert c.source_offsets is None and c.state_rows is None


def test_truncate_checkpoints(catalog):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    for cid in range(6):
        _ckpt(catalog, uid, cid, retained=10)
    assert catalog.truncate_checkpoints(uid, after=3) == 2
    assert catalog.latest_checkpoint(uid).checkpoint_id == 3
    assert catalog.truncate_checkpoints(uid, after=-1) == 4
    assert catalog.list_checkpoints(uid) == []


# ------------------------------------------------------------------ concurrency


def _create_jobs(url: str, prefix: str, count: int, barrier) -> None:
    cat = Catalog(url)
    try:
        barrier.wait()
        for i in range(count):
            assert cat.create_job(
                "default", f"{prefix}_{i:03d}", "insert into t select * from s", {},
                [("stream", "default", "src", "source")],
            )
            if i % 10 == 0:
                cat.list_jobs()
                cat.create_stream("default", "src", COLS, {}, if_not_exists=True)
    finally:
        cat.close()


def test_two_threads_and_two_processes_create_jobs(catalog, catalog_url):
    catalog.create_stream("default", "src", COLS, {})
    per_worker = 50
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4, timeout=60)
    procs = [
        ctx.Process(target=_create_jobs, args=(catalog_url, f"proc{i}", per_worker, barrier))
        for i in range(2)
    ]
    errors: list[BaseException] = []

    def thread_main(prefix: str) -> None:
        try:
            barrier.wait()
            for i in range(per_worker):
                assert catalog.create_job(
                    "default", f"{prefix}_{i:03d}", "insert into t select * from s", {},
                    [("stream", "default", "src", "source")],
                )
                if i % 10 == 0:
                    catalog.list_jobs()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=thread_main, args=(f"thread{i}",)) for i in range(2)]
    for p in procs:
        p.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for p in procs:
        p.join(120)
    assert not errors, errors
    assert [p.exitcode for p in procs] == [0, 0]

    names = [j.name for j in catalog.list_jobs()]
    expected = sorted(
        f"{prefix}{w}_{i:03d}" for prefix in ("proc", "thread") for w in range(2) for i in range(per_worker)
    )
    assert names == expected
    assert len({j.uid for j in catalog.list_jobs()}) == 4 * per_worker
    with pytest.raises(ObjectInUseError, match="used by jobs default.proc0_000, "):
        catalog.drop_stream("default", "src")


def test_concurrent_creates_of_one_name(catalog):
    """Many threads race to create the same stream/table/job: exactly one wins."""
    results: list[object] = []

    def worker(i: int) -> None:
        try:
            if i % 2:
                results.append(catalog.create_stream("default", "x", COLS, {}))
            else:
                results.append(catalog.create_table("default", "x", COLS, {}))
        except ObjectExistsError as exc:
            results.append(exc)
        results.append(_job(catalog, "j", if_not_exists=True))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sum(r is True for r in results) == 2  # one object "x" and one job "j"
    assert len(catalog.list_streams()) + len(catalog.list_tables()) == 1
    assert len(catalog.list_jobs()) == 1


def test_partitioned_table_round_trip(catalog):
    cols = COLS + [{"name": "dt", "type": "string"}]
    assert catalog.create_table("default", "p", cols, {}, stored_as="parquet",
                                partitioned_by=["dt", "dest"])
    assert catalog.create_table("default", "q", COLS, {})
    assert catalog.get_table("default", "p").partitioned_by == ("dt", "dest")
    assert catalog.get_table("default", "q").partitioned_by == ()
    assert [t.partitioned_by for t in catalog.list_tables()] == [("dt", "dest"), ()]


def test_malformed_counts_add_up_across_concurrent_writers(catalog, catalog_url):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    assert catalog.get_job("default", "j").malformed_counts == {}
    catalog.add_malformed_counts(uid, {})  # nothing to add: no change, no error
    catalog.add_malformed_counts(uid, {"s": 0})
    assert catalog.get_job("default", "j").malformed_counts == {}
    for bad in ({"s": -1}, {"s": 1.5}, {"s": True}, {"": 1}):
        with pytest.raises(ValueError):
            catalog.add_malformed_counts(uid, bad)
    catalog.add_malformed_counts("no-such-uid", {"s": 1})  # a dropped job: ignored

    rounds, errors = 20, []

    def writer(stream: str) -> None:
        cat = Catalog(catalog_url)  # its own connections: real concurrent transactions
        try:
            for _ in range(rounds):
                cat.add_malformed_counts(uid, {stream: 1, "shared": 2})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            cat.close()

    threads = [threading.Thread(target=writer, args=(f"s{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    counts = catalog.get_job("default", "j").malformed_counts
    assert counts == {"s0": rounds, "s1": rounds, "s2": rounds, "s3": rounds, "shared": 8 * rounds}
    assert catalog.get_job_by_uid(uid).malformed_counts == counts
    assert catalog.list_jobs()[0].malformed_counts == counts


# -------------------------------------------------------------- engine and urls


def test_unreachable_postgresql_raises_catalog_error():
    with pytest.raises(CatalogError) as err:
        Catalog("postgresql+psycopg://postgres:s3cret@127.0.0.1:1/test")
    message = str(err.value)
    assert "127.0.0.1:1" in message
    assert "s3cret" not in message and "***" in message
    assert "\n" not in message


def test_invalid_urls_raise_catalog_error(tmp_path):
    with pytest.raises(CatalogError, match="invalid catalog URL"):
        Catalog("not a url")
    with pytest.raises(CatalogError, match="nosuchdb"):
        Catalog("nosuchdb://x/y")


def test_url_is_masked():
    cat = Catalog("sqlite://")  # in memory
    assert cat.url == "sqlite://"
    assert cat.create_stream("default", "s", COLS, {})
    assert [s.name for s in cat.list_streams()] == ["s"]
    cat.close()


def test_sqlite_file_setup_and_reopen(tmp_path):
    path = tmp_path / "deep" / "er" / "catalog.db"
    url = f"sqlite:///{path}"
    cat = Catalog(url)
    assert path.exists()
    assert cat.create_stream("default", "s", COLS, {})
    with cat._engine.connect() as conn:  # noqa: SLF001 - white-box check of the pragmas
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    cat.close()

    again = Catalog(url)
    assert [s.name for s in again.list_streams()] == ["s"]
    again.close()

    engine = create_engine(url)
    with engine.begin() as conn:
        version = conn.scalar(text("SELECT value FROM catalog_meta WHERE key = 'schema_version'"))
        assert version == SCHEMA_VERSION
        assert conn.scalar(text("SELECT version_num FROM alembic_version")) == SCHEMA_VERSION
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    engine.dispose()
    with pytest.raises(CatalogError, match="schema revision 0099"):
        Catalog(url)


def test_reopening_keeps_one_schema_version_row(catalog_url, catalog):
    assert _count(catalog_url, "catalog_meta") == 1
    catalog.create_stream("default", "s", COLS, {})
    with Catalog(catalog_url) as again:
        assert [s.name for s in again.list_streams()] == ["s"]
    assert _count(catalog_url, "catalog_meta") == 1
