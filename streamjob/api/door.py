"""The front door's checks before any route runs (issue 28, docs/security.md "The HTTP
API's front door"): who may even knock, whatever token they carry.

A browser on the same machine is the attacker this module keeps out: a web page the
user visits can make the browser send requests to ``127.0.0.1`` (a cross-site form
POST), or resolve its own domain name to ``127.0.0.1`` after the page loaded (DNS
rebinding) and then read the answers as its own. So, for every request:

1. **Host** (DNS rebinding): the ``Host`` header's name must be one this server answers
   to (:class:`FrontDoor.host_allowed`): the bound address, ``localhost`` on a loopback
   bind, any IP literal and this machine's names on a wildcard bind (``0.0.0.0``,
   ``::``), and the names the admin configured (``--http-host-name``). A rebinding page
   sends its own domain name, which is none of these. Otherwise 403.
2. **Origin** (cross-site requests): a request carrying an ``Origin`` header whose
   ``host[:port]`` is not the request's own ``Host`` is refused with 403 (``Origin:
   null`` too). Same-origin requests of the console carry the server's own origin or
   none; command-line clients send none.
3. **Content-Type** (cross-site POST without a preflight): a ``POST`` must say
   ``Content-Type: application/json`` (a body may be empty), else 415. An HTML form or a
   "simple" ``fetch`` can only send ``text/plain``, ``application/x-www-form-urlencoded``
   or ``multipart/form-data`` without asking the server first (a CORS preflight, which
   this server never grants), so no page can make the browser POST here unasked.
   ``DELETE`` always needs a preflight.
4. **Body size**: a body over :attr:`FrontDoor.max_body_bytes` gets 413 before any of it
   is parsed (declared by ``Content-Length`` or counted as it streams in).

Authentication, the rate limit and the statement cap follow in the app
(:mod:`streamjob.api.auth`, :mod:`streamjob.api.limits`).
"""

from __future__ import annotations

import ipaddress
import json
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit

#: Largest request body, bytes (4 MiB: a script of a few thousand statements).
MAX_BODY_BYTES = 4 << 20
#: Most statements one ``POST /v1/statements`` may carry (a script in one request).
MAX_STATEMENTS = 100
#: Default rate limit per token: requests per second, and the burst allowed at once.
RATE_PER_S, BURST = 20.0, 100
#: Names of the wildcard addresses: bound there, the server answers on every interface.
WILDCARDS = frozenset({"", "0.0.0.0", "::", "*"})


def _ip(text: str):
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP literals (``127.0.0.0/8``, ``::1``)."""
    ip = _ip(host.strip("[]"))
    return host.lower() == "localhost" if ip is None else ip.is_loopback


def is_wildcard(host: str) -> bool:
    """True for ``0.0.0.0``, ``::`` (every interface)."""
    return host.strip("[]") in WILDCARDS


def machine_names() -> set[str]:
    """This machine's host name and fully qualified name, lowercased."""
    names = {socket.gethostname(), socket.getfqdn()}
    return {n.lower() for n in names if n}


def local_addresses() -> list[str]:
    """Addresses a wildcard bind is reachable on, as far as the standard library can
    tell without privileges: loopback, the host name's addresses and the address of the
    default route (a UDP socket connected to a documentation address: nothing is
    sent)."""
    found = ["127.0.0.1"]
    try:
        found += [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)]
    except OSError:
        pass
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1 (RFC 5737): no packet leaves
        found.append(probe.getsockname()[0])
    except OSError:
        pass
    finally:
        probe.close()
    return sorted(dict.fromkeys(a for a in found if _ip(a) is not None and a != "0.0.0.0"),
                  key=lambda a: (":" in a, a))


