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

``streamjob_sql`` (:class:`SqlStaticDataSource`)
    The whole SQL table through SQLAlchemy, one query per micro-batch (one
    transaction: a consistent snapshot per batch). Options: ``url`` (an SQLAlchemy URL),
    ``table`` (``name`` or ``schema.name``: a PostgreSQL schema, an attached SQLite
    database), ``batchRows`` (rows per Arrow batch, default 50,000).

``streamjob_files`` (:class:`FileStaticDataSource`)
    The files of a file table on a local or ``file:`` location, listed at every
    micro-batch: the files the ``_spark_metadata`` manifest lists when there is one
    (:func:`.file_table.committed_files`), otherwise every file not hidden (no path
    component under the location starting with ``.`` or ``_``, except ``_col=value``).
    Options: ``location``, ``format`` (parquet, json or csv), ``header`` (``true``: the
    first line of each CSV file is skipped), ``partitionedBy`` (comma-separated partition
    columns: their values come from Hive-style ``col=value`` directories, URL-unescaped,
    ``__HIVE_DEFAULT_PARTITION__`` is NULL), ``partitions`` (read tasks; each file goes
    to one task by a hash of its path), ``batchRows``. A location that does not exist
    reads as an empty table; a file deleted between listing and reading is skipped.
    Other URI schemes (hdfs:, s3a: ...) are not read here: :func:`is_local` tells the
    planner to use Spark's reader, which lists them once at job start.

Both need the declared schema (``.schema(ddl)``) and yield Arrow record batches of it,
TIMESTAMP columns as UTC instants (``to_arrow_schema(schema, timezone="UTC")``). Columns
are matched to the declared ones by name, case-insensitively (SQL tables: by position
when some declared name is missing but the column counts agree; CSV files: by position,
as Spark reads them); values are converted to the declared types (see
:func:`arrow_column`); a value that cannot be is a :class:`ConnectorError` naming the
table or file, the column and the value.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
import zlib
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..exceptions import ConnectorError
from . import worker

worker.install()  # connector warnings visible in pyspark's Python workers

