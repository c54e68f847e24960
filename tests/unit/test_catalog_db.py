"""Tests of streamjob.catalog against SQLite (a file) and PostgreSQL (a fresh schema):
the database underneath — concurrent writers (threads and processes), URLs and
unreachable databases, the SQLite file and the schema version row.

PostgreSQL is required: if it is unreachable, the PostgreSQL half of these tests fails
(it is not skipped). Its URL can be overridden with STREAMJOB_TEST_PG_URL.
"""

from __future__ import annotations

import multiprocessing
import threading

import pytest
from sqlalchemy import create_engine, text

from streamjob.catalog import Catalog
from streamjob.catalog.models import SCHEMA_VERSION
from streamjob.exceptions import (
    CatalogError,
    ObjectExistsError,
    ObjectInUseError,
)

from .catalog_helpers import COLS, _count, _job

pytestmark = pytest.mark.component


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


def test_missing_columns_count_batches_per_stream_and_column(catalog):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    assert catalog.get_job("default", "j").missing_columns == {}
    catalog.add_missing_columns(uid, {})
    catalog.add_missing_columns(uid, {"default.s": ["itemName", "dateTime"]})
    catalog.add_missing_columns(uid, {"default.s": ["itemName"], "default.t": "x"})
    assert catalog.get_job("default", "j").missing_columns == {
        "default.s": {"itemName": 2, "dateTime": 1}, "default.t": {"x": 1}}
    for bad in ({"": ["a"]}, {"s": [""]}, {"s": [3]}):
        with pytest.raises(ValueError):
            catalog.add_missing_columns(uid, bad)
    catalog.add_missing_columns("no-such-uid", {"s": ["a"]})  # a dropped job: ignored


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
