"""What a connector spec reaches (for the admin's policy) and a Kafka topic's address:
the small value types every table and stream spec returns, kept apart from
:mod:`.spec` so that a connector's own folder (e.g. :mod:`.delta`) can build its spec
without importing the factory that imports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .kafka.security import KafkaSecurity


@dataclass(frozen=True)
class Reach:
    """What a stream or table declaration reaches, for the security checks
    (``planner/checks.py`` decides what is allowed, DESIGN §9): local ``paths`` as
    ``(value, property label, property key)``, a Kafka ``broker`` (bootstrap servers,
    :class:`~streamjob.connectors.kafka.security.KafkaSecurity`) or None, SQL ``urls``
    as ``(url, property label)`` or ``(url, property label, property key)`` (default key
    ``url``; an ``http(s)://`` URL is an Iceberg REST catalog's service)."""

    paths: tuple[tuple[str, str, str], ...] = ()
    broker: tuple[str, Any] | None = None
    urls: tuple[tuple[str, ...], ...] = field(default=())


@dataclass(frozen=True)
class KafkaTopic:
    """A Kafka stream's or table's topic and how to reach its brokers (PRINT, SHOW
    TOPICS, the kafka checkpoint backend): bootstrap servers, security settings
    (references unresolved), the bound on each request in ms."""

    topic: str
    bootstrap: str
    security: KafkaSecurity
    request_timeout_ms: int = 30_000
