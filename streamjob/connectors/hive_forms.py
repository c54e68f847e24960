"""Hive's and Slipstream's storage clauses as streamjob formats (issue 18).

One place answers what ``ROW FORMAT SERDE``, ``STORED AS`` and ``STORED BY`` mean:

- :func:`row_format_record` turns a parsed ROW FORMAT clause (DELIMITED or SERDE) into
  the dict the catalog keeps (``fields_terminated_by``, ``lines_terminated_by``,
  ``serde``, ``format``). Supported SerDe classes: Hive's ``MultiDelimitSerDe``
  (multi-character field delimiters, ``"field.delim"`` or Slipstream's
  ``"input.delimited"``) and ``LazySimpleSerDe`` (``"field.delim"``), both the
  delimited format; the JSON SerDes of HCatalog, Hive and OpenX, the JSON format.
- :func:`check_storage` refuses HBase, Hyperdrive and Holodesk tables (``STORED AS
  HYPERDRIVE|HOLODESK``, ``STORED BY '...'``), naming the replacement.
- :func:`text_options` gives Spark's CSV options for CSV and TEXTFILE file tables, for
  the file sink and Spark's reader alike.

TEXTFILE is Hive's text table: fields separated by the ROW FORMAT delimiter (Hive's
default ``'\\001'``), ``\\N`` for NULL, an empty field an empty string; written by
Spark's CSV writer, which quotes (``"..."``, ``\\`` escapes) a value holding the
delimiter, so that nothing written is read back changed.
"""

from __future__ import annotations

from typing import Mapping

from ..exceptions import ValidationError

MULTI_DELIMIT_SERDES = (
    "org.apache.hadoop.hive.contrib.serde2.MultiDelimitSerDe",  # Hive 0.14 .. 3 (contrib)
    "org.apache.hadoop.hive.serde2.MultiDelimitSerDe",  # Hive 4 (HIVE-20619)
)
LAZY_SIMPLE_SERDES = ("org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",)
JSON_SERDES = (
    "org.apache.hive.hcatalog.data.JsonSerDe",
    "org.openx.data.jsonserde.JsonSerDe",
    "org.apache.hadoop.hive.serde2.JsonSerDe",
)
SUPPORTED_SERDES = MULTI_DELIMIT_SERDES + LAZY_SIMPLE_SERDES + JSON_SERDES

HIVE_TEXT_DELIMITER = "\x01"
"""Hive's default field delimiter of a text table (``'\\001'``, Ctrl-A)."""

_DELIMITER_KEYS = ("field.delim", "input.delimited")

REPLACEMENT = ("a SQL table with a primary key gives the same upsert: CREATE TABLE t (...) "
               "TBLPROPERTIES (\"connector\"=\"sql\", \"url\"=..., \"primary.key\"=\"...\")")

_REFUSED_STORED_AS = {"hyperdrive": "Hyperdrive", "holodesk": "Holodesk", "hbase": "HBase"}


def row_format_record(fields: str | None, lines: str | None, serde: str | None,
                      serde_properties: Mapping[str, str]) -> dict:
    """The catalog's dict of a ROW FORMAT clause: ``{"delimited": bool,
    "fields_terminated_by": str | None, "lines_terminated_by": str | None, "serde": str
    | None, "format": "delimited" | "json"}``.

    Raises:
        ValidationError: an unknown SerDe class (names it and the supported ones), an
            empty delimiter, or ``"field.delim"`` and ``"input.delimited"`` that differ.
            ``key`` is set to the SerDe property at fault, ``"serde"`` for the class.
    """
    if serde is None:
        return {"delimited": True, "fields_terminated_by": fields,
                "lines_terminated_by": lines, "format": "delimited"}
    known = {c.lower(): c for c in SUPPORTED_SERDES}
    cls = known.get(serde.strip().lower())
    if cls is None:
        err = ValidationError(
            f"SerDe '{serde}' is not supported; supported: "
            f"{', '.join(SUPPORTED_SERDES)} (or ROW FORMAT DELIMITED FIELDS TERMINATED BY ...)",
            text=serde, key="serde")
        raise err
    if cls in JSON_SERDES:
        return {"delimited": False, "fields_terminated_by": None, "lines_terminated_by": None,
                "serde": cls, "format": "json"}
    given = {k: v for k, v in serde_properties.items() if k in _DELIMITER_KEYS}
    if len(set(given.values())) > 1:
        err = ValidationError("\"field.delim\" and \"input.delimited\" name different "
                              "delimiters; give one of them", key="input.delimited")
        raise err
    for key, value in given.items():
        if value == "":
            err = ValidationError(f"\"{key}\": a delimiter cannot be empty", key=key,
                                  bad_value=True)
            raise err
    delimiter = next(iter(given.values()), None)
    if cls in MULTI_DELIMIT_SERDES and delimiter is None:
        err = ValidationError(f"{cls.rsplit('.', 1)[1]} needs the field delimiter: WITH "
                              "SERDEPROPERTIES ('input.delimited'='|+|') or ('field.delim'=...)",
                              key="serde")
        raise err
    return {"delimited": True, "fields_terminated_by": delimiter, "lines_terminated_by": None,
            "serde": cls, "format": "delimited"}


