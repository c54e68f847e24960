"""Static tables of stream-static joins, read again at every micro-batch (DESIGN §7).

Spark plans a stream-static join once and runs the plan at each micro-batch. What the
static side reads then depends on the relation:

- a DataFrame made from rows (the old ``pandas.read_sql_table`` + ``createDataFrame``)
  is a snapshot taken when the job starts;
- Spark's file reader (``session.read.parquet(dir)``) lists the directory (or reads the
  ``_spark_metadata`` manifest) once, when the DataFrame is created: files added later
  are never joined (measured with pyspark 4.3: a Parquet file added to the static
  table's directory between two micro-batches was not seen by the second one, with or
  without a manifest);
- a Python batch data source (``pyspark.sql.datasource``) has its ``partitions()``
  planned once, but its ``read(partition)`` runs in every micro-batch that scans it.

So both sources here do all their work in ``read``:

``streamjob_sql`` (:class:`.sql.static.SqlStaticDataSource`)
    The whole SQL table through SQLAlchemy, one query per micro-batch (one
    transaction: a consistent snapshot per batch). Options: ``url`` (an SQLAlchemy URL),
    ``table`` (``name`` or ``schema.name``: a PostgreSQL schema, an attached SQLite
    database), ``batchRows`` (rows per Arrow batch, default 50,000).

``streamjob_files`` (:class:`.files.static.FileStaticDataSource`)
    The files of a file table on a local or ``file:`` location, listed at every
    micro-batch: the files the ``_spark_metadata`` manifest lists when there is one
    (:func:`.files.table.committed_files`), otherwise every file not hidden (no path
    component under the location starting with ``.`` or ``_``, except ``_col=value``).
    Options: ``location``, ``format`` (parquet, orc, json, csv or textfile), ``delimiter``
    (CSV and TEXTFILE; any length), ``header`` (``true``: the first line of each CSV file
    is skipped), ``partitionedBy`` (comma-separated partition
    columns: their values come from Hive-style ``col=value`` directories, URL-unescaped,
    ``__HIVE_DEFAULT_PARTITION__`` is NULL), ``partitions`` (read tasks; each file goes
    to one task by a hash of its path), ``batchRows``. A location that does not exist
    reads as an empty table; a file deleted between listing and reading is skipped.
    Other URI schemes (hdfs:, s3a: ...) are not read here: :func:`.files.static.table_reader`
    describes Spark's reader for them, which lists them once at job start.

``streamjob_delta`` (:class:`.delta.source.DeltaStaticReader`)
    A Delta table's latest snapshot, loaded (its log read) at every micro-batch.
    Options: ``path``.

``streamjob_iceberg`` (:class:`.iceberg.source.IcebergStaticReader`)
    An Iceberg table's current snapshot, loaded from its catalog at every micro-batch
    and read through pyiceberg's scan. Options: ``catalog``, ``namespace``, ``table``.

All need the declared schema (``.schema(ddl)``) and yield Arrow record batches of it,
TIMESTAMP columns as UTC instants (``to_arrow_schema(schema, timezone="UTC")``). Columns
are matched to the declared ones by name, case-insensitively (SQL tables: by position
when some declared name is missing but the column counts agree; CSV files: by position,
as Spark reads them); values are converted to the declared types (see
:func:`.static_base.arrow_column`); a value that cannot be is a :class:`ConnectorError` naming the
table or file, the column and the value.
"""

from . import worker
from .delta.spec import DeltaTableSpec
from .iceberg.spec import IcebergTableSpec
from .source_base import Reader
from .static_base import FILE_SOURCE_NAME, SQL_SOURCE_NAME, arrow_column, column_map
from .files import static as _files
from .files.static import FileStaticDataSource, absolute, is_local, read_file_table, table_files
from .sql import static as _sql
from .sql.static import SqlStaticDataSource, check_sql_table, read_sql_table

worker.install()  # connector warnings visible in pyspark's Python workers

__all__ = ["FILE_SOURCE_NAME", "SQL_SOURCE_NAME", "FileStaticDataSource", "SqlStaticDataSource",
           "absolute", "arrow_column", "check_sql_table", "column_map", "data_sources", "is_local",
           "read_file_table", "read_sql_table", "table_files", "table_reader"]


def data_sources(specs) -> set[str]:
    """The names of the Python data sources that read static tables of connector
    ``specs``: ``streamjob_sql`` and ``streamjob_files`` when there is any (registered
    together, as before Delta tables were static data), ``streamjob_delta`` for a
    Delta table, ``streamjob_iceberg`` for an Iceberg table."""
    from .delta import options as delta_options
    from .iceberg import options as iceberg_options

    names = {SQL_SOURCE_NAME, FILE_SOURCE_NAME} if specs else set()
    if any(isinstance(s, DeltaTableSpec) for s in specs):
        names.add(delta_options.SOURCE_NAME)
    if any(isinstance(s, IcebergTableSpec) for s in specs):
        names.add(iceberg_options.SOURCE_NAME)
    return names


def table_reader(spec, columns, qualified_name: str, as_of: int | None = None) -> Reader:
    """How Spark reads the static table ``qualified_name`` whose connector spec is
    ``spec`` (a file or SQL table) and whose declared columns are ``columns``
    (``[{"name", "type"}]``): :func:`.files.static.table_reader`,
    :func:`.sql.static.table_reader`, or for a Delta table streamjob's ``streamjob_delta``
    data source read as a batch (its latest snapshot at each micro-batch,
    :class:`.delta.source.DeltaStaticReader`; ``as_of``: that version of it, time travel
    of a preview, :mod:`.lakehouse`); for an Iceberg table ``streamjob_iceberg`` read as
    a batch (its current snapshot at each micro-batch,
    :class:`.iceberg.source.IcebergStaticReader`; ``as_of``: that snapshot id). Called
    at job start.

    Raises:
        ConnectorError: the SQL table cannot be reached, does not exist or its columns
            do not match; a secret reference that cannot be resolved.
    """
    if isinstance(spec, DeltaTableSpec):  # the latest snapshot at each micro-batch
        from ..columntypes import ddl
        from .delta import options as delta_options

        options = {delta_options.PATH: spec.path}
        if as_of is not None:
            options[delta_options.VERSION_AS_OF] = str(as_of)
        return Reader(delta_options.SOURCE_NAME, options, ddl(columns))
    if isinstance(spec, IcebergTableSpec):  # the current snapshot at each micro-batch
        from ..columntypes import ddl
        from .iceberg import options as iopt
        from .iceberg.catalog import resolved_uri

        ref = spec.ref
        options = {iopt.CATALOG: resolved_uri(ref.catalog_uri), iopt.NAMESPACE: ref.namespace,
                   iopt.TABLE: ref.name}
        if as_of is not None:
            options[iopt.SNAPSHOT_ID] = str(as_of)
        return Reader(iopt.SOURCE_NAME, options, ddl(columns))
    if spec.on_files:
        return _files.table_reader(spec, columns)
    return _sql.table_reader(spec, columns, f"table {qualified_name}")
