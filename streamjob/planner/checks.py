"""The admin's policy (:mod:`streamjob.security.policy`) applied to what statements
declare and to job plans: the one place that knows which value of a stream, table or
job is a path, a database, a Kafka host, a webhook or a secret.

* :func:`check_source` / :func:`check_table` — a stream's or table's connector spec and
  TBLPROPERTIES, when it is declared (CREATE STREAM/TABLE), with the declaring role.
* :func:`check_maintained` — a Delta table OPTIMIZE or VACUUM changes, with the role.
* :func:`check_job_properties` — JOBPROPERTIES and SET values (the alert webhook).
* :func:`check_plan` — every object a job reads or writes, when a job is planned
  (CREATE/ALTER/START STREAMJOB, and the job manager's start): the rules that hold for
  everyone, so that a row written before them cannot slip through.
* :func:`check_values` — no statement writes a sealed secret (``${sealed:...}``).

Every refusal is a :class:`~streamjob.security.policy.PolicyError` whose ``key`` names the property, so the
executor reports it at the property's value.
"""

from __future__ import annotations

import dataclasses

from typing import Any, Mapping

from ..connectors.sources import stream_source
from ..connectors.kafka.security import PROPERTIES as KAFKA_SECURITY, SECRETS, KafkaSecurity
from ..security.policy import AdminPolicy, PolicyError

#: Kafka TLS settings naming files the client reads (PEM).
_TLS_FILES = {"ca_location": "kafka.ssl.ca.location",
              "certificate_location": "kafka.ssl.certificate.location",
              "key_location": "kafka.ssl.key.location"}
_SECRET_PROPS = {name for name, field in KAFKA_SECURITY.items() if field in SECRETS}


def check_values(pairs: Mapping[str, Any]) -> None:
    """No value given in a statement is a sealed secret: those are streamjob's own
    (:mod:`streamjob.security.sealed`), and a copied token must not be opened towards another host.

    Raises:
        PolicyError: names the property.
    """
    from ..sensitive import is_sealed

    for name, value in pairs.items():
        if is_sealed(str(value)):
            err = PolicyError(f"property '{name}': ${{sealed:...}} is how streamjob stores a "
                              "secret it encrypted; a statement gives the secret itself or a "
                              "${env:...}/${file:...} reference",
                              key=str(name).strip().lower(), bad_value=True)
            raise err


def check_references(policy: AdminPolicy, pairs: Mapping[str, Any]) -> None:
    """Every ``${env:}``/``${file:}`` reference in ``pairs`` is one the admin allows
    (:meth:`.AdminPolicy.check_reference`; nothing is read). Secret references stand only
    for secrets: in ``"url"`` the password (:meth:`.AdminPolicy.check_sql_url` checks
    where), in ``kafka.sasl.password`` and ``kafka.ssl.key.password`` the whole value.

    Raises:
        PolicyError: the reference and the rule, ``key`` the property.
    """
    from ..sensitive import references

    for name, value in pairs.items():
        low = str(name).strip().lower()
        for kind, ref in references(str(value)):
            try:
                policy.check_reference(kind, ref)
            except PolicyError as err:  # the same refusal, pointed at the property
                raise PolicyError(err.message, key=low, bad_value=True) from None


def check_declared(policy: AdminPolicy, props: Mapping[str, str], operator: bool) -> None:
    """What a stream's or table's TBLPROPERTIES say before any connector spec is built
    (building one asks the ZooKeeper of ``"kafka.zookeeper"`` for its brokers): no sealed
    value, references the admin allows, Kafka hosts of the list (for an operator).

    Raises:
        PolicyError: ``key`` the property.
    """
    check_values(props)
    check_references(policy, props)
    low = {str(k).strip().lower(): str(v) for k, v in props.items()}
    for key in ("kafka.broker.list", "kafka.zookeeper"):
        if low.get(key, "").strip():
            policy.check_kafka(low[key], f"property \"{key}\"", operator, key=key)


def check_source(policy: AdminPolicy, name: str, spec, props: Mapping[str, str],
                 operator: bool) -> None:
    """A stream's declaration: a file stream's ``"path"``; a Kafka stream's brokers
    (``"kafka.broker.list"`` or ``"kafka.zookeeper"``), TLS files and secret references.

    Raises:
        PolicyError: see :mod:`streamjob.security.policy`.
    """
    check_values(props)
    check_references(policy, props)
    _check_reach(policy, f"stream '{name}'", stream_source(spec).reach(), props, operator)


def check_table(policy: AdminPolicy, name: str, spec, props: Mapping[str, str],
                operator: bool) -> None:
    """A table's declaration: a file table's location, a SQL table's ``"url"``, a Kafka
    table's brokers. A LOCATION refusal has ``key`` ``"location"`` (the executor places
    it at the LOCATION clause).

    Raises:
        PolicyError: see :mod:`streamjob.security.policy`.
    """
    check_values(props)
    check_references(policy, props)
    _check_table_spec(policy, f"table '{name}'", spec, props, operator)


def check_maintained(policy: AdminPolicy, name: str, spec, operator: bool) -> None:
    """A table that OPTIMIZE or VACUUM changes (issue 32): its LOCATION under the same
    rules as when a job writes it (everyone: not the home's state; an operator: under
    ``streamjob.security.file.roots``).

    Raises:
        PolicyError: ``key`` ``"location"``.
    """
    _check_reach(policy, f"table {name}", spec.reach(), {}, operator)


