"""The parts of the source contract (:mod:`.sources`) each stream kind builds on: the
:class:`Reader` a source describes to the Spark room, and :class:`QuietSource`, the
contract's defaults. Apart from :mod:`.sources` so that the kinds (``kafka/stream.py``,
``files/stream.py``, ``rate.py``) import it while the factory imports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .spec import KafkaTopic, Reach


@dataclass(frozen=True)
class Reader:
    """How Spark reads a stream: ``spark.readStream.format(format)``, with ``schema``
    (Spark DDL; None: the data source's own) and ``options`` (all strings); with
    ``json_text`` each row is one JSON text line (column ``value``) that the Spark room
    turns into the declared columns (``spark/json_keys.py``)."""

    format: str
    options: dict[str, str]
    schema: str | None = None
    json_text: bool = False


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
