"""The registry of job properties (DESIGN §3): name, type, unit, default, range, meaning.

JOBPROPERTIES and ``SET`` are validated here. Names keep the seed's (Slipstream's
``morphling.*``) spelling and are case-insensitive; values parse as users write them
(``TRUE``, ``true``, ``60000``). Effective values layer, lowest first: the default, the
session's ``SET``, the job's JOBPROPERTIES; :func:`effective` reports where each came from.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Mapping

from .exceptions import PropertyError


@dataclass(frozen=True)
class Property:
    """One job property. ``kind`` is ``bool``, ``int`` or ``choice``; ``unit`` e.g. ``ms``."""

    name: str
    kind: str
    default: Any
    description: str
    unit: str = ""
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    special: Mapping[int, str] | None = None  # allowed out-of-range values and meaning

    def parse(self, raw: str) -> Any:
        """The typed value of ``raw``.

        Raises:
            PropertyError: wrong type or out of range; names the property, the value
                and what is allowed.
        """
        text = str(raw).strip()
        if self.kind == "bool":
            low = text.lower()
            if low in ("true", "false"):
                return low == "true"
            raise PropertyError(f"property '{self.name}' must be true or false, got '{raw}'")
        if self.kind == "int":
            try:
                value = int(text)
            except ValueError:
                raise PropertyError(
                    f"property '{self.name}' must be an integer{_unit(self.unit)}, got '{raw}'"
                ) from None
            if self.special and value in self.special:
                return value
            if self.minimum is not None and value < self.minimum:
                extra = "".join(f" or {k} ({v})" for k, v in (self.special or {}).items())
                raise PropertyError(
                    f"property '{self.name}' must be >= {self.minimum}{extra}, got {value}"
                )
            return value
        if self.kind == "choice":
            low = text.lower()
            if low in self.choices:
                return low
            raise PropertyError(
                f"property '{self.name}' must be one of {', '.join(self.choices)}, got '{raw}'"
            )
        raise AssertionError(self.kind)


def _unit(unit: str) -> str:
    return f" ({unit})" if unit else ""


JOB_PROPERTIES: dict[str, Property] = {
    p.name: p
    for p in (
        Property("morphling.job.enable.checkpoint", "bool", True,
                 "durable checkpoints; false = a temporary one, restarts begin at the reset strategy"),
        Property("morphling.job.checkpoint.interval", "int", 10_000,
                 "one checkpoint per interval: the micro-batch trigger interval; 0 = back to back",
                 unit="ms", minimum=0),
        Property("morphling.job.enable.auto.failover", "bool", True,
                 "restart a failed job from its last checkpoint"),
        Property("morphling.task.max.failures", "int", 5,
                 "restarts allowed before the job is FAILED; -1 = never restart",
                 minimum=0, special={-1: "never restart"}),
        Property("morphling.result.auto.flush", "bool", False,
                 "true: rows reach the sink as produced (at-least-once); "
                 "false: visible with the checkpoint (exactly-once)"),
        Property("morphling.checkpoint.backend", "choice", "catalog",
                 "where checkpoint metadata is recorded", choices=("catalog", "zookeeper", "kafka")),
        Property("morphling.checkpoint.timeout", "int", 60_000,
                 "a checkpoint not complete by then has expired", unit="ms", minimum=1),
        Property("morphling.checkpoint.retained", "int", 5,
                 "checkpoints kept; older ones are purged", minimum=1),
        Property("morphling.job.max.records.per.batch", "int", 0,
                 "cap on source records read per checkpoint (admission control); 0 = no cap",
                 unit="records", minimum=0),
    )
}


def lookup(name: str) -> Property:
    """The property called ``name`` (case-insensitive).

    Raises:
        PropertyError: unknown name; suggests the nearest known one.
    """
    key = name.strip().lower()
    if key in JOB_PROPERTIES:
        return JOB_PROPERTIES[key]
    near = difflib.get_close_matches(key, JOB_PROPERTIES, n=1, cutoff=0.6)
    hint = f"; did you mean '{near[0]}'?" if near else ""
    raise PropertyError(f"unknown job property '{name}'{hint}")


def validate(pairs: Mapping[str, str]) -> dict[str, str]:
    """Check every ``name -> raw value``; returns them with canonical (lower-case) names.

    Raises:
        PropertyError: the first unknown name or bad value.
    """
    out = {}
    for name, raw in pairs.items():
        prop = lookup(name)
        prop.parse(raw)
        out[prop.name] = str(raw).strip()
    return out


@dataclass(frozen=True)
class Effective:
    """A property's effective typed ``value`` and its ``origin``: default, SET or JOBPROPERTIES."""

    value: Any
    origin: str


def effective(job: Mapping[str, str], session: Mapping[str, str] | None = None) -> dict[str, Effective]:
    """Every job property's effective value, layering default < SET < JOBPROPERTIES."""
    out = {}
    for name, prop in JOB_PROPERTIES.items():
        if name in job:
            out[name] = Effective(prop.parse(job[name]), "JOBPROPERTIES")
        elif session and name in session:
            out[name] = Effective(prop.parse(session[name]), "SET")
        else:
            out[name] = Effective(prop.default, "default")
    return out


def values(job: Mapping[str, str], session: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{name: typed value}`` of :func:`effective`."""
    return {k: v.value for k, v in effective(job, session).items()}


def guarantee(props: Mapping[str, Any]) -> str:
    """The delivery guarantee of DESIGN §6 for effective typed properties."""
    if not props["morphling.job.enable.checkpoint"]:
        return "none"
    return "at-least-once" if props["morphling.result.auto.flush"] else "exactly-once"

