"""File tables read as static data at every micro-batch (``streamjob_files``; see the package docstring)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Iterator, Sequence
from urllib.parse import unquote, urlparse

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from streamjob.exceptions import ConnectorError
from streamjob.connectors.source_base import Reader
from streamjob.connectors.static_base import (BATCH_ROWS, DEFAULT_BATCH_ROWS, DELIMITER, FILE_SOURCE_NAME, FORMAT,
                                              HEADER, HIVE_NULL, LOCATION, PARTITIONED_BY, PARTITIONS,
                                              STATIC_FILE_FORMATS, _arrow_schema, _cast, _options,
                                              arrow_column, key)


def is_local(location: str) -> bool:
    """True for a location this module can list at each batch: a plain path or a
    ``file:`` URI (other schemes go through Spark's reader)."""
    return urlparse(location).scheme in ("", "file")


def absolute(location: str) -> str:
    """A plain relative path made absolute against the current directory (Python
    workers may run elsewhere); URIs and absolute paths unchanged."""
    if urlparse(location).scheme or Path(location).is_absolute():
        return location
    return str(Path(location).absolute())


def table_reader(spec, columns: Sequence[dict]) -> Reader:
    """How Spark reads file table ``spec`` (a :class:`~streamjob.connectors.spec.FileTableSpec`)
    as static data, with the declared ``columns`` (``[{"name", "type"}]``) in declared order.

    On a local or ``file:`` location: ``streamjob_files``, which lists the files again at
    every micro-batch (the package docstring), in as many read tasks as the session's
    default parallelism. On another URI scheme (hdfs:, s3a: ...): Spark's own reader,
    which lists the files once, at job start; JSON files are read as text lines whose keys
    the Spark room matches as a Kafka stream's, partition columns typed as declared (not
    inferred from the directory names) and every column selected in declared order (Spark
    puts partition columns after the data columns): :func:`spark_table_reader`."""
    from streamjob.columntypes import ddl

    if not is_local(spec.location):
        return spark_table_reader(spec, columns)
    return Reader(FILE_SOURCE_NAME, {
        LOCATION: absolute(spec.location), FORMAT: spec.format,
        DELIMITER: spec.delimiter or "", HEADER: str(spec.header).lower(),
        PARTITIONED_BY: ",".join(spec.partitioned_by)}, ddl(columns), parallelism=PARTITIONS)


def spark_table_reader(spec, columns: Sequence[dict]) -> Reader:
    """How Spark's own reader reads file table ``spec`` (a location that
    :func:`table_files` cannot list, see :func:`table_reader`), with the declared
    ``columns`` in declared order."""
    from streamjob.columntypes import ddl
    from streamjob.connectors.hive_forms import spark_format, text_options

    names = tuple(c["name"] for c in columns)
    parts = {p.lower() for p in spec.partitioned_by}
    if spec.format == "json":
        data = [c for c in columns if c["name"].lower() not in parts]
        return Reader("text", schema=ddl(c for c in columns if c["name"].lower() in parts) or None,
                      path=spec.location, columns=names, json_schema=ddl(data),
                      json_columns=tuple(c["name"] for c in data))
    options = text_options(spec.format, spec.delimiter)
    if spec.format in ("csv", "textfile"):
        options["header"] = str(spec.header).lower()  # Spark's CSV reader's option
    return Reader(spark_format(spec.format), options, ddl(columns), path=spec.location,
                  columns=names if parts else None)


def _root(location: str) -> Path:
    return Path(unquote(urlparse(location).path) if location.startswith("file:") else location)


def _hidden(component: str) -> bool:
    """Spark's rule for files and directories a table read ignores."""
    return component.startswith(".") or (component.startswith("_") and "=" not in component)


def table_files(location: str, partitioned_by: Sequence[str] = ()) -> list[tuple[Path, dict]]:
    """The data files of a local file table now, sorted, each with its partition values
    ``{column: text or None}`` (from ``col=value`` directories, unescaped; a column
    without a directory is absent). Honours the ``_spark_metadata`` manifest
    (:func:`.table.committed_files`); skips hidden files and directories. A missing
    location has no files; a location naming a file is that file."""
    from streamjob.connectors.files.table import committed_files

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
                    batch_rows: int = DEFAULT_BATCH_ROWS,
                    delimiter: str | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of the local file table at ``location`` now, as Arrow batches of
    ``schema`` (declared order): files listed by :func:`table_files`, only those whose
    path hashes to read task ``part`` of ``parts``; data columns from each file, partition
    columns (``partitioned_by``) from its directories. ``header``: skip each CSV file's
    first line. ``delimiter``: the field separator of CSV and TEXTFILE files (any
    length; None: ``,`` resp. ``'\\001'``); TEXTFILE reads ``\\N`` as NULL.

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
        batches = _guarded(_read_file(path, fmt, data, header, batch_rows, what, delimiter),
                           what, fmt)
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
               what: str, delimiter: str | None = None) -> Iterator[pa.RecordBatch]:
    """Batches of ``data`` (the non-partition columns) from one file."""
    if fmt == "parquet":
        yield from _read_parquet(path, data, batch_rows, what)
    elif fmt == "orc":
        yield from _read_orc(path, data, batch_rows, what)
    elif fmt in ("csv", "textfile"):
        from streamjob.connectors.hive_forms import text_options

        opts = text_options(fmt, delimiter)
        null = opts.get("nullValue", "")
        if fmt == "csv" and len(opts["sep"]) == 1:
            yield from _read_csv(path, data, header, batch_rows, what, opts["sep"], null)
        else:
            yield from _read_multi(path, data, header, batch_rows, what, opts["sep"], null)
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


