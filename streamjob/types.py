"""Column types: StreamSQL (Hive) type text -> Spark DDL and Arrow types.

StreamSQL declares columns with Hive type names (``int``, ``bigint``, ``double``,
``string``, ``decimal(10,2)``, ...). Spark accepts the same names in DDL; Arrow needs the
matching physical type so that the Kafka source can hand Spark Arrow record batches
without a per-row conversion (Spark's Arrow type mapping, ``pyspark.sql.pandas.types``).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

import pyarrow as pa

from .exceptions import ValidationError

_SIMPLE: dict[str, pa.DataType] = {
    "tinyint": pa.int8(),
    "byte": pa.int8(),
    "smallint": pa.int16(),
    "short": pa.int16(),
    "int": pa.int32(),
    "integer": pa.int32(),
    "bigint": pa.int64(),
    "long": pa.int64(),
    "float": pa.float32(),
    "real": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "bool": pa.bool_(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}

_DECIMAL = re.compile(r"^(?:decimal|numeric|dec)\((\d+),(\d+)\)$")
_SIZED_STRING = re.compile(r"^(?:varchar|char)\(\d+\)$")


def normalize_type(type_text: str) -> str:
    """Lower-case ``type_text`` and drop spaces: ``DECIMAL(10, 2)`` -> ``decimal(10,2)``."""
    return re.sub(r"\s+", "", type_text).lower()


def arrow_type(type_text: str) -> pa.DataType:
    """The Arrow type Spark expects for a StreamSQL column type.

    Raises:
        ValidationError: the type is not one streamjob can read from a source
            (complex types are accepted in DDL but not yet decoded by the Kafka source).
    """
    t = normalize_type(type_text)
    if t in _SIMPLE:
        return _SIMPLE[t]
    if t == "decimal":
        return pa.decimal128(10, 0)
    m = _DECIMAL.match(t)
    if m:
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    if _SIZED_STRING.match(t):
        return pa.string()
    raise ValidationError(f"unsupported column type '{type_text}' for a stream source")


def spark_type(type_text: str) -> str:
    """The Spark DDL type for a StreamSQL type (``varchar(n)`` reads as ``string``)."""
    t = normalize_type(type_text)
    if _SIZED_STRING.match(t):
        return "string"
    return t


def ddl(columns: Iterable[Mapping[str, str]]) -> str:
    """A Spark DDL schema string from ``[{"name", "type"}, ...]``: ```a` int, `b` string``."""
    return ", ".join(f"`{c['name']}` {spark_type(c['type'])}" for c in columns)


def arrow_schema(columns: Iterable[Mapping[str, str]]) -> pa.Schema:
    """An Arrow schema from ``[{"name", "type"}, ...]``; every field nullable."""
    return pa.schema([pa.field(c["name"], arrow_type(c["type"])) for c in columns])
