"""The single registry of properties: job, engine and connector (DESIGN §3, §7).

- :data:`JOB` — JOBPROPERTIES and ``SET``; effective values layer default < SET <
  JOBPROPERTIES and :func:`effective` reports where each came from.
- :data:`ENGINE` — ``streamjob.conf`` and ``--conf``.
- :data:`CONNECTOR` — TBLPROPERTIES of streams and tables, checked per connector by
  :func:`validate_connector`.

Names are case-insensitive; an unknown name is a :class:`PropertyError` suggesting the
nearest known one; a bad value names the property, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Mapping

from ..exceptions import PropertyError
from .definitions import CONNECTOR, ENGINE, JOB, SECRET_WORDS, SHADOW
from .registry import Property, Registry
from .job import JobProperties, job_properties

__all__ = [
    "CONNECTOR", "ENGINE", "JOB", "SHADOW", "Effective", "JobProperties", "Property", "Registry",
    "display", "effective", "notices", "refuse_contradictions",
    "guarantee", "lookup", "mask", "spark_settings", "validate", "validate_connector",
    "validate_engine", "values",
]

def lookup(name: str) -> Property:
    """The job property called ``name`` (case-insensitive).

    Raises:
        PropertyError: unknown name (suggests the nearest), or a ``spark.sql.*`` setting
            (those are passed through, not looked up).
    """
    return JOB.lookup(name)


def validate(pairs: Mapping[str, str]) -> dict[str, str]:
    """Check JOBPROPERTIES/SET pairs; returns them with canonical names.

    ``spark.sql.*`` settings pass through unchecked (they apply to the job's session).

    Raises:
        PropertyError: the first unknown name or bad value; a ``streamjob.security.*``
            name (the admin's engine settings, docs/security.md).
    """
    for name in pairs:
        if str(name).strip().lower().startswith("streamjob.security."):
            err = PropertyError(f"'{name}' is the admin's setting: it is an engine property "
                                "(streamjob.conf or --conf of the server), never SET or "
                                "JOBPROPERTIES", key=str(name).strip().lower())
            raise err
    return JOB.validate(pairs)


@dataclass(frozen=True)
class Effective:
    """A property's effective typed ``value`` and its ``origin``: default, SET or JOBPROPERTIES."""

    value: Any
    origin: str


def effective(job: Mapping[str, str], session: Mapping[str, str] | None = None) -> dict[str, Effective]:
    """Every job property's effective value, layering default < SET < JOBPROPERTIES;
    ``spark.sql.*`` settings given in either are included with their origin.

    Slipstream's properties without a default of their own (those that set another
    one, are read by the planner, or have no effect) appear only when given. One given with ``maps_to`` sets its target
    when the target is not given itself (first in registry order wins: e.g.
    ``mapred.reduce.tasks`` -> ``spark.sql.shuffle.partitions``, origin
    ``JOBPROPERTIES (mapred.reduce.tasks)``); -1 means "leave the target alone"."""
    from .job import NAMES

    typed = set(NAMES.values())
    out = {}
    for prop in JOB:
        name = prop.name
        if name in job:
            out[name] = Effective(prop.parse(job[name]), "JOBPROPERTIES")
        elif session and name in session:
            out[name] = Effective(prop.parse(session[name]), "SET")
        elif name in typed and not (prop.slipstream and prop.default is None):
            out[name] = Effective(prop.default, "default")
    for source, origin in ((session or {}, "SET"), (job, "JOBPROPERTIES")):
        for name, raw in source.items():
            if JOB.get(name) is None and JOB.passthrough(name):
                out[name] = Effective(str(raw), origin)
    for prop in JOB:
        given = out.get(prop.name)
        if not prop.maps_to or given is None or given.value == -1:
            continue
        target = out.get(prop.maps_to)
        if target is None or target.origin == "default":
            value = given.value if JOB.get(prop.maps_to) else str(given.value)
            out[prop.maps_to] = Effective(value, f"{given.origin} ({prop.name})")
    return out


def refuse_contradictions(job: Mapping[str, str], session: Mapping[str, str] | None = None,
                          here: Mapping[str, str] | None = None) -> None:
    """Refuse effective job properties that contradict each other (the registry's
    :attr:`~.registry.Registry.contradictions`, DESIGN §3; issue 28 point 5).

    Args:
        job: the job's JOBPROPERTIES (canonical names, validated).
        session: the SET values the job is created under.
        here: the properties of the statement being run, in their order in its text
            (CREATE: its JOBPROPERTIES; ALTER: its SET JOBPROPERTIES); the error names the
            last of the contradicting ones given there (``err.key``), so it is located at
            its line, else at the statement's name.

    Raises:
        PropertyError: naming both values, where each came from, and why.
    """
    eff = effective(job, session)
    values = {name: e.value for name, e in eff.items()}
    for rule in JOB.contradictions:
        given = [n for n in rule.names if n in eff and eff[n].origin != "default"]
        if (len(given) < len(rule.names) if rule.all_given else not given):
            continue
        if not rule.holds(values):
            continue
        shown = " with ".join(f"{n}={display(n, values[n])} (from {eff[n].origin})"
                              for n in rule.names)
        mine = [n for n in (here or {}) if n in rule.names]
        raise PropertyError(f"contradictory job properties: {shown}: {rule.why}",
                            key=mine[-1] if mine else None)


def notices(pairs: Mapping[str, str]) -> list[str]:
    """One ``note: ...`` line for each property in ``pairs`` (JOBPROPERTIES or SET) that
    streamjob accepts from Slipstream but that has no effect here, saying why."""
    return [p.notice for p in (JOB.get(name) for name in pairs) if p is not None and p.ignored]


def values(job: Mapping[str, str], session: Mapping[str, str] | None = None) -> JobProperties:
    """The typed :class:`~.job.JobProperties` of :func:`effective` (also a mapping
    ``{name: typed value}``)."""
    return job_properties({k: v.value for k, v in effective(job, session).items()})


def spark_settings(props: JobProperties) -> dict[str, str]:
    """The ``spark.sql.*`` settings among effective job ``props`` (for the job's session),
    in Spark's spelling; only those of the SQL policy's allowlist
    (:mod:`streamjob.policy.settings`: a job stored before the allowlist keeps none other)."""
    from ..policy.settings import allowed_spark_setting

    out = {}
    for name, value in props.spark.items():
        canonical = allowed_spark_setting(name)
        if canonical is not None:
            out[canonical] = value
    return out


class Guarantee(StrEnum):
    """A job's delivery guarantee (DESIGN §6); a member equals its text."""

    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"
    NONE = "none"


def guarantee(props: JobProperties) -> Guarantee:
    """The delivery guarantee of DESIGN §6 for effective typed properties: none without
    durable checkpoints, at-least-once with ``morphling.result.auto.flush``, else
    exactly-once."""
    if not props.checkpoint_enabled:
        return Guarantee.NONE
    return Guarantee.AT_LEAST_ONCE if props.auto_flush else Guarantee.EXACTLY_ONCE


def validate_connector(scope: str, pairs: Mapping[str, str], what: str) -> dict[str, Any]:
    """Check a stream's or table's TBLPROPERTIES for one connector ``scope``
    (``kafka stream``, ``file stream``, ``rate stream``, ``file table``, ``sql table``,
    ``kafka table``, ``console table``); ``what`` names the object in messages
    (``Kafka stream 'clicks'``). Returns ``{name: typed value}`` of the given ones.

    Raises:
        PropertyError: a name unknown to this connector (suggests the nearest one it
            knows) or a bad value.
    """
    known = Registry([p for p in CONNECTOR if scope in p.scopes])
    out = {}
    for name, raw in pairs.items():
        prop = known.get(name)
        if prop is None:
            other = CONNECTOR.get(name)
            hint = (f"; it belongs to a {' or '.join(other.scopes)}" if other is not None
                    else known.suggest(name))
            raise PropertyError(f"{what}: unknown property '{name}'{hint}",
                                key=name.strip().lower())
        try:
            out[prop.name] = prop.parse(raw)
        except PropertyError as exc:
            exc.message = f"{what}: {exc.message}"
            exc.args = (exc.message,)
            raise
    return out


def engine_notices(conf: Mapping[str, str]) -> list[str]:
    """One ``note: ...`` line for each engine property in ``conf`` (streamjob.conf,
    --conf) taken from Slipstream's server template that has no effect here, saying why."""
    return [p.notice for p in (ENGINE.get(name.strip().lower()) for name in conf)
            if p is not None and p.ignored]


def validate_engine(conf: Mapping[str, str]) -> None:
    """Check engine properties: known ``spark.morphling.*``/``streamjob.*`` names, any
    other ``spark.*`` passed to Spark.

    Raises:
        PropertyError: an unknown ``spark.morphling.*``/``streamjob.*`` name (suggests the
            nearest) or a name outside ``spark.*``/``streamjob.*``.
    """
    for name, raw in conf.items():
        low = name.strip().lower()
        prop = ENGINE.get(low)
        if prop is not None:
            if str(raw).strip():
                prop.parse(raw)
            continue
        if low.startswith(("spark.morphling.", "streamjob.")) or not low.startswith("spark."):
            raise PropertyError(f"unknown engine property '{name}'{ENGINE.suggest(name)}"
                                + ("" if low.startswith(("spark.", "streamjob.")) else
                                   "; engine properties are spark.* or streamjob.*"))


def display(name: str, value: Any) -> Any:
    """``value`` as SHOW/DESCRIBE print it: masked (see :func:`mask`), booleans as
    ``true``/``false`` the way they are written in StreamSQL."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return mask(name, value)


def mask(name: str, value: Any) -> Any:
    """``value`` fit for display: secrets (by registry flag or a name containing
    password/secret/sasl.jaas/...) become ``******``; a password inside a URL is masked."""
    low = name.lower()
    prop = JOB.get(low) or CONNECTOR.get(low) or ENGINE.get(low)
    if (prop is not None and prop.secret) or any(w in low for w in SECRET_WORDS):
        return "******"
    if isinstance(value, str):
        from ..sensitive import mask_url

        return mask_url(value)
    return value
