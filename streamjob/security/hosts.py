"""Host lists of the admin's policy (:mod:`.policy`): names, addresses and ``fnmatch``
patterns, each optionally with ``:port``."""

from __future__ import annotations

import fnmatch
import ipaddress
from typing import Iterable

__all__ = ["host_allowed", "host_port", "loopback"]


def loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_allowed(host: str, port: int | None, patterns: Iterable[str]) -> bool:
    """True if ``host`` (and ``port``) match one of ``patterns``: ``name``, ``name:port``,
    ``[v6]:port`` or ``fnmatch`` patterns of either; names compare case-insensitively."""
    host = host.strip("[]").lower()
    for pattern in patterns:
        p = pattern.strip().lower()
        want_port = None
        if p.startswith("["):
            inner, _, rest = p[1:].partition("]")
            p, want_port = inner, rest.lstrip(":") or None
        elif p.count(":") == 1:
            p, want_port = p.split(":")
        if want_port is not None and (port is None or not fnmatch.fnmatchcase(str(port), want_port)):
            continue
        if fnmatch.fnmatchcase(host, p):
            return True
    return False


def host_port(item: str) -> tuple[str, int | None]:
    """``(host, port or None)`` of ``host:port``, ``[v6]:port`` or ``scheme://host:port``."""
    item = item.strip()
    if "://" in item:
        item = item.split("://", 1)[1]
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        port = rest.lstrip(":")
    elif item.count(":") == 1:
        host, port = item.split(":")
    else:
        host, port = item, ""
    return host, int(port) if port.isdigit() else None
