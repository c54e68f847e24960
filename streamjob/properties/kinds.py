"""Value kinds of the property registry that need more than a regular expression:
``hostports`` (Kafka bootstrap servers, a ZooKeeper quorum) and ``sqlurl`` (an
SQLAlchemy URL whose dialect and driver must be installed).

Each checker returns the value as written or raises ``ValueError`` with the reason in
words; :meth:`streamjob.properties.registry.Property.parse` turns that into a
:class:`~streamjob.exceptions.PropertyError` naming the property (issue 28 point 5:
values range- and type-checked at CREATE, never first at START).
"""

from __future__ import annotations

import functools
import re

from ..sensitive import REFERENCE
from ..nearest import nearest

#: TCP ports (RFC 6335): 1-65535; 0 is "any port" to a listener, never a server's address.
PORT_MIN, PORT_MAX = 1, 65535

_HOST = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?)$")
#: ``${env:NAME}`` / ``${file:/path}`` (streamjob.sensitive): stands in for text checked later.


def check_port(text: str, what: str) -> int:
    """``text`` as a TCP port of ``what``.

    Raises:
        ValueError: not digits, or outside 1-65535.
    """
    if not text.isdigit() or not PORT_MIN <= int(text) <= PORT_MAX:
        raise ValueError(f"the port of {what} must be between {PORT_MIN} and {PORT_MAX}, "
                         f"got '{text}'")
    return int(text)


def host_ports(text: str, chroot: bool = False) -> str:
    """Check ``host:port[,host:port...]`` (a port on every host); with ``chroot``, a
    ZooKeeper ``/path`` suffix is allowed after the last one. Returns ``text``.

    Raises:
        ValueError: an empty entry, a host that is not a name or an address, a missing
            or out-of-range port (names the entry).
    """
    body = text.strip()
    if chroot and "/" in body:
        body, _, path = body.partition("/")
        if not path or "//" in path or any(p in (".", "..") for p in path.split("/")):
            raise ValueError(f"bad ZooKeeper chroot '/{path}'")
    if not body:
        raise ValueError("no host:port")
    for entry in body.split(","):
        entry = entry.strip()
        host, sep, port = entry.rpartition(":")
        if not sep or not host:
            raise ValueError(f"'{entry}' is not host:port")
        if not _HOST.match(host):
            raise ValueError(f"'{host}' in '{entry}' is not a host name or address")
        check_port(port, f"'{entry}'")
    return text


@functools.cache
def installed_drivers() -> tuple[str, ...]:
    """``dialect+driver`` of every SQLAlchemy dialect whose driver module imports here
    (the built-in dialects' drivers, and third-party dialects registered as entry
    points), sorted; asyncio drivers excluded (streamjob's SQL sink is synchronous)."""
    import importlib
    import types
    from importlib.metadata import entry_points

    import sqlalchemy.dialects as dialects

    found = []
    for name in dialects.__all__:
        module = importlib.import_module(f"sqlalchemy.dialects.{name}")
        for attr in dir(module):
            driver = getattr(module, attr)
            if attr == "base" or not isinstance(driver, types.ModuleType) \
                    or not hasattr(driver, "dialect"):
                continue
            if _usable(driver.dialect) is None:
                found.append(f"{name}+{attr}")
    for ep in entry_points(group="sqlalchemy.dialects"):
        try:
            if _usable(ep.load()) is None:
                found.append(ep.name.replace(".", "+"))
        except Exception:  # noqa: BLE001 - a broken plugin is simply not offered
            continue
    return tuple(sorted(set(found)))


def _usable(dialect_cls) -> str | None:
    """None if ``dialect_cls`` can run streamjob's SQL sink here, else why not."""
    if getattr(dialect_cls, "is_async", False):
        return "it is an asyncio driver; the SQL sink needs a synchronous one"
    try:
        dialect_cls.import_dbapi()
    except ImportError as exc:
        return f"its driver module is not installed ({exc})"
    except Exception as exc:  # noqa: BLE001 - a driver failing to import, reported as such
        return f"its driver cannot be loaded ({type(exc).__name__}: {exc})"
    return None


def sql_url(text: str) -> str:
    """Check an SQLAlchemy URL: it parses, its port is 1-65535, and its dialect and
    driver are installed and synchronous (``foo+bar://`` is refused naming the nearest
    installed ``dialect+driver``). Secret references (``${env:X}``, ``${file:/p}``) are
    not resolved here: they stand in as placeholders. Returns ``text``.

    Raises:
        ValueError: the reason, without the URL's password.
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    probe = REFERENCE.sub("secret", text)
    try:
        url = make_url(probe)
    except (ArgumentError, ValueError):
        raise ValueError("not an SQLAlchemy URL (dialect[+driver]://user:password@host:port/"
                         "database, e.g. postgresql://app@db:5432/reports or "
                         "sqlite:////path/to/file.db)") from None
    if url.port is not None:
        check_port(str(url.port), f"the URL's host '{url.host}'")
    written = url.drivername
    try:
        dialect_cls = url.get_dialect()
    except NoSuchModuleError:
        raise ValueError(f"unknown SQLAlchemy dialect or driver '{written}'"
                         + _nearest(written)) from None
    except ImportError as exc:
        raise ValueError(f"the driver of '{written}' cannot be loaded ({exc})"
                         + _nearest(written)) from None
    why = _usable(dialect_cls)
    if why is not None:
        raise ValueError(f"'{written}' cannot be used: {why}" + _nearest(written))
    return text


def _nearest(written: str) -> str:
    """``"; did you mean 'x'?"`` for the nearest installed driver, else the list."""
    known = installed_drivers()
    near = nearest(written, known, cutoff=0.0)
    installed = ", ".join(known) or "none"
    return (f"; did you mean '{near}'? (installed: {installed})" if near
            else f" (installed: {installed})")