def host_name(header: str) -> str:
    """The name of a ``Host`` header without its port: ``[::1]:8080`` -> ``::1``,
    ``Example.COM:80`` -> ``example.com``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    name, sep, port = header.rpartition(":")
    return name if sep and port.isdigit() and ":" not in name else header


@dataclass(frozen=True)
class FrontDoor:
    """The front door's settings (``streamjob server --http`` options).

    Attributes:
        bind_host: the host part of ``--http HOST:PORT``.
        names: the extra names the server answers to (``--http-host-name``), e.g. the
            name of a reverse proxy in front of it.
        no_auth: requests without a token are let in as ``anonymous`` operators
            (``--no-auth``: refused unless ``bind_host`` is loopback, see
            :func:`check_no_auth`).
        rate_per_s, burst: the rate limit per token (:class:`~.limits.RateLimiter`).
        max_statements: most statements in one ``POST /v1/statements``.
        max_body_bytes: largest request body.
    """

    bind_host: str = "127.0.0.1"
    names: frozenset[str] = field(default_factory=frozenset)
    no_auth: bool = False
    rate_per_s: float = RATE_PER_S
    burst: int = BURST
    max_statements: int = MAX_STATEMENTS
    max_body_bytes: int = MAX_BODY_BYTES

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(n.lower() for n in self.names))
        if self.no_auth:
            check_no_auth(self.bind_host)

    def allowed_hosts(self) -> set[str]:
        """The names a ``Host`` header may carry (besides any IP literal on a wildcard
        bind)."""
        allowed = set(self.names)
        if is_wildcard(self.bind_host):
            allowed |= {"localhost"} | machine_names()
        else:
            allowed.add(self.bind_host.strip("[]").lower())
            if is_loopback(self.bind_host):
                allowed |= {"localhost", "127.0.0.1", "::1"}
        return allowed

    def host_allowed(self, header: str | None) -> bool:
        """True when a request's ``Host`` header names this server (module doc, 1)."""
        if not header:
            return False
        name = host_name(header)
        if name in self.allowed_hosts():
            return True
        return is_wildcard(self.bind_host) and _ip(name) is not None


def check_no_auth(bind_host: str) -> None:
    """Refuse ``--no-auth`` on anything but a loopback address.

    Raises:
        ValueError: ``bind_host`` is not loopback (its message says why).
    """
    if not is_loopback(bind_host):
        raise ValueError(f"--no-auth is allowed only on a loopback address (127.0.0.1, "
                         f"::1, localhost), not on {bind_host or '0.0.0.0'}: anyone who "
                         f"can reach that address would act without a token")


def _error(status: int, kind: str, message: str) -> tuple[int, bytes]:
    return status, json.dumps({"error": {"type": kind, "message": message}}).encode()


class FrontDoorMiddleware:
    """Pure ASGI middleware applying :class:`FrontDoor`'s checks 1-4 (module doc)
    before the app sees a request; refusals are JSON errors."""

    def __init__(self, app, door: FrontDoor) -> None:
        self.app, self.door = app, door

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {}
        for key, value in scope.get("headers") or ():
            headers.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
        refused = self.refusal(scope.get("method", "GET"), headers)
        if refused is not None:
            return await _answer(send, *refused)
        if scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        # read the body whole first (at most limit + one chunk): over the limit, 413
        # before the app parses any of it; else hand the app the same messages
        buffered, seen, limit = [], 0, self.door.max_body_bytes
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > limit:
                return await _answer(send, *self._too_large())
            if not message.get("more_body"):
                break

        async def replay():
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)

    def refusal(self, method: str, headers: dict[str, str]) -> tuple[int, bytes] | None:
        """``(status, JSON body)`` refusing a request with these (lowercased) headers,
        or None to let it in."""
        host = headers.get("host")
        if not self.door.host_allowed(host):
            return _error(403, "ForeignHost", f"Host '{host or ''}' is not a name of this "
                          "server (a DNS-rebinding page sends its own name); the admin "
                          "adds names with `streamjob server --http-host-name NAME`")
        origin = headers.get("origin")
        if origin is not None and not _same_origin(origin, host):
            return _error(403, "ForeignOrigin", f"requests from the web origin '{origin}' are "
                          "refused: only the console served here, and clients that send no "
                          "Origin, may call this API")
        if method == "POST":
            kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind != "application/json":
                return _error(415, "UnsupportedMediaType", "a POST must carry "
                              "'Content-Type: application/json' (its body may be empty), "
                              f"not '{kind or 'nothing'}'")
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.door.max_body_bytes:
            return self._too_large()
        return None

    def _too_large(self) -> tuple[int, bytes]:
        return _error(413, "RequestTooLarge", f"request body over {self.door.max_body_bytes} bytes")


def _same_origin(origin: str, host: str | None) -> bool:
    """True when ``origin`` (``scheme://host[:port]``) is the server's own, i.e. its
    ``host[:port]`` is the request's ``Host`` header (default ports as browsers omit
    them in both)."""
    if not host or origin.strip().lower() == "null":
        return False
    parts = urlsplit(origin.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    return _netloc(parts.netloc, parts.scheme) == _netloc(host, parts.scheme)


def _netloc(netloc: str, scheme: str) -> str:
    netloc = netloc.strip().lower()
    default = ":443" if scheme == "https" else ":80"
    return netloc[: -len(default)] if netloc.endswith(default) else netloc


async def _answer(send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


__all__ = ["FrontDoor", "FrontDoorMiddleware", "check_no_auth", "is_loopback", "is_wildcard",
           "local_addresses", "MAX_BODY_BYTES", "MAX_STATEMENTS", "RATE_PER_S", "BURST"]
