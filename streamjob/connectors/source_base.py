"""The parts of the source contract (:mod:`.sources`) each stream kind builds on: the
:class:`Reader` a source describes to the Spark room, and :class:`QuietSource`, the
contract's defaults. Apart from :mod:`.sources` so that the kinds (``kafka/stream.py``,
``files/stream.py``, ``rate.py``) import it while the factory imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .spec import KafkaTopic, Reach


@dataclass(frozen=True)
class Reader:
    """How Spark reads a source stream or a static table: all the Spark room
    (``spark/query.py``) needs to build its DataFrame, answered by the connector that
    reads it (:meth:`.sources.StreamSource.reader`, :func:`.static.table_reader`), so
    that the Spark room applies it without asking back.

    * ``format``: the Spark data source (``spark.read[Stream].format(format)``);
    * ``options``: its options, all strings, secret references resolved (at job start;
      left out of ``repr``);
    * ``schema``: Spark DDL (None: the data source's own); with ``json_columns``, the
      columns read beside the JSON text line (partition columns), if any;
    * ``path``: given to ``load`` (None: the options name what is read);
    * ``json_columns``: each row is one JSON text line (Spark's text source) whose keys
      the Spark room matches to these declared column names as a Kafka stream's are
      (``spark/json_keys.py``), typed as ``json_schema`` (their Spark DDL), the
      ``schema`` columns kept beside; None: not JSON text;
    * ``columns``: the declared column names, selected in this order after reading
      (Spark puts partition columns last); None: as read;
    * ``parallelism``: the option that is given the session's default parallelism
      (read tasks), or None;
    * ``malformed``: the column that flags a malformed record (a tolerant Kafka
      stream), counted and dropped by the Spark room; None: none.
    """

    format: str
    options: dict[str, str] = field(default_factory=dict, repr=False)
    schema: str | None = None
    path: str | None = None
    json_columns: tuple[str, ...] | None = None
    json_schema: str | None = None
    columns: tuple[str, ...] | None = None
    parallelism: str | None = None
    malformed: str | None = None


class QuietSource:
    """Defaults of the contract for kinds without offsets, consumer groups or
    malformed records."""

    tolerant = False
    fixed_columns: frozenset[str] | None = None
    observes_columns = True
    bounded = True
    starts_anywhere = True
    data_sources: frozenset[str] = frozenset()
    offsets_key = None
    dead_letter = None
    position_topic: str | None = None

    def consumer_group(self, default: str) -> str | None:
        return None

    def preview(self, reset: str | None, stream: str) -> tuple[Any, str | None]:
        return self.spec, None

    def malformed_policy(self, dead_letter_table: str | None) -> str | None:
        return None

    def end_offsets(self) -> dict[str, dict[str, int]]:
        return {}

    def present_files(self) -> set[str]:
        return set()

    def offsets_reader(self):
        return None

    def commit_target(self, group_id: str | None) -> tuple[tuple, str] | None:
        return None

    def kafka_topic(self) -> KafkaTopic | None:
        return None

    def reach(self) -> Reach:
        return Reach()

    def check(self, columns) -> None:
        """Nothing to check before a job starts (a Delta stream checks its table)."""
