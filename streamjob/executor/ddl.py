"""StreamSQL text from catalog records: what SHOW CREATE STREAM|TABLE|STREAMJOB prints
(issue 16), the inverse of the parser.

The text, run on a fresh catalog, recreates the object as recorded (its name qualified,
so that it lands in its own database whatever the current one is): the same columns
and types, properties, ROW FORMAT, STORED AS, LOCATION, PARTITIONED BY, derived query,
job query and job properties. A job created under ``SET`` values keeps them (they are
part of its record, DESIGN §3): its text sets them first and resets them after.

Secrets are never printed: a secret property (:func:`streamjob.properties.mask`: by the
registry's flag or a name with password/secret/sasl.jaas/...) shows ``******`` and a
password inside a URL ``***`` (:mod:`streamjob.sensitive`). A value that is a secret
*reference* (``${env:NAME}``, ``${file:/path}``) is not a secret and is kept, so such
objects round-trip exactly; objects holding a literal secret need it typed in again.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from ..grammar.lexical import GRAMMAR_KEYWORDS

__all__ = ["create_job_text", "create_stream_text", "create_table_text", "quote_name", "sql_string"]

_PLAIN = re.compile(r"[a-z_][a-z0-9_]*\Z")
#: Every keyword of the grammar, lower case (:data:`.lexical.GRAMMAR_KEYWORDS`): such
#: names are backquoted.
_KEYWORDS = frozenset(k.lower() for k in GRAMMAR_KEYWORDS)


def quote_name(name: str) -> str:
    """``name`` as the parser reads it back: bare when it is a lower-case identifier
    that is no keyword, else backquoted (a backquote doubled)."""
    if _PLAIN.match(name) and name not in _KEYWORDS:
        return name
    return "`" + name.replace("`", "``") + "`"


def qualified(database: str, name: str) -> str:
    """``db.name``, each part quoted as needed."""
    return f"{quote_name(database)}.{quote_name(name)}"


def sql_string(value: str, quote: str = "'", raw_newlines: bool = False) -> str:
    """A string literal whose value (Hive's escapes, :func:`lexical.unescape_string`)
    is ``value``: backslash and the quote escaped, control characters as ``\\n``,
    ``\\t``, ``\\r`` or three octal digits (``'\\001'``); newlines kept raw when
    ``raw_newlines`` (a job's query stays readable)."""
    out = []
    for ch in value:
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + quote)
        elif ch == "\n":
            out.append("\n" if raw_newlines else "\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ch == "\x7f":
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def shown_value(key: str, value: Any) -> str:
    """A property value fit to print: secrets masked, secret references kept."""
    from .. import properties as jp
    from ..sensitive import has_reference, url_password

    text = str(value)
    masked = jp.mask(key, text)
    if masked == text:
        return text
    if has_reference(text) and jp.mask(key, "x") != "x":  # a secret property given by reference
        from ..sensitive import REFERENCE

        if REFERENCE.fullmatch(text.strip()):
            return text
    password = url_password(text)
    if password is not None and has_reference(password):
        return text
    return str(masked)


def _properties(keyword: str, props: Mapping[str, Any]) -> str:
    if not props:
        return ""
    pairs = ",\n  ".join(f"{sql_string(str(k))} = {sql_string(shown_value(str(k), v))}"
                         for k, v in props.items())
    return f"\n{keyword} (\n  {pairs}\n)"


def _columns(columns: Iterable[Mapping[str, Any]]) -> str:
    return " (\n" + ",\n".join(f"  {quote_name(c['name'])} {c['type']}" for c in columns) + "\n)"


def _row_format(rf: Mapping[str, Any] | None) -> str:
    if not rf:
        return ""
    if rf.get("serde"):  # ROW FORMAT SERDE (issue 18): the class and its delimiter
        text = f"\nROW FORMAT SERDE {sql_string(rf['serde'])}"
        if rf.get("fields_terminated_by") is not None:
            text += (" WITH SERDEPROPERTIES ('input.delimited' = "
                     f"{sql_string(rf['fields_terminated_by'])})")
        return text
    text = "\nROW FORMAT DELIMITED"
    if rf.get("fields_terminated_by") is not None:
        text += f" FIELDS TERMINATED BY {sql_string(rf['fields_terminated_by'])}"
    if rf.get("lines_terminated_by") is not None:
        text += f" LINES TERMINATED BY {sql_string(rf['lines_terminated_by'])}"
    return text


def create_stream_text(stream) -> str:
    """``CREATE STREAM db.s (...) [ROW FORMAT ...] [STORED AS DELTA LOCATION '...']
    [TBLPROPERTIES (...)];`` of a
    :class:`~streamjob.catalog.records.StreamInfo`, or ``CREATE STREAM db.s AS <query>;``
    for a derived stream."""
    name = qualified(stream.database, stream.name)
    if stream.query is not None:
        return f"CREATE STREAM {name} AS\n{stream.query};"
    props, stored = dict(stream.properties), ""
    low = {str(k).lower(): k for k in props}
    if str(props.get(low.get("source"), "")).strip().lower() == "delta" and "path" in low:
        # a Delta stream is written as it was declared: STORED AS DELTA LOCATION
        path = props.pop(low["path"])
        props.pop(low["source"])
        stored = f"\nSTORED AS DELTA\nLOCATION {sql_string(shown_value('location', path))}"
    return (f"CREATE STREAM {name}{_columns(stream.columns)}{_row_format(stream.row_format)}"
            f"{stored}{_properties('TBLPROPERTIES', props)};")


def create_table_text(table) -> str:
    """``CREATE TABLE db.t (...) [PARTITIONED BY (...)] [ROW FORMAT ...] [STORED AS f]
    [LOCATION '...'] [TBLPROPERTIES (...)];`` of a
    :class:`~streamjob.catalog.records.TableInfo` (partition columns stay in the column
    list, in their recorded order, and PARTITIONED BY names them, Spark's form)."""
    text = f"CREATE TABLE {qualified(table.database, table.name)}{_columns(table.columns)}"
    if table.partitioned_by:
        text += f"\nPARTITIONED BY ({', '.join(quote_name(c) for c in table.partitioned_by)})"
    text += _row_format(table.row_format)
    if table.stored_as:
        text += f"\nSTORED AS {quote_name(table.stored_as)}"
    if table.location is not None:
        text += f"\nLOCATION {sql_string(shown_value('location', table.location))}"
    return text + _properties("TBLPROPERTIES", table.properties) + ";"


def create_job_text(job) -> str:
    """``CREATE STREAMJOB db.j AS ("...") [JOBPROPERTIES (...)];`` of a
    :class:`~streamjob.catalog.records.JobInfo`; preceded by ``SET k = 'v';`` and
    followed by ``RESET k;`` for each SET value the job was created under."""
    query = sql_string(job.query, quote='"', raw_newlines=True)
    text = (f"CREATE STREAMJOB {qualified(job.database, job.name)} AS ({query})"
            f"{_properties('JOBPROPERTIES', job.properties)};")
    session = dict(job.session_properties or {})
    if not session:
        return text
    sets = "".join(f"SET {k} = {sql_string(shown_value(k, v))};\n" for k, v in session.items())
    resets = "".join(f"\nRESET {k};" for k in session)
    return sets + text + resets


def create_function_text(function) -> str:
    """``CREATE [TEMPORARY] FUNCTION db.f AS 'module:callable' RETURNS type;`` of a
    :class:`~streamjob.catalog.records.FunctionInfo` (docs/functions.md); a Hive UDF
    class ``AS 'com.x.Udf' USING JAR '/real/path.jar' [RETURNS type]``; a table function
    ``RETURNS TABLE (col type, ...)``."""
    temporary = "TEMPORARY " if function.temporary else ""
    head = (f"CREATE {temporary}FUNCTION {qualified(function.database, function.name)} "
            f"AS {sql_string(function.source)}")
    if function.kind == "hive":
        head += f" USING JAR {sql_string(function.location)}"
    returns = f" RETURNS {function.return_type}" if function.return_type else ""
    if getattr(function, "is_table", False):  # RETURNS TABLE (col type, ...)
        from ..columntypes import struct_fields

        columns = ", ".join(f"{quote_name(n)} {t}"
                            for n, t in struct_fields(function.return_type or ""))
        returns = f" RETURNS TABLE ({columns})"
    return f"{head}{returns};"
