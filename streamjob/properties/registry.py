"""The property model: one :class:`Property` per name, typed, ranged and documented.

Every property streamjob reads — job properties (JOBPROPERTIES, ``SET``), engine
properties (``streamjob.conf``, ``--conf``) and connector properties (TBLPROPERTIES) —
is one entry of a :class:`Registry`, with its type, unit, default, range and meaning.
Names are case-insensitive; values parse as users write them: ``TRUE``/``true``,
``60000`` or ``60 s`` for a duration, ``10 seconds`` for a Spark interval.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..exceptions import PropertyError
from ..nearest import nearest

#: Duration units accepted in a ``duration`` value, in milliseconds.
DURATION_UNITS: dict[str, int] = {
    "ms": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_DURATION = re.compile(r"^(\d+)\s*([a-z]*)$")
#: Bounds every value of a kind has unless its entry sets its own (issue 28 point 5: a
#: 23-digit interval overflowed Spark's long microseconds; a count past Java's int
#: overflowed Spark's settings): a duration at most 7 days, a Spark interval at most 30
#: days, an integer within Java's int.
DURATION_MAX_MS = 7 * 86_400_000
INTERVAL_MAX_MS = 30 * 86_400_000
INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1
_INTERVAL_PART = re.compile(r"(\d+)\s*([a-z]+)")
_INTERVAL_UNITS = {**DURATION_UNITS, "week": 604_800_000, "weeks": 604_800_000}
# A Spark interval such as "10 seconds", "1 minute 30 seconds", "500 milliseconds".
_INTERVAL = re.compile(
    r"^(?:interval\s+)?(?:\d+\s*(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?"
    r"|d|days?|weeks?)\s*)+$")

@dataclass(frozen=True)
class Property:
    """One property.

    ``kind``: ``bool``; ``int`` (``minimum``/``maximum``, ``special`` out-of-range
    values with their meaning); ``duration`` (an integer of ``unit`` ms, or a number
    with a unit: ``60 s``, ``1 min``); ``interval`` (a Spark interval string, kept as
    text); ``choice`` (one of ``choices``, lower-cased; or, with ``other`` =
    ``(regex, words)``, any value matching the regex, e.g. a timestamp in ms besides
    ``earliest``/``latest``); ``string`` (non-empty text);
    ``list`` (comma-separated names, lower-cased); ``url`` (an ``http://`` or
    ``https://`` URL with a host; empty text means none, parsed as None); ``hostports``
    (``host:port,...``, ports 1-65535; ``quorum`` also allows a ZooKeeper ``/chroot``);
    ``sqlurl`` (an SQLAlchemy URL whose dialect and driver are installed,
    :mod:`~streamjob.properties.kinds`). Integers and durations are bounded even when
    ``minimum``/``maximum`` are not given (:data:`INT_MIN`, :data:`INT_MAX`,
    :data:`DURATION_MAX_MS`), intervals by :data:`INTERVAL_MAX_MS` (or ``maximum``, ms). ``scopes`` says where the property may be given (``job``,
    ``engine``, ``kafka stream`` ...); ``secret`` values are masked in output.

    Slipstream compatibility (issue 18): ``slipstream`` says where a name comes from
    (Slipstream 5.2.2's property catalogue ``slipstream_confdesc.properties``, with its
    description and default there); ``maps_to`` is the streamjob property or Spark
    setting this one sets when it is given and that one is not (its Spark meaning);
    ``ignored`` is why it has no effect in streamjob: given, it is accepted and that
    reason is shown as a notice (``note: ...``), never an error.
    """

    name: str
    kind: str
    default: Any
    description: str
    unit: str = ""
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    special: Mapping[int, str] | None = None
    scopes: tuple[str, ...] = ("job",)
    secret: bool = False
    other: tuple[str, str] | None = None
    slipstream: str = ""
    maps_to: str = ""
    ignored: str = ""

    @property
    def notice(self) -> str:
        """The one-line notice shown when an ``ignored`` property is given, else ``""``."""
        return f"note: {self.name} has no effect in streamjob: {self.ignored}" if self.ignored else ""

    def parse(self, raw: Any) -> Any:
        """The typed value of ``raw`` (a string as written, or an already typed value).

        Raises:
            PropertyError: wrong type or out of range; names the property, the value
                and what is allowed.
        """
        text = str(raw).strip()
        low = text.lower()
        if self.kind == "bool":
            if low in ("true", "false"):
                return low == "true"
            raise self._bad(raw, "true or false")
        if self.kind in ("int", "duration"):
            value = self._integer(text)
            if self.special and value in self.special:
                return value
            self._check_range(value, raw)
            return value
        if self.kind == "choice":
            if low in self.choices:
                return low
            if self.other and re.fullmatch(self.other[0], low):
                return low
            raise self._bad(raw, self.describe_range().replace(" | ", ", ").join(("one of ", "")))
        if self.kind == "interval":
            if not _INTERVAL.match(low):
                raise self._bad(raw, "a Spark interval such as '10 seconds' or '1 minute'")
            total = sum(int(n) * _INTERVAL_UNITS[u] for n, u in _INTERVAL_PART.findall(low))
            if total > self.high:
                raise self._bad(raw, self.describe_range())
            return text
        if self.kind in ("hostports", "quorum", "sqlurl"):
            return self._checked(text)
        if self.kind == "list":
            items = tuple(x.strip().lower() for x in text.split(",") if x.strip())
            if items:
                return items
            raise self._bad(raw, "a comma-separated list of column names")
        if self.kind == "string":
            if text:
                return text
            raise self._bad(raw, "a non-empty value")
        if self.kind == "url":
            return self._url(text)
        raise AssertionError(self.kind)

    def describe_range(self) -> str:
        """What values are allowed, in words (for docs and errors)."""
        if self.kind == "bool":
            return "true | false"
        if self.kind == "choice":
            return " | ".join(self.choices + ((self.other[1],) if self.other else ()))
        if self.kind in ("int", "duration"):
            shown = _human_ms if self.kind == "duration" and self.unit == "ms" else str
            parts = [f"between {shown(self.low)} and {shown(self.high)}"]
            parts += [f"{k} ({v})" for k, v in (self.special or {}).items()]
            return ", ".join(parts)
        if self.kind == "interval":
            return f"a Spark interval ('10 seconds') of at most {_human_ms(self.high)}"
        if self.kind == "hostports":
            return "host:port,... (ports 1-65535)"
        if self.kind == "quorum":
            return "host:port,...[/chroot] (ports 1-65535)"
        if self.kind == "sqlurl":
            return "an SQLAlchemy URL of an installed dialect+driver"
        if self.kind == "list":
            return "comma-separated columns"
        if self.kind == "url":
            return "an http:// or https:// URL, empty = none"
        return "text"

    @property
    def low(self) -> int:
        """The smallest allowed value (``minimum``, else :data:`INT_MIN`, 0 for a duration)."""
        if self.minimum is not None:
            return self.minimum
        return 0 if self.kind in ("duration", "interval") else INT_MIN

    @property
    def high(self) -> int:
        """The largest allowed value (``maximum``, else the kind's bound: :data:`INT_MAX`,
        :data:`DURATION_MAX_MS` in ms, :data:`INTERVAL_MAX_MS` for an interval)."""
        if self.maximum is not None:
            return self.maximum
        return {"duration": DURATION_MAX_MS, "interval": INTERVAL_MAX_MS}.get(self.kind, INT_MAX)

    def _checked(self, text: str) -> str:
        """A ``hostports``, ``quorum`` or ``sqlurl`` value (:mod:`.kinds`); the error
        shows the value with its password masked."""
        from ..sensitive import mask_url
        from . import kinds

        try:
            if self.kind == "sqlurl":
                return kinds.sql_url(text)
            return kinds.host_ports(text, chroot=self.kind == "quorum")
        except ValueError as exc:
            raise PropertyError(f"property '{self.name}': {exc}, got '{mask_url(text)}'",
                                key=self.name, bad_value=True) from None

    def _url(self, text: str) -> str | None:
        """``text`` if it is an http(s) URL with a host, None if empty; the error shows
        the value with its password masked."""
        from urllib.parse import urlsplit

        from ..sensitive import mask_url

        if not text:
            return None
        try:
            parts = urlsplit(text)
            ok = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            ok = False
        if ok:
            return text
        raise self._bad(mask_url(text), "an http:// or https:// URL")

    def _integer(self, text: str) -> int:
        m = _DURATION.match(text.lower())
        if text.lstrip("-").isdigit() and text.count("-") <= 1:
            return int(text)
        if self.kind == "duration" and m and m.group(2) in DURATION_UNITS:
            return int(m.group(1)) * DURATION_UNITS[m.group(2)] // DURATION_UNITS.get(self.unit, 1)
        if self.kind == "duration":
            what = "a duration in ms, or with a unit such as '60 s' or '1 min'"
        else:
            rng = self.describe_range().replace(", -", ", or -")
            what = f"an integer{f' ({self.unit})' if self.unit else ''} {rng}".rstrip()
        raise self._bad(text, what)

    def _check_range(self, value: int, raw: Any) -> None:
        if not self.low <= value <= self.high:
            raise self._bad(raw, self.describe_range())

    def _bad(self, raw: Any, allowed: str) -> PropertyError:
        return PropertyError(f"property '{self.name}' must be {allowed}, got '{raw}'",
                             key=self.name, bad_value=True)


def _human_ms(ms: int) -> str:
    """``604800000`` -> ``7 days``, ``60000`` -> ``1 min``, ``1500`` -> ``1500 ms``."""
    for size, unit in ((86_400_000, "day"), (3_600_000, "hour"), (60_000, "min"), (1000, "s")):
        if ms and ms % size == 0:
            n = ms // size
            return f"{n} {unit}" + ("s" if unit in ("day", "hour") and n != 1 else "")
    return f"{ms} ms"


@dataclass(frozen=True)
class Contradiction:
    """Values of properties that cannot hold together (issue 28 point 5), refused at
    CREATE and ALTER at the later of them in the statement.

    ``names``: the properties involved, each of which must have been given (JOBPROPERTIES
    or SET; defaults never contradict each other), or, with ``all_given`` False, at
    least one of them; ``holds``: ``{name: typed effective value}`` -> True when they
    contradict; ``rule``: the combination in words (for the docs); ``why``: what is
    wrong and what to do."""

    names: tuple[str, ...]
    holds: Callable[[Mapping[str, Any]], bool]
    rule: str
    why: str
    all_given: bool = True


class Registry:
    """Properties by lower-case name, for one or more scopes.

    Args:
        properties: the entries.
        prefixes: ``{prefix: description}`` of name families passed through unchecked
            (e.g. ``spark.sql.``: any Spark SQL setting).
        contradictions: combinations of values refused together (:class:`Contradiction`).
    """

    def __init__(self, properties: Iterable[Property], prefixes: Mapping[str, str] | None = None,
                 contradictions: Iterable[Contradiction] = ()):
        self._by_name = {p.name: p for p in properties}
        self.prefixes = dict(prefixes or {})
        self.contradictions = tuple(contradictions)

    def __iter__(self) -> Iterator[Property]:
        return iter(self._by_name.values())

    def __contains__(self, name: str) -> bool:
        return name.strip().lower() in self._by_name

    def names(self) -> list[str]:
        """Every registered name, in registration order."""
        return list(self._by_name)

    def get(self, name: str) -> Property | None:
        """The property called ``name`` (case-insensitive), or None."""
        return self._by_name.get(name.strip().lower())

    @property
    def guards(self) -> dict[str, Any]:
        """``{prefix: check(name, value)}``: a family of :attr:`prefixes` passes a name
        through only when its ``check`` accepts it (``check`` raises PropertyError
        otherwise; e.g. the ``spark.sql.*`` allowlist of :mod:`streamjob.policy.settings`,
        set on the job registry by :mod:`.definitions`)."""
        return self.__dict__.setdefault("_guards", {})

    def _family(self, name: str) -> str | None:
        low = name.strip().lower()
        return next((p for p in self.prefixes if low.startswith(p) and len(low) > len(p)), None)

    def passthrough(self, name: str) -> bool:
        """True if ``name`` belongs to a family passed through (and its guard, if any,
        accepts it)."""
        family = self._family(name)
        if family is None:
            return False
        guard = self.guards.get(family)
        if guard is None:
            return True
        try:
            guard(name, None)
        except PropertyError:
            return False
        return True

    def lookup(self, name: str, what: str = "job property") -> Property:
        """The property called ``name``.

        Raises:
            PropertyError: unknown name; suggests the nearest known one.
        """
        prop = self.get(name)
        if prop is not None:
            return prop
        raise PropertyError(f"unknown {what} '{name}'{self.suggest(name)}",
                            key=name.strip().lower())

    def suggest(self, name: str) -> str:
        """``"; did you mean 'x'?"`` for the nearest known name, or ``""``."""
        near = nearest(name, self._by_name)
        return f"; did you mean '{near}'?" if near else ""

    def validate(self, pairs: Mapping[str, Any], what: str = "job property") -> dict[str, str]:
        """Check every ``name -> raw value``; returns them with canonical names.

        Names in a pass-through family are kept as given (lower-cased).

        Raises:
            PropertyError: the first unknown name or bad value (``err.key`` names it).
        """
        out = {}
        for name, raw in pairs.items():
            family = self._family(name) if self.get(name) is None else None
            if family is not None:
                guard = self.guards.get(family)
                if guard is not None:
                    guard(name, str(raw).strip())  # raises PropertyError: not allowed
                out[name.strip().lower()] = str(raw).strip()
                continue
            prop = self.lookup(name, what)
            prop.parse(raw)
            out[prop.name] = str(raw).strip()
        return out
