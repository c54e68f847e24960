"""Checkpoint backends: where completed checkpoints are recorded (DESIGN §4),
chosen per job by ``morphling.checkpoint.backend``:

- ``catalog`` (default) — rows in the catalog database (:mod:`.catalog`);
- ``zookeeper`` — znodes under ``spark.morphling.zookeeper.*`` (:mod:`.zookeeper`);
- ``kafka`` — a compacted topic on the broker of the job's first Kafka source (:mod:`.kafka`).

The job manager opens the backend of a job from its plan (:func:`backend_for_plan`);
statements about a stored job (SHOW CHECKPOINTS, DESCRIBE, START ... FROM CHECKPOINT,
DROP) open it from the catalog record (:func:`backend_for_job`), without planning.
:func:`check_plan` refuses, at plan time, a kafka backend for a job without a Kafka source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import properties as jp
from ...catalog import Catalog
from ...catalog.records import JobInfo
from ...connectors import spec as cspec
from ...connectors.sources import stream_source
from ...exceptions import ConnectorError, PropertyError
from ...home import Home
from .base import CheckpointBackend
from .catalog import CatalogBackend

if TYPE_CHECKING:
    from ...planner.plan import JobPlan

__all__ = ["BACKEND_KEY", "CatalogBackend", "CheckpointBackend", "backend_for_job",
           "backend_for_plan", "backend_name", "check_plan", "kafka_bootstrap", "open_backend",
           "stored_kafka_bootstrap"]

BACKEND_KEY = "morphling.checkpoint.backend"


def _no_kafka_source(job: str) -> PropertyError:
    err = PropertyError(
        f"{BACKEND_KEY}=kafka records checkpoints in a topic on the broker of the job's first "
        f"Kafka stream, but streamjob {job} reads no Kafka stream; use catalog or zookeeper",
        key=BACKEND_KEY, bad_value=True)
    return err


def open_backend(name: str, *, catalog: Catalog, home: Home, bootstrap: str | None = None,
                 job: str = "", security=None) -> CheckpointBackend:
    """Open the backend called ``name`` (a value of ``morphling.checkpoint.backend``).

    Args:
        catalog: the catalog (used by the catalog backend; the caller keeps owning it).
        home: the streamjob home; its engine conf configures ZooKeeper.
        bootstrap: the Kafka bootstrap servers for the kafka backend (the job's first
            Kafka source), else ignored.
        job: ``db.job``, for messages.
        security: that source's :class:`~streamjob.connectors.kafka.security.KafkaSecurity`
            (SSL/SASL) for the kafka backend; None: PLAINTEXT.

    Returns an open backend; the caller closes it (``with open_backend(...) as b:``).

    Raises:
        PropertyError: unknown name; zookeeper without ``spark.morphling.zookeeper.quorum``;
            kafka without ``bootstrap`` (the job reads no Kafka stream).
        ConnectorError: the ZooKeeper quorum or Kafka broker cannot be reached (names it),
            or kazoo is not installed.
        CheckpointError: the broker refused to create the metadata topic.
    """
    if name == "catalog":
        return CatalogBackend(catalog)
    if name == "zookeeper":
        try:
            from .zookeeper import ZooKeeperBackend
        except ImportError:  # pragma: no cover - kazoo is a dependency
            raise ConnectorError("the zookeeper checkpoint backend needs the 'kazoo' package") from None
        return ZooKeeperBackend.from_conf(home.conf)
    if name == "kafka":
        if not bootstrap:
            raise _no_kafka_source(job or "this job")
        from .kafka import KafkaBackend

        return KafkaBackend(bootstrap, security=security)
    raise PropertyError(f"unknown {BACKEND_KEY} '{name}': use catalog, zookeeper or kafka",
                        key=BACKEND_KEY, bad_value=True)


def kafka_bootstrap(plan: "JobPlan") -> str | None:
    """Bootstrap servers of the plan's first Kafka source, or None."""
    broker = _kafka_broker(plan)
    return broker.bootstrap if broker is not None else None


def _kafka_broker(plan: "JobPlan"):
    """The :class:`~streamjob.connectors.spec.KafkaTopic` of the plan's first Kafka
    source (:meth:`~streamjob.connectors.sources.StreamSource.kafka_topic`: its broker
    holds the kafka backend's topic, reached with the same SSL/SASL settings), or None."""
    for src in plan.sources:
        if src.source.kafka_topic() is not None:
            return src.source.kafka_topic()
    return None


def stored_kafka_bootstrap(catalog: Catalog, job: JobInfo) -> str | None:
    """Bootstrap servers of a stored job's first Kafka source stream, from its catalog
    dependencies (registered in plan order: base sources first), or None."""
    broker = _stored_kafka_broker(catalog, job)
    return broker.bootstrap if broker is not None else None


def _stored_kafka_broker(catalog: Catalog, job: JobInfo):
    for kind, db, name, role in job.dependencies:
        if kind != "stream" or role != "source":
            continue
        stream = catalog.get_stream(db, name)
        if stream is None or stream.is_derived:
            continue
        spec = cspec.source_spec(stream.name, stream.properties, stream.row_format)
        broker = stream_source(spec).kafka_topic()
        if broker is not None:
            return broker
    return None


def backend_name(job: JobInfo) -> str:
    """The stored job's effective ``morphling.checkpoint.backend``."""
    return jp.values(job.properties, job.session_properties).checkpoint_backend


def check_plan(plan: "JobPlan") -> None:
    """Refuse a plan whose backend cannot work for it, without contacting anything.

    Raises:
        PropertyError: ``kafka`` for a job that reads no Kafka stream (located at the
            property's value when it was given in JOBPROPERTIES).
    """
    if plan.props[BACKEND_KEY] == "kafka" and kafka_bootstrap(plan) is None:
        raise _no_kafka_source(plan.qualified_name)


def backend_for_plan(catalog: Catalog, home: Home, plan: "JobPlan") -> CheckpointBackend:
    """Open the backend of a planned job (the job manager, START ... FROM CHECKPOINT).
    Errors as :func:`open_backend`."""
    broker = _kafka_broker(plan)
    return open_backend(plan.props[BACKEND_KEY], catalog=catalog, home=home,
                        bootstrap=broker and broker.bootstrap, job=plan.qualified_name,
                        security=broker and broker.security)


def backend_for_job(catalog: Catalog, home: Home, job: JobInfo,
                    dry_run: bool = False) -> CheckpointBackend:
    """Open the backend of a stored job (SHOW CHECKPOINTS, DESCRIBE, DROP).

    ``dry_run`` (``streamjob check``): nothing external is contacted — the (scratch)
    catalog's records stand in, whatever the job's backend. Errors as :func:`open_backend`.
    """
    if dry_run:
        return CatalogBackend(catalog)
    name = backend_name(job)
    broker = _stored_kafka_broker(catalog, job) if name == "kafka" else None
    return open_backend(name, catalog=catalog, home=home,
                        bootstrap=broker and broker.bootstrap, job=job.qualified_name,
                        security=broker and broker.security)
