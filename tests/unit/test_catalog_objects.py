"""Tests of streamjob.catalog against SQLite (a file) and PostgreSQL (a fresh schema):
streams and tables (one namespace per database, IF NOT EXISTS, drops refused while a
job depends on them) and the dependency check of a new job.

PostgreSQL is required: if it is unreachable, the PostgreSQL half of these tests fails
(it is not skipped). Its URL can be overridden with STREAMJOB_TEST_PG_URL.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from streamjob.catalog import StreamInfo, TableInfo
from streamjob.exceptions import (
    ObjectExistsError,
    ObjectInUseError,
    ObjectNotFoundError,
)

from .catalog_helpers import COLS, _job

pytestmark = pytest.mark.component


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