SQL_SOURCE_NAME = "streamjob_sql"
FILE_SOURCE_NAME = "streamjob_files"
DEFAULT_BATCH_ROWS = 50_000
"""Rows per Arrow batch handed to Spark (bounds a worker's memory)."""
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""The directory value of a NULL partition column (Hive, Spark)."""
STATIC_FILE_FORMATS = ("parquet", "json", "csv")

_UTC = _dt.timezone.utc


def _options(options) -> dict[str, str]:
    return {str(k).lower(): v for k, v in dict(options).items()}  # Spark lower-cases keys


def _arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")  # TIMESTAMP: instants in UTC


# ------------------------------------------------------------------ values


def arrow_column(values: Sequence[Any], typ: pa.DataType, *, what: str,
                 binary_text: str = "utf8") -> pa.Array:
    """An Arrow array of ``typ`` from Python values (a SQL result column, JSON values).

    Values Arrow takes as they are stay so; others are converted as Spark's casts would:
    integral floats/decimals/strings to integers, numbers and strings to floats, numbers
    and strings to decimals (rounded half up to the scale), ``true/false/1/0`` to
    booleans, ISO-8601 text to timestamps and dates (a timestamp without an offset, or a
    naive ``datetime``, is UTC; a number is seconds since the epoch), anything to strings
    (JSON text for lists and dicts), JSON text to arrays/maps/structs (the SQL sink stores
    complex values so), text to binary as UTF-8 or, with ``binary_text="base64"`` (JSON
    files), base64. ``None`` is NULL.

    Raises:
        ConnectorError: a value cannot be converted; names ``what`` (the table/file and
            column), the value and the type.
    """
    values = list(values)
    if binary_text == "utf8" or not (pa.types.is_binary(typ) or pa.types.is_large_binary(typ)):
        try:  # Arrow would take base64 text for binary as its UTF-8 bytes
            return pa.array(values, type=typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError,
                OverflowError, ValueError, TypeError):
            pass
    convert = _converter(typ, binary_text)
    out = []
    for v in values:
        try:
            out.append(convert(v))
        except (ValueError, TypeError, ArithmeticError, AttributeError) as exc:
            raise ConnectorError(f"{what}: cannot read {v!r} as {typ} ({exc})") from None
    try:
        return pa.array(out, type=typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise ConnectorError(f"{what}: values do not fit {typ} ({exc})") from None


def _converter(typ: pa.DataType, binary_text: str) -> Callable[[Any], Any]:
    """``value -> value Arrow takes for typ`` (None stays None)."""

    def nullable(fn):
        return lambda v: None if v is None else fn(v)

    if pa.types.is_boolean(typ):
        def to_bool(v):
            if isinstance(v, bool):
                return v
            if isinstance(v, (int, float, decimal.Decimal)) and v in (0, 1):
                return bool(v)
            text = str(v).strip().lower()
            if text in ("true", "t", "1", "yes"):
                return True
            if text in ("false", "f", "0", "no"):
                return False
            raise ValueError("not a boolean")
        return nullable(to_bool)
    if pa.types.is_integer(typ):
        def to_int(v):
            if isinstance(v, bool):
                return int(v)
            if isinstance(v, (float, decimal.Decimal)):
                if v != int(v):
                    raise ValueError("not an integer")
                return int(v)
            return int(str(v).strip())
        return nullable(to_int)
    if pa.types.is_floating(typ):
        return nullable(lambda v: float(v) if not isinstance(v, str) else float(v.strip()))
    if pa.types.is_decimal(typ):
        quantum = decimal.Decimal(1).scaleb(-typ.scale)

        def to_decimal(v):
            d = decimal.Decimal(str(v).strip()) if not isinstance(v, decimal.Decimal) else v
            d = d.quantize(quantum, rounding=decimal.ROUND_HALF_UP)
            if len(d.as_tuple().digits) > typ.precision:
                raise ValueError(f"more than {typ.precision} digits")
            return d
        return nullable(to_decimal)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        def to_text(v):
            if isinstance(v, str):
                return v
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, (bytes, bytearray, memoryview)):
                return bytes(v).decode("utf-8")
            if isinstance(v, (dict, list)):
                return json.dumps(v)
            if isinstance(v, _dt.datetime):
                return v.isoformat(sep=" ")
            return str(v)
        return nullable(to_text)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        def to_bytes(v):
            if isinstance(v, (bytes, bytearray, memoryview)):
                return bytes(v)
            if binary_text == "base64":
                return base64.b64decode(str(v), validate=True)
            return str(v).encode("utf-8")
        return nullable(to_bytes)
    if pa.types.is_timestamp(typ):
        def to_timestamp(v):
            if isinstance(v, _dt.datetime):
                ts = v
            elif isinstance(v, _dt.date):
                ts = _dt.datetime(v.year, v.month, v.day)
            elif isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
                ts = _dt.datetime.fromtimestamp(float(v), tz=_UTC)
            else:
                ts = _dt.datetime.fromisoformat(str(v).strip())
            if typ.tz is None and ts.tzinfo is not None:  # TIMESTAMP_NTZ: the UTC wall clock
                return ts.astimezone(_UTC).replace(tzinfo=None)
            return ts if ts.tzinfo else ts.replace(tzinfo=_UTC)
        return nullable(to_timestamp)
    if pa.types.is_date(typ):
        def to_date(v):
            if isinstance(v, _dt.datetime):
                return v.date()
            if isinstance(v, _dt.date):
                return v
            text = str(v).strip()
            try:
                return _dt.date.fromisoformat(text)
            except ValueError:
                return _dt.datetime.fromisoformat(text).date()
        return nullable(to_date)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        item = _converter(typ.value_type, binary_text)
        return nullable(lambda v: [item(x) for x in _nested(v)])
    if pa.types.is_map(typ):
        key, value = _converter(typ.key_type, binary_text), _converter(typ.item_type, binary_text)

        def to_map(v):
            v = _nested(v)
            pairs = v.items() if isinstance(v, dict) else v
            return [(key(k), value(x)) for k, x in pairs]
        return nullable(to_map)
    if pa.types.is_struct(typ):
        fields = [(f.name, _converter(f.type, binary_text)) for f in typ]

        def to_struct(v):
            v = _nested(v)
            if isinstance(v, dict):
                lower = {str(k).lower(): x for k, x in v.items()}
                return {n: conv(v[n] if n in v else lower.get(n.lower())) for n, conv in fields}
            return {n: conv(x) for (n, conv), x in zip(fields, v)}
        return nullable(to_struct)
    return lambda v: v


def _nested(v):
    """A complex value stored as JSON text (the SQL sink's way) is parsed first."""
    return json.loads(v) if isinstance(v, (str, bytes, bytearray)) else v


def _cast(arr: pa.Array | pa.ChunkedArray, typ: pa.DataType, what: str) -> pa.Array:
    """``arr`` as ``typ``: Arrow's safe cast, else value by value (:func:`arrow_column`)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type == typ:
        return arr
    try:
        return pc.cast(arr, typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        pass
    if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(typ):
        return pc.cast(arr, typ, safe=False)  # nanoseconds to Spark's microseconds
    return arrow_column(arr.to_pylist(), typ, what=what)


def column_map(found: Sequence[str], declared: Sequence[str], what: str) -> list[int]:
    """For each declared column, the index of its column among ``found`` (a table's
    columns in their order): by name, case-insensitively, when every declared name is
    there; else by position when the counts agree.

    Raises:
        ConnectorError: neither; names the missing columns and those found.
    """
    lower: dict[str, int] = {}
    for i, name in enumerate(found):
        lower.setdefault(str(name).lower(), i)
    if all(d.lower() in lower for d in declared):
        return [lower[d.lower()] for d in declared]
    if len(found) == len(declared):
        return list(range(len(declared)))
    missing = [d for d in declared if d.lower() not in lower]
    raise ConnectorError(
        f"{what} has no column {', '.join(missing)} (it has {', '.join(map(str, found))}); "
        f"columns are matched to the declared ones by name, or by position when there are "
        f"as many")


# ------------------------------------------------------------------ SQL tables


def _sql_target(url: str, table: str):
    """``(engine, selectable, description)`` of SQL table ``table`` (``schema.name``
    allowed) at ``url``."""
    import sqlalchemy as sa

    from .sql_sink import _mask, engine_for

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
        self.url = options["url"]
        self.table = options["table"]
        self.batch_rows = int(options.get("batchrows", DEFAULT_BATCH_ROWS))

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
        missing = [k for k in ("url", "table") if k not in _options(self.options)]
        if missing:
            raise ConnectorError(f"the streamjob SQL static source needs option(s) {', '.join(missing)}")
        return SqlStaticReader(schema, dict(self.options))


# ------------------------------------------------------------------ file tables


def is_local(location: str) -> bool:
    """True for a location this module can list at each batch: a plain path or a
    ``file:`` URI (other schemes go through Spark's reader)."""
    return urlparse(location).scheme in ("", "file")


def _root(location: str) -> Path:
    return Path(unquote(urlparse(location).path) if location.startswith("file:") else location)


def _hidden(component: str) -> bool:
    """Spark's rule for files and directories a table read ignores."""
    return component.startswith(".") or (component.startswith("_") and "=" not in component)


def table_files(location: str, partitioned_by: Sequence[str] = ()) -> list[tuple[Path, dict]]:
    """The data files of a local file table now, sorted, each with its partition values
    ``{column: text or None}`` (from ``col=value`` directories, unescaped; a column
    without a directory is absent). Honours the ``_spark_metadata`` manifest
    (:func:`.file_table.committed_files`); skips hidden files and directories. A missing
    location has no files; a location naming a file is that file."""
    from .file_table import committed_files

    root = _root(location)
    if root.is_file():
        return [(root, {})]
    if not root.is_dir():
        return []
    wanted = {c.lower(): c for c in partitioned_by}
    out = []
    for path in committed_files(str(root)):
        try:
            parts = path.relative_to(root).parts
        except ValueError:  # a manifest entry outside the location
            out.append((path, {}))
            continue
        if any(_hidden(p) for p in parts):
            continue
        values: dict[str, str | None] = {}
        for part in parts[:-1]:
            key, sep, text = part.partition("=")
            if sep and key.lower() in wanted:
                values[wanted[key.lower()]] = None if text == HIVE_NULL else unquote(text)
        out.append((path, values))
    return out


def _share(path: Path, part: int, parts: int) -> bool:
    return parts <= 1 or zlib.crc32(str(path).encode()) % parts == part


def read_file_table(location: str, fmt: str, schema: StructType, *, header: bool = False,
                    partitioned_by: Sequence[str] = (), part: int = 0, parts: int = 1,
                    batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The rows of the local file table at ``location`` now, as Arrow batches of
    ``schema`` (declared order): files listed by :func:`table_files`, only those whose
    path hashes to read task ``part`` of ``parts``; data columns from each file, partition
    columns (``partitioned_by``) from its directories. ``header``: skip each CSV file's
    first line.

    Raises:
        ConnectorError: an unknown format, a file that cannot be read, or a value that
            does not convert to its column's type (names the file and column).
    """
    if fmt not in STATIC_FILE_FORMATS:
        raise ConnectorError(f"static file tables are {', '.join(STATIC_FILE_FORMATS)}, not '{fmt}'")
    arrow = _arrow_schema(schema)
    partition_cols = {c.lower() for c in partitioned_by}
    data = pa.schema([f for f in arrow if f.name.lower() not in partition_cols])
    for path, values in table_files(location, partitioned_by):
        if not _share(path, part, parts):
            continue
        what = f"file {path}"
        constants = {}
        for f in arrow:
            if f.name.lower() in partition_cols:
                text = next((v for k, v in values.items() if k.lower() == f.name.lower()), None)
                constants[f.name] = arrow_column([text], f.type, what=f"{what}, partition "
                                                 f"column '{f.name}'")[0]
        batches = _guarded(_read_file(path, fmt, data, header, batch_rows, what), what, fmt)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            yield pa.RecordBatch.from_arrays(
                [pa.repeat(constants[f.name], batch.num_rows) if f.name in constants
                 else batch.column(f.name) for f in arrow], schema=arrow)


def _guarded(batches: Iterator[pa.RecordBatch], what: str, fmt: str) -> Iterator[pa.RecordBatch]:
    """``batches`` with read errors as ConnectorError naming the file; a file deleted
    since it was listed (a table being rewritten) ends quietly."""
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ConnectorError(f"cannot read {what}: {exc}") from None
        except pa.ArrowException as exc:
            raise ConnectorError(f"cannot read {what} as {fmt}: {exc}") from None
        yield batch


def _read_file(path: Path, fmt: str, data: pa.Schema, header: bool, batch_rows: int,
               what: str) -> Iterator[pa.RecordBatch]:
    """Batches of ``data`` (the non-partition columns) from one file."""
    if fmt == "parquet":
        yield from _read_parquet(path, data, batch_rows, what)
    elif fmt == "csv":
        yield from _read_csv(path, data, header, batch_rows, what)
    else:
        yield from _read_json(path, data, batch_rows, what)


def _read_parquet(path: Path, data: pa.Schema, batch_rows: int, what: str):
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(str(path), coerce_int96_timestamp_unit="us")
    lower: dict[str, str] = {}
    for n in pf.schema_arrow.names:
        lower.setdefault(n.lower(), n)
    present = [lower[f.name.lower()] for f in data if f.name.lower() in lower]
    if not present:  # only partition columns, or none of the declared ones in the file
        rows = pf.metadata.num_rows
        for start in range(0, rows, batch_rows):
            n = min(batch_rows, rows - start)
            yield pa.RecordBatch.from_arrays([pa.nulls(n, f.type) for f in data], schema=data)
        return
    for batch in pf.iter_batches(batch_size=batch_rows, columns=present):
        yield pa.RecordBatch.from_arrays(
            [_cast(batch.column(lower[f.name.lower()]), f.type, f"{what}, column '{f.name}'")
             if f.name.lower() in lower else pa.nulls(batch.num_rows, f.type) for f in data],
            schema=data)


def _read_csv(path: Path, data: pa.Schema, header: bool, batch_rows: int, what: str):
    """Spark's CSV: columns by position, ``"`` quotes with ``\\`` escapes, an unquoted
    empty field is NULL (a quoted one is the empty string)."""
    import pyarrow.csv as pacsv

    for f in data:
        if pa.types.is_nested(f.type):
            raise ConnectorError(f"{what}: CSV files cannot hold column '{f.name}' of type {f.type}")
    if path.stat().st_size == 0:
        return
    reader = pacsv.open_csv(
        str(path),
        read_options=pacsv.ReadOptions(column_names=data.names, skip_rows=1 if header else 0,
                                       block_size=1 << 22),
        parse_options=pacsv.ParseOptions(escape_char="\\"),
        convert_options=pacsv.ConvertOptions(
            column_types={n: pa.string() for n in data.names}, null_values=[""],
            strings_can_be_null=True, quoted_strings_can_be_null=False))
    for batch in reader:
        for start in range(0, batch.num_rows, batch_rows):
            chunk = batch.slice(start, batch_rows)
            yield pa.RecordBatch.from_arrays(
                [_cast(chunk.column(i), f.type, f"{what}, column '{f.name}'")
                 for i, f in enumerate(data)], schema=data)


def _read_json(path: Path, data: pa.Schema, batch_rows: int, what: str):
    """JSON lines (Spark's default): one object per line, fields by name (exact, else
    case-insensitive), missing fields NULL, extra fields ignored, blank lines skipped;
    binary values are base64 text as Spark writes them."""
    with pa.input_stream(str(path), compression="detect") as stream:
        text = stream.read()
    names = data.names
    rows: list[list] = []

    def flush():
        columns = list(zip(*rows))
        return pa.RecordBatch.from_arrays(
            [arrow_column(list(columns[i]), f.type, what=f"{what}, column '{f.name}'",
                          binary_text="base64") for i, f in enumerate(data)], schema=data)

    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise ConnectorError(f"{what} line {lineno}: not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise ConnectorError(f"{what} line {lineno}: not a JSON object")
        row, lower = [], None
        for n in names:
            if n in obj:
                row.append(obj[n])
                continue
            if lower is None:
                lower = {str(k).lower(): v for k, v in obj.items()}
            row.append(lower.get(n.lower()))
        rows.append(row)
        if len(rows) >= batch_rows:
            yield flush()
            rows = []
    if rows:
        yield flush()


class FileStaticReader(DataSourceReader):
    """``partitions`` read tasks (planned once); each lists the table's files again at
    every micro-batch and reads its share (:func:`read_file_table`)."""

    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        options = _options(options)
        self.schema = schema
        self.location = options["location"]
        self.format = options.get("format", "parquet").lower()
        self.header = options.get("header", "false").lower() == "true"
        self.partitioned_by = tuple(c.strip() for c in options.get("partitionedby", "").split(",")
                                    if c.strip())
        self.parts = max(1, int(options.get("partitions", "1")))
        self.batch_rows = int(options.get("batchrows", DEFAULT_BATCH_ROWS))
        if self.format not in STATIC_FILE_FORMATS:
            raise ConnectorError(f"static file tables are {', '.join(STATIC_FILE_FORMATS)}, "
                                 f"not '{self.format}'")

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """This task's share of the table's files now."""
        return read_file_table(self.location, self.format, self.schema, header=self.header,
                               partitioned_by=self.partitioned_by, part=partition.value,
                               parts=self.parts, batch_rows=self.batch_rows)


class FileStaticDataSource(DataSource):
    """``session.read.format("streamjob_files").schema(ddl).option("location", ...)
    .option("format", ...)``: a local file table listed and read at every scan (module
    docstring).

    Raises:
        ConnectorError: no schema given, a missing ``location`` option or an unknown
            ``format``.
    """

    @classmethod
    def name(cls) -> str:
        return FILE_SOURCE_NAME

    def schema(self) -> str:
        raise ConnectorError("the streamjob file static source needs the table's declared columns")

    def reader(self, schema: StructType) -> FileStaticReader:
        if "location" not in _options(self.options):
            raise ConnectorError("the streamjob file static source needs option location")
        return FileStaticReader(schema, dict(self.options))