def check_scratch(policy: AdminPolicy, what: str, reach, operator: bool) -> None:
    """A shadow run's scratch copy of a sink (issue 30; :mod:`streamjob.connectors.scratch`)
    against ``policy``: its directories (a file or Delta copy is a new directory) and
    its Kafka brokers (a new topic) as a declaration of them would be checked. Its SQL
    URL is the live table's own database, which the job already writes: not checked
    again.

    Raises:
        PolicyError: naming ``what`` and the path or broker.
    """
    _check_reach(policy, what, dataclasses.replace(reach, urls=()), {}, operator)


def _check_table_spec(policy: AdminPolicy, what: str, spec, props: Mapping[str, str],
                      operator: bool) -> None:
    _check_reach(policy, what, spec.reach(), props, operator)


def _check_reach(policy: AdminPolicy, what: str, reach, props: Mapping[str, str],
                 operator: bool) -> None:
    """What a declaration reaches (:class:`~streamjob.connectors.spec.Reach`: paths, a
    SQL URL, Kafka brokers) against ``policy``."""
    for value, label, key in reach.paths:
        policy.check_path(value, f"{what}: {label}", operator, key=key)
    for url, label, *key in reach.urls:
        if url.strip().lower().startswith(("http://", "https://")):  # an Iceberg REST catalog
            _check_catalog_service(policy, url, f"{what}: {label}", operator, *key)
        else:
            policy.check_sql_url(url, f"{what}: {label}", operator, *key)
    if reach.broker is not None:
        _check_kafka(policy, what, *reach.broker, props, operator)


def _check_catalog_service(policy: AdminPolicy, url: str, what: str, operator: bool,
                           key: str = "iceberg.catalog.uri") -> None:
    """An Iceberg REST catalog's ``http(s)://`` URL: a secret reference only for its
    password (everyone); for an operator, its host among ``streamjob.security.sql.hosts``
    (a catalog service is a database server, DESIGN §9).

    Raises:
        PolicyError: names the URL (password masked), the rule and the setting.
    """
    from urllib.parse import urlsplit

    from ..security.hosts import host_allowed
    from ..security.policy import SQL_HOSTS
    from ..sensitive import has_reference, mask_url, userinfo_span

    span = userinfo_span(url)
    rest = url[:span[0]] + "x" + url[span[1]:] if span and span[1] > span[0] else url
    if has_reference(rest):
        raise PolicyError(f"{what} {mask_url(url)}: a secret reference may stand only for "
                          "the URL's password, never for its host, path or parameters",
                          key=key, bad_value=True)
    if not operator:
        return
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname or "", parts.port
    except ValueError:
        raise PolicyError(f"{what} {mask_url(url)} is not a URL", key=key,
                          bad_value=True) from None
    port = port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    allowed = policy.setting(SQL_HOSTS)
    if not host_allowed(host, port, [h.strip() for h in allowed.split(",") if h.strip()]):
        raise PolicyError(f"{what} {mask_url(url)}: host '{host}' is not a catalog server "
                          f"the admin allowed ({allowed}); see {SQL_HOSTS}", key=key,
                          bad_value=True)


def _check_kafka(policy: AdminPolicy, what: str, bootstrap: str, security: KafkaSecurity,
                 props: Mapping[str, str], operator: bool) -> None:
    low = {str(k).strip().lower(): v for k, v in props.items()}
    policy.check_kafka(bootstrap, what, operator)
    if low.get("kafka.zookeeper"):
        policy.check_kafka(low["kafka.zookeeper"], what, operator, key="kafka.zookeeper")
    for field, prop in _TLS_FILES.items():
        value = getattr(security, field)
        if value and not _in_secret_dirs(policy, value):
            policy.check_path(value, f"{what}: \"{prop}\"", operator, key=prop)


def _in_secret_dirs(policy: AdminPolicy, value: str) -> bool:
    """True if ``value`` is a file inside a secret directory (TLS keys may live there)."""
    try:
        policy.secret_file(value)
    except PolicyError:
        return False
    return True


def check_job_properties(policy: AdminPolicy, pairs: Mapping[str, str], operator: bool) -> None:
    """JOBPROPERTIES or SET values: no sealed secret; the alert webhook's host for an
    operator (``streamjob.security.webhook.hosts``).

    Raises:
        PolicyError: ``key`` the property.
    """
    check_values(pairs)
    check_references(policy, pairs)
    for name, value in pairs.items():
        if str(name).strip().lower() == "streamjob.alert.webhook":
            policy.check_webhook(str(value), "\"streamjob.alert.webhook\"", operator)


def check_plan(policy: AdminPolicy, plan, operator: bool = False) -> None:
    """Every object job ``plan`` reads or writes (sources, dead-letter tables, static
    tables, the sink) and its alert webhook, against the rules for everyone (and, with
    ``operator``, the operator's allowlists).

    Raises:
        PolicyError: names the object and the rule.
    """
    check_reads(policy, plan.sources, plan.statics, operator)
    _check_table_spec(policy, f"table {plan.sink.qualified_name}", plan.sink_spec,
                      plan.sink.properties, operator)
    webhook = getattr(plan.props, "alert_webhook", None)
    if webhook:
        policy.check_webhook(webhook, "\"streamjob.alert.webhook\"", operator)


def check_reads(policy: AdminPolicy, sources, statics, operator: bool = False) -> None:
    """The sources (with their dead-letter tables) and static tables of a job or of a
    SELECT preview (:mod:`streamjob.planner.preview`), as :func:`check_plan`.

    Raises:
        PolicyError: names the object and the rule.
    """
    for src in sources:
        what = f"stream {src.stream.qualified_name}"
        _check_reach(policy, what, src.source.reach(), src.stream.properties, operator)
        if src.dead_letter is not None:
            policy.check_sql_url(src.dead_letter.url,
                                 f"dead-letter table of {what}: \"url\"", operator)
    for static in statics:
        _check_table_spec(policy, f"table {static.table.qualified_name}", static.spec,
                          static.table.properties, operator)