def _read_orc(path: Path, data: pa.Schema, batch_rows: int, what: str):
    """An ORC file's declared columns by name (case-insensitively; missing ones NULL)."""
    import pyarrow.orc as po

    table = po.ORCFile(str(path)).read()
    lower: dict[str, str] = {}
    for n in table.column_names:
        lower.setdefault(n.lower(), n)
    for batch in table.to_batches(max_chunksize=batch_rows):
        yield pa.RecordBatch.from_arrays(
            [_cast(batch.column(lower[f.name.lower()]), f.type, f"{what}, column '{f.name}'")
             if f.name.lower() in lower else pa.nulls(batch.num_rows, f.type) for f in data],
            schema=data)


def _split_quoted(line: str, sep: str) -> list[tuple[str, bool]]:
    """One line of Spark's CSV with a multi-character ``sep``: ``(text, quoted)`` per
    field; a field starting with ``"`` runs to its closing quote (``\\`` escapes)."""
    out, i, n = [], 0, len(line)
    while True:
        if i < n and line[i] == '"':
            j, chars = i + 1, []
            while j < n and line[j] != '"':
                if line[j] == "\\" and j + 1 < n:
                    j += 1
                chars.append(line[j])
                j += 1
            out.append(("".join(chars), True))
            i = j + 1
            nxt = line.find(sep, i)
            if nxt < 0:
                return out
            i = nxt + len(sep)
            continue
        nxt = line.find(sep, i)
        if nxt < 0:
            out.append((line[i:], False))
            return out
        out.append((line[i:nxt], False))
        i = nxt + len(sep)


def _read_multi(path: Path, data: pa.Schema, header: bool, batch_rows: int, what: str,
                sep: str, null: str):
    """TEXTFILE lines, and CSV lines with a multi-character separator (pyarrow's reader
    takes one character, and would read the ``\\`` of an unquoted ``\\N`` as an
    escape): fields by position, an unquoted ``null`` text is NULL."""
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = [ln for ln in text.splitlines()[1 if header else 0:] if ln != ""]
    for start in range(0, len(lines), batch_rows):
        rows = [_split_quoted(ln, sep) for ln in lines[start:start + batch_rows]]
        cols = []
        for i, f in enumerate(data):
            texts = [None if i >= len(r) or (not r[i][1] and r[i][0] == null) else r[i][0]
                     for r in rows]
            cols.append(_cast(pa.array(texts, pa.string()), f.type, f"{what}, column '{f.name}'"))
        yield pa.RecordBatch.from_arrays(cols, schema=data)


def _read_csv(path: Path, data: pa.Schema, header: bool, batch_rows: int, what: str,
              sep: str = ",", null: str = ""):
    """Spark's CSV: columns by position, ``"`` quotes with ``\\`` escapes, an unquoted
    ``null`` field is NULL (CSV: the empty field; TEXTFILE: ``\\N``; a quoted one is
    text)."""
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
        parse_options=pacsv.ParseOptions(delimiter=sep, escape_char="\\"),
        convert_options=pacsv.ConvertOptions(
            column_types={n: pa.string() for n in data.names}, null_values=[null],
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
        self.location = options[key(LOCATION)]
        self.format = options.get(key(FORMAT), "parquet").lower()
        self.header = options.get(key(HEADER), "false").lower() == "true"
        self.delimiter = options.get(key(DELIMITER)) or None
        self.partitioned_by = tuple(c.strip() for c in options.get(key(PARTITIONED_BY), "").split(",")
                                    if c.strip())
        self.parts = max(1, int(options.get(key(PARTITIONS), "1")))
        self.batch_rows = int(options.get(key(BATCH_ROWS), DEFAULT_BATCH_ROWS))
        if self.format not in STATIC_FILE_FORMATS:
            raise ConnectorError(f"static file tables are {', '.join(STATIC_FILE_FORMATS)}, "
                                 f"not '{self.format}'")

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """This task's share of the table's files now."""
        return read_file_table(self.location, self.format, self.schema, header=self.header,
                               partitioned_by=self.partitioned_by, part=partition.value,
                               parts=self.parts, batch_rows=self.batch_rows,
                               delimiter=self.delimiter)


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
        if key(LOCATION) not in _options(self.options):
            raise ConnectorError(f"the streamjob file static source needs option {LOCATION}")
        return FileStaticReader(schema, dict(self.options))
