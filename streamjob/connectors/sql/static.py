"""SQL tables read as static data at every micro-batch (``streamjob_sql``; see the package docstring)."""

from __future__ import annotations

from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from streamjob.exceptions import ConnectorError
from streamjob.connectors.source_base import Reader
from streamjob.connectors.static_base import (BATCH_ROWS, DEFAULT_BATCH_ROWS, SQL_SOURCE_NAME, TABLE, URL,
                                              _arrow_schema, _options, arrow_column, column_map,
                                              key)


def _sql_target(url: str, table: str):
    """``(engine, selectable, description)`` of SQL table ``table`` (``schema.name``
    allowed) at ``url``."""
    import sqlalchemy as sa

    from streamjob.connectors.sql.sink import _mask, engine_for

    schema, _, name = table.rpartition(".")
    return (engine_for(url), sa.table(name, schema=schema or None),
            f"SQL table '{table}' at {_mask(url)}")


def check_sql_table(url: str, table: str, names: Sequence[str]) -> None:
    """Check at job start that SQL table ``table`` at ``url`` can be read as the declared
    columns ``names`` (see :func:`column_map`); reads no rows.

    Raises:
        ConnectorError: bad URL or missing driver, database unreachable, no such table,
            or its columns do not match (the URL's password masked).
    """
    import sqlalchemy as sa
    from sqlalchemy.exc import SQLAlchemyError

    engine, target, what = _sql_target(url, table)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table(target.name, schema=target.schema):
                raise ConnectorError(f"{what} does not exist (a static table is read, "
                                     f"never created)")
            found = list(conn.execute(sa.select(sa.text("*")).select_from(target).limit(0)).keys())
    except SQLAlchemyError as exc:
        raise ConnectorError(f"cannot read {what}: {str(exc).splitlines()[0]}") from None
    column_map(found, names, what)


def table_reader(spec, columns: Sequence[dict], what: str) -> Reader:
    """How Spark reads SQL table ``spec`` (a :class:`~streamjob.connectors.spec.SqlTableSpec`)
    as static data: ``streamjob_sql`` with the declared ``columns`` (``[{"name",
    "type"}]``) as its schema. ``what`` names the table in errors (``table db.t``).

    Called at job start: the table is checked (:func:`check_sql_table`) and the URL's
    secret reference resolved here, in the job manager that holds the admin's key and
    secret files (as Kafka's security options): Spark's Python workers need neither, and
    Spark redacts ``url`` options in plans (``spark.sql.redaction.options.regex``).

    Raises:
        ConnectorError: the table cannot be reached, does not exist, or its columns do
            not match; a secret reference that cannot be resolved.
        PolicyError: a secret reference outside the URL's password.
    """
    from streamjob.columntypes import ddl
    from streamjob.security.resolve import resolve_url

    check_sql_table(spec.url, spec.table, [c["name"] for c in columns])
    url = resolve_url(spec.url, f"{what}'s \"url\"")
    return Reader(SQL_SOURCE_NAME, {URL: url, TABLE: spec.table}, ddl(columns))


def read_sql_table(url: str, table: str, schema: StructType,
                   batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Every row of SQL table ``table`` at ``url`` (one query, one transaction) as Arrow
    batches of at most ``batch_rows`` rows of ``schema`` (columns by :func:`column_map`,
    values by :func:`arrow_column`). An empty table yields nothing.

    Raises:
        ConnectorError: unreachable database, missing table, unmatched columns or a
            value that does not convert.
    """
    import sqlalchemy as sa
    from sqlalchemy.exc import SQLAlchemyError

    arrow = _arrow_schema(schema)
    engine, target, what = _sql_target(url, table)
    try:
        with engine.connect() as conn:
            result = conn.execution_options(stream_results=True, yield_per=batch_rows).execute(
                sa.select(sa.text("*")).select_from(target))
            picks = column_map(list(result.keys()), arrow.names, what)
            for rows in result.partitions(batch_rows):
                columns = list(zip(*rows))
                yield pa.RecordBatch.from_arrays(
                    [arrow_column(columns[i], f.type, what=f"{what}, column '{f.name}'")
                     for i, f in zip(picks, arrow)], schema=arrow)
    except SQLAlchemyError as exc:
        raise ConnectorError(f"cannot read {what}: {str(exc).splitlines()[0]}") from None


class SqlStaticReader(DataSourceReader):
    """One read task that reads the whole SQL table at each micro-batch."""

    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        options = _options(options)
        self.schema = schema
        self.url = options[key(URL)]
        self.table = options[key(TABLE)]
        self.batch_rows = int(options.get(key(BATCH_ROWS), DEFAULT_BATCH_ROWS))

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The table's rows now (see :func:`read_sql_table`)."""
        return read_sql_table(self.url, self.table, self.schema, self.batch_rows)


class SqlStaticDataSource(DataSource):
    """``session.read.format("streamjob_sql").schema(ddl).option("url", ...)
    .option("table", ...)``: a SQL table read in full at every scan (module docstring).

    Raises:
        ConnectorError: no schema given (the declared columns are needed), or a missing
            ``url``/``table`` option.
    """

    @classmethod
    def name(cls) -> str:
        return SQL_SOURCE_NAME

    def schema(self) -> str:
        raise ConnectorError("the streamjob SQL static source needs the table's declared columns")

    def reader(self, schema: StructType) -> SqlStaticReader:
        missing = [k for k in (URL, TABLE) if key(k) not in _options(self.options)]
        if missing:
            raise ConnectorError(f"the streamjob SQL static source needs option(s) {', '.join(missing)}")
        return SqlStaticReader(schema, dict(self.options))


# ------------------------------------------------------------------ file tables
