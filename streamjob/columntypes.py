"""Column types: StreamSQL (Hive) type text -> Spark DDL and Arrow types.

StreamSQL declares columns with Hive type names (``int``, ``bigint``, ``double``,
``string``, ``decimal(10,2)``, ...). Spark accepts the same names in DDL; Arrow needs the
matching physical type so that the Kafka source can hand Spark Arrow record batches
without a per-row conversion (Spark's Arrow type mapping, ``pyspark.sql.pandas.types``).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from .exceptions import ValidationError
from .nearest import nearest

#: Simple type names -> the pyarrow factory and its arguments (pyarrow is imported only
#: by :func:`arrow_type`: checking statements does not need it, issue 19).
_SIMPLE: dict[str, tuple] = {
    "tinyint": ("int8",),
    "byte": ("int8",),
    "smallint": ("int16",),
    "short": ("int16",),
    "int": ("int32",),
    "integer": ("int32",),
    "bigint": ("int64",),
    "long": ("int64",),
    "float": ("float32",),
    "real": ("float32",),
    "double": ("float64",),
    "boolean": ("bool_",),
    "bool": ("bool_",),
    "string": ("string",),
    "binary": ("binary",),
    "date": ("date32",),
    "timestamp": ("timestamp", "us", "UTC"),
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
    import pyarrow as pa

    t = normalize_type(type_text)
    if t in _SIMPLE:
        factory, *args = _SIMPLE[t]
        return getattr(pa, factory)(*args)
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
    """A Spark DDL schema string from ``[{"name", "type"}, ...]``: ```a` int, `b` string``.

    A backquote inside a name is doubled (Spark's quoting), so a declared name can never
    end its quotes and add to the schema text that Spark's DDL parser reads."""
    return ", ".join(f"`{c['name'].replace('`', '``')}` {spark_type(c['type'])}" for c in columns)


def arrow_schema(columns: Iterable[Mapping[str, str]]) -> pa.Schema:
    """An Arrow schema from ``[{"name", "type"}, ...]``; every field nullable."""
    import pyarrow as pa

    return pa.schema([pa.field(c["name"], arrow_type(c["type"])) for c in columns])


_COMPLEX = re.compile(r"^(array|map|struct)<(.*)>$")
KNOWN_TYPES = tuple(_SIMPLE) + ("timestamp_ntz", "decimal(p,s)", "varchar(n)", "char(n)",
                                "array<t>", "map<k,v>", "struct<name:t,...>")


def table_arrow_type(type_text: str) -> pa.DataType:
    """The Arrow type of a declared column of a table written as Arrow (Delta): the
    simple types as :func:`arrow_type`, ``timestamp_ntz`` as a timestamp without time
    zone, and ``array<t>``, ``map<k,v>``, ``struct<name:t,...>`` (nested) as Arrow's
    list, map and struct, as Spark's own Arrow conversion maps them.

    Raises:
        ValidationError: a type :func:`check_type` does not know.
    """
    import pyarrow as pa

    t = check_type(type_text)
    if t == "timestamp_ntz":
        return pa.timestamp("us")
    m = _COMPLEX.match(t)
    if m is None:
        return arrow_type(t)
    kind, inner = m.groups()
    parts = _split_top(inner)
    if kind == "array":
        return pa.list_(table_arrow_type(parts[0]))
    if kind == "map":
        return pa.map_(table_arrow_type(parts[0]), table_arrow_type(parts[1]))
    return pa.struct([pa.field(p.split(":", 1)[0], table_arrow_type(p.split(":", 1)[1]))
                      for p in parts])


def check_type(type_text: str) -> str:
    """The normalized type text if it is a Hive/Spark column type streamjob knows
    (simple types, ``decimal(p,s)``, ``varchar(n)``, ``array<t>``, ``map<k,v>``,
    ``struct<name:t,...>``, nested).

    Raises:
        ValidationError: an unknown type; suggests the nearest known name.
    """

    t = normalize_type(type_text)
    if t in _SIMPLE or t in ("timestamp_ntz", "decimal") or _DECIMAL.match(t) or _SIZED_STRING.match(t):
        return t
    m = _COMPLEX.match(t)
    if m:
        kind, inner = m.groups()
        parts = _split_top(inner)
        if kind == "array" and len(parts) == 1:
            check_type(parts[0])
            return t
        if kind == "map" and len(parts) == 2:
            check_type(parts[0])
            check_type(parts[1])
            return t
        if kind == "struct" and parts and all(":" in p for p in parts):
            for p in parts:
                check_type(p.split(":", 1)[1])
            return t
    base = re.split(r"[(<]", t, 1)[0]
    near = nearest(base, [*_SIMPLE, "decimal", "varchar", "array", "map", "struct", "timestamp_ntz"])
    hint = f"; did you mean '{near}'?" if near else ""
    raise ValidationError(f"unknown column type '{type_text}'{hint}", text=type_text)


def _split_top(text: str) -> list[str]:
    """Split on commas outside ``<>`` and ``()``."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p]


def struct_fields(type_text: str) -> list[tuple[str, str]]:
    """The ``(name, type)`` fields of ``struct<name:t,...>`` (a table function's rows,
    docs/functions.md "Table functions"); names lower-cased, types as written; empty
    for any other type."""
    m = _COMPLEX.match(normalize_type(type_text))
    if m is None or m.group(1) != "struct":
        return []
    fields = []
    for part in _split_top(m.group(2)):
        name, _, typ = part.partition(":")
        fields.append((name.strip("`").lower(), typ))
    return fields


def ddl_struct(text: str) -> str | None:
    """A schema written as Spark DDL (``'word string, n int'``, a PySpark UDTF's
    ``returnType``) or as ``struct<...>``, as ``struct<word:string,n:int>`` (names
    lower-cased, types normalized, not checked); None when it is not of that form."""
    text = text.strip()
    if normalize_type(text).startswith("struct<"):
        return normalize_type(text)
    fields = []
    for part in _split_top(text):
        name, _, typ = part.strip().partition(" ")
        if not name or not typ.strip():
            return None
        fields.append(f"{name.strip('`').lower()}:{normalize_type(typ)}")
    return f"struct<{','.join(fields)}>" if fields else None
