"""Dead-letter tables: where malformed Kafka records go under ``"malformed.policy"`` =
``dead-letter`` (DESIGN §7: a malformed record is never dropped silently).

A dead-letter table is a declared SQL table (``"connector"="sql"``). Its columns are
taken by name from :data:`FIELDS`; any subset works, other names are refused when the
job is planned. The records are written by the executor that found them, before the
micro-batch is handed to Spark, through the SQL sink (:class:`streamjob.connectors.sql.sink.SqlSink`):

- with ``"primary.key"="topic,partition,offset"`` rows are upserted, so a replayed batch
  (after a crash, Spark re-reads the same offsets) writes each record once: exactly-once;
- without a key they are appended and a replay may repeat them: at-least-once.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import asdict, dataclass
from typing import Sequence

from streamjob.exceptions import ValidationError
from streamjob.connectors.kafka.formats import MalformedRecord

FIELDS = ("stream", "topic", "partition", "offset", "key", "value", "timestamp", "error")
"""The columns a dead-letter table may declare (by name, any order, any subset)."""


@dataclass(frozen=True)
class DeadLetterTarget:
    """Where one stream's malformed records go: the SQL table's URL, name in that
    database, declared columns ``[{"name", "type"}]`` and primary key; ``stream`` is the
    stream's qualified name written into the ``stream`` column."""

    url: str
    table: str
    columns: tuple[dict, ...]
    primary_key: tuple[str, ...]
    stream: str

    def to_option(self) -> str:
        """The target as one JSON string (a Spark data source option)."""
        return json.dumps({**asdict(self), "columns": list(self.columns)})

    @classmethod
    def from_option(cls, text: str) -> "DeadLetterTarget":
        data = json.loads(text)
        return cls(data["url"], data["table"], tuple(data["columns"]),
                   tuple(data["primary_key"]), data["stream"])


def check_columns(table_name: str, columns: Sequence[dict]) -> None:
    """Refuse a dead-letter table with a column outside :data:`FIELDS`.

    Raises:
        ValidationError: names the column and the allowed names.
    """
    unknown = [c["name"] for c in columns if c["name"].lower() not in FIELDS]
    if unknown:
        raise ValidationError(
            f"dead-letter table {table_name}: column(s) {', '.join(unknown)} are not fields of "
            f"a malformed record (use any of: {', '.join(FIELDS)})")


def dead_letter_target(spec, table, stream: str) -> DeadLetterTarget:
    """The target of stream ``stream``'s (qualified name) malformed records: catalog
    table ``table`` (a ``TableInfo``) whose connector spec is ``spec``.

    Raises:
        ValidationError: the table is not a SQL table, or declares a column that is not
            a field of a malformed record (:func:`check_columns`).
    """
    from streamjob.connectors.spec import SqlTableSpec

    if not isinstance(spec, SqlTableSpec):
        raise ValidationError(f"stream {stream}: dead-letter table "
                              f"{table.qualified_name} must be a SQL table (\"connector\"=\"sql\")")
    check_columns(table.qualified_name, table.columns)
    return DeadLetterTarget(spec.url, spec.table, tuple(dict(c) for c in table.columns),
                            spec.primary_key, stream)


def rows(target: DeadLetterTarget, records: Sequence[MalformedRecord]) -> list[dict]:
    """One row per malformed record with the target's declared columns: key and value as
    text (UTF-8, undecodable bytes replaced) unless the column is BINARY, the record
    timestamp as a UTC datetime."""
    types = {c["name"].lower(): c["type"].strip().lower() for c in target.columns}
    out = []
    for r in records:
        full = {
            "stream": target.stream, "topic": r.topic, "partition": r.partition,
            "offset": r.offset, "key": _bytes(r.key, types.get("key")),
            "value": _bytes(r.value, types.get("value")),
            "timestamp": (_dt.datetime.fromtimestamp(r.timestamp / 1000.0, tz=_dt.timezone.utc)
                          if r.timestamp is not None and r.timestamp >= 0 else None),
            "error": r.reason,
        }
        out.append({name: full[name] for name in types})
    return out


def _bytes(data: bytes | None, typ: str | None):
    if data is None or typ == "binary":
        return data
    return data.decode("utf-8", errors="replace")


class DeadLetterWriter:
    """Writes malformed records of one stream into its dead-letter table (executor side).

    Raises (from :meth:`write`):
        ConnectorError: the database rejected the rows (the task fails, Spark's failover
            replays the batch).
    """

    def __init__(self, target: DeadLetterTarget) -> None:
        from streamjob.connectors.spec import SqlTableSpec
        from streamjob.connectors.sql.sink import SqlSink

        self.target = target
        self.sink = SqlSink(SqlTableSpec(target.url, target.table, target.primary_key),
                            target.columns, job_uid="dead-letter", exactly_once=False,
                            upsert=bool(target.primary_key))

    def write(self, records: Sequence[MalformedRecord]) -> int:
        """Write ``records``; returns the number of rows written."""
        if not records:
            return 0
        return self.sink.write_batch(rows(self.target, records), batch_id=-1)