def row_format_default(row_format: Mapping | None) -> str | None:
    """The record format a ROW FORMAT clause implies: ``json`` for a JSON SerDe,
    ``delimited`` for DELIMITED and the delimited SerDes, None without the clause."""
    if not row_format:
        return None
    return row_format.get("format") or "delimited"


def delimiter_of(row_format: Mapping | None) -> str | None:
    """The field delimiter a ROW FORMAT clause gives (one or more characters), or None."""
    return (row_format or {}).get("fields_terminated_by") or None


def check_storage(name: str, stored_as: str | None, stored_by: str | None) -> None:
    """Refuse the storage of Transwarp's HBase-backed tables, naming the replacement.

    Raises:
        ValidationError: ``STORED AS HYPERDRIVE|HOLODESK|HBASE`` or any ``STORED BY``
            handler (HBase, Hyperdrive, Elasticsearch, ...).
    """
    if stored_by is not None:
        low = stored_by.lower()
        kind = ("Hyperdrive" if "hyperdrive" in low else "HBase" if "hbase" in low
                else "Holodesk" if "holodesk" in low else None)
        what = f"a {kind} table" if kind else f"a table of storage handler '{stored_by}'"
        raise ValidationError(f"table '{name}': STORED BY '{stored_by}' ({what}) cannot be "
                              f"written by a Spark job; {REPLACEMENT}", text="STORED")
    kind = _REFUSED_STORED_AS.get((stored_as or "").lower())
    if kind is not None:
        raise ValidationError(f"table '{name}': STORED AS {stored_as.upper()} (a {kind} table) "
                              f"cannot be written by a Spark job; {REPLACEMENT}", text="STORED")


def file_format(stored_as: str | None, properties: Mapping[str, str],
                row_format: Mapping | None) -> str:
    """A file table's format: ``STORED AS`` (``TEXTFILE`` with a JSON SerDe is JSON, as
    in Hive), else the ``"format"`` property, else JSON for a JSON SerDe, else Parquet.
    (CREATE TABLE records ``textfile`` for a file table with a delimited ROW FORMAT and
    no STORED AS, Hive's text table; see the executor.)"""
    fmt = (stored_as or properties.get("format") or "").strip().lower()
    if row_format_default(row_format) == "json" and fmt in ("", "textfile"):
        return "json"
    return fmt or "parquet"


def text_options(fmt: str, delimiter: str | None) -> dict[str, str]:
    """Spark CSV options of a CSV or TEXTFILE file table (writer and reader): the field
    separator (``delimiter``, any length; CSV's default ``,``, TEXTFILE's ``'\\001'``);
    TEXTFILE adds Hive's ``\\N`` for NULL, empty strings written bare and timestamps as
    ``yyyy-MM-dd HH:mm:ss.SSSSSS``. Empty for other formats."""
    if fmt == "csv":
        return {"sep": delimiter or ",", "header": "false"}
    if fmt == "textfile":
        return {"sep": delimiter or HIVE_TEXT_DELIMITER, "header": "false", "nullValue": "\\N",
                "emptyValue": "", "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                "timestampNTZFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS"}
    return {}


def spark_format(fmt: str) -> str:
    """The Spark data source name of a file table format (TEXTFILE is Spark's CSV)."""
    return "csv" if fmt == "textfile" else fmt
