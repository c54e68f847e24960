"""A plan bound to its connectors before the Spark room (issue 29, second pass): each
static table's reader is described in full by its connector (``table_reader``), its
option names read back by the data source that parses them, and a SQL table is checked
and its URL's secret resolved when bound, never when bound for analysis (``read=False``)
and never shown in the description's ``repr``. Real SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
import sqlalchemy as sa

from streamjob.catalog.records import TableInfo
from streamjob.connectors import spec as cspec
from streamjob.exceptions import ConnectorError
from streamjob.planner.bind import bind_static
from streamjob.planner.plan import Static

from .conftest import PG_URL

pytestmark = pytest.mark.unit

COLUMNS = ({"name": "id", "type": "bigint"}, {"name": "Region", "type": "string"})


def _static(spec, name: str = "t") -> Static:
    table = TableInfo("d", name, COLUMNS, {}, None, None, None, dt.datetime(2024, 1, 1))
    return Static(table, f"{name}_view", spec)


def _read_back(reader_class, how):
    from pyspark.sql.types import StructType

    return reader_class(StructType(), {k.lower(): v for k, v in how.options.items()})


def test_a_local_file_table_is_described_for_streamjob_files_which_reads_its_options_back(tmp_path):
    from streamjob.connectors.files.static import FileStaticReader

    spec = cspec.FileTableSpec("csv", str(tmp_path), True, ("Region",), "|+|")
    bound = bind_static(_static(spec))
    how = bound.reader
    assert (bound.view, bound.declared) == ("t_view", "`id` bigint, `Region` string")
    assert (how.format, how.schema, how.path, how.columns) == (
        "streamjob_files", bound.declared, None, None)
    assert how.parallelism == "partitions" and how.parallelism not in how.options
    reader = _read_back(FileStaticReader, how)
    assert (reader.location, reader.format, reader.header, reader.delimiter,
            reader.partitioned_by) == (str(tmp_path), "csv", True, "|+|", ("Region",))


def test_a_file_table_elsewhere_is_described_for_sparks_reader():
    json_table = bind_static(_static(cspec.FileTableSpec(
        "json", "hdfs://nn/t", False, ("Region",)))).reader
    assert (json_table.format, json_table.path, json_table.schema) == (
        "text", "hdfs://nn/t", "`Region` string")  # the partition column, typed as declared
    assert (json_table.json_columns, json_table.json_schema) == (("id",), "`id` bigint")
    assert json_table.columns == ("id", "Region")
    csv = bind_static(_static(cspec.FileTableSpec("textfile", "s3a://b/t", True))).reader
    assert (csv.format, csv.options["sep"], csv.options["header"], csv.columns) == (
        "csv", "\x01", "true", None)


def test_a_sql_static_table_is_checked_when_bound_and_read_back_by_streamjob_sql(tmp_path):
    from streamjob.connectors.sql.static import SqlStaticReader

    url = f"sqlite:///{tmp_path / 'main.db'}"
    static = _static(cspec.SqlTableSpec(url, "regions", ()))
    with pytest.raises(ConnectorError, match="does not exist"):
        bind_static(static)
    assert bind_static(static, read=False).reader is None  # analysis: nothing contacted
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # columns matched by name, case-insensitively
        conn.execute(sa.text("create table regions (ID integer, region text)"))
    engine.dispose()
    how = bind_static(static).reader
    assert (how.format, how.schema) == ("streamjob_sql", "`id` bigint, `Region` string")
    reader = _read_back(SqlStaticReader, how)
    assert (reader.url, reader.table) == (url, "regions")


def test_a_sql_static_tables_secret_is_resolved_when_bound_and_never_shown(
        pg_admin, monkeypatch, tmp_path):
    """A PostgreSQL table named ``schema.table``; the password a reference to the
    environment (the admin's pattern, ``STREAMJOB_SECRET_*``), resolved under the rules
    of the home this process opened."""
    from streamjob.home import Home

    Home.open(tmp_path / "home", {})
    secret = f"pw-{uuid.uuid4().hex[:8]}"
    table = f"sj_bind_{uuid.uuid4().hex[:8]}"
    with pg_admin.begin() as conn:
        conn.execute(sa.text(f"create table {table} (id bigint, region text)"))
    try:
        base = sa.engine.make_url(PG_URL)
        url = (f"postgresql+psycopg://{base.username}:${{env:STREAMJOB_SECRET_BIND_TEST}}"
               f"@{base.host}:{base.port}/{base.database}")
        static = _static(cspec.SqlTableSpec(url, f"public.{table}", ()))
        assert bind_static(static, read=False).reader is None  # no secret needed
        monkeypatch.setenv("STREAMJOB_SECRET_BIND_TEST", secret)
        how = bind_static(static).reader
        assert secret in how.options["url"] and how.options["table"] == f"public.{table}"
        assert secret not in repr(how) and "${env:" not in how.options["url"]
        monkeypatch.delenv("STREAMJOB_SECRET_BIND_TEST")
        with pytest.raises(ConnectorError, match="not set"):
            bind_static(static)
    finally:
        with pg_admin.begin() as conn:
            conn.execute(sa.text(f"drop table {table}"))
