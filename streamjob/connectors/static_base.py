"""Values of static tables: declared types, Arrow conversion, column matching (shared
by :mod:`.sql` and :mod:`.files`)."""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructType

from ..exceptions import ConnectorError


SQL_SOURCE_NAME = "streamjob_sql"
FILE_SOURCE_NAME = "streamjob_files"
# The options of both sources, named once: the readers' descriptions are written with
# them (``table_reader`` of :mod:`.files.static`, :mod:`.sql.static`) and the data
# sources read them back (Spark lower-cases option keys: :func:`_options`, :func:`key`).
URL, TABLE = "url", "table"  # streamjob_sql
LOCATION, FORMAT, DELIMITER, HEADER = "location", "format", "delimiter", "header"
PARTITIONED_BY, PARTITIONS = "partitionedBy", "partitions"  # streamjob_files
BATCH_ROWS = "batchRows"  # both
DEFAULT_BATCH_ROWS = 50_000
"""Rows per Arrow batch handed to Spark (bounds a worker's memory)."""
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""The directory value of a NULL partition column (Hive, Spark)."""
STATIC_FILE_FORMATS = ("parquet", "orc", "json", "csv", "textfile")

_UTC = _dt.timezone.utc


def key(name: str) -> str:
    """The key of option ``name`` in the options Spark hands a reader (lower-cased)."""
    return name.lower()


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
    numbers and numeric strings to integers (fractions truncated), numbers and strings to floats, numbers
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
                return int(v)  # truncated, as Spark's CAST (and pa.array) do
            text = str(v).strip()
            try:
                return int(text)
            except ValueError:
                return int(decimal.Decimal(text))
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
