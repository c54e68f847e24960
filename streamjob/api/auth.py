"""Who may call the HTTP API: bearer tokens and roles (issue 15, issue 28, DESIGN §8-9).

The API always authenticates. Every request for data must carry ``Authorization:
Bearer <token>`` (RFC 6750): a missing, malformed, unknown or revoked token gets 401
with ``WWW-Authenticate: Bearer`` and leaves no trace in the catalog. Having no token
at all never opens the API (revoking the last one closes it for good, until the admin
creates another with ``streamjob token create``); the only way in without a token is
``streamjob server --no-auth``, accepted on a loopback address only
(:func:`streamjob.api.door.check_no_auth`), where a request without a token is the
``anonymous`` principal with the operator role.

Roles (:class:`~streamjob.catalog.records.Role`): a *viewer* reads declared objects (jobs,
status, checkpoints, metrics, events, and the read-only statements :data:`READ_ONLY`);
an *operator* also changes (any statement, start/stop/drop) within what the admin
allowed; an *admin* token acts as the admin (as a local client on the catalog does).
Tokens themselves are managed only with ``streamjob token`` on the catalog, never
through the API. The first ``streamjob server --http`` on a catalog without tokens
creates an admin token (:func:`first_admin_token`) and prints it once.

Tokens are 256 random bits (``secrets.token_urlsafe``) with the prefix ``sjt_``, so they
are recognisable in a leaked file; only their SHA-256 is stored
(:mod:`streamjob.catalog.access`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from ..catalog.records import Role
from ..exceptions import ObjectExistsError
from ..client.session import READS

#: Statements a viewer may execute: they read the catalog or change only the session.
READ_ONLY = READS
#: The prefix of every token.
TOKEN_PREFIX = "sjt_"
#: The name of the token :func:`first_admin_token` creates.
FIRST_TOKEN = "admin"


def new_token() -> str:
    """A new random token: ``sjt_`` and 43 URL-safe characters (256 bits)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Principal:
    """The caller of one request: ``name`` as the statement log records it
    (``token:NAME`` or ``anonymous``), its :class:`Role`, and the SHA-256 of its token
    (None for ``anonymous``), by which a long request (an event stream) checks that the
    token still exists."""

    name: str
    role: Role
    token_hash: str | None = None

    @property
    def may_change(self) -> bool:
        """True for an operator or an admin."""
        return self.role in (Role.OPERATOR, Role.ADMIN)


class Unauthorized(Exception):
    """No valid token (HTTP 401)."""


def authenticate(catalog, authorization: str | None, no_auth: bool = False) -> Principal:
    """The :class:`Principal` of a request's ``Authorization`` header.

    Args:
        no_auth: the server runs with ``--no-auth``: a request without any
            ``Authorization`` header is ``anonymous`` with the operator role (one with a
            header is checked as always).

    Raises:
        Unauthorized: the header carries no bearer token or an unknown one.
    """
    from ..catalog.access import hash_token

    if no_auth and not (authorization or "").strip():
        return Principal("anonymous", Role.OPERATOR)
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("this server requires a bearer token (Authorization: Bearer ...)")
    info = catalog.authenticate(token.strip())
    if info is None:
        raise Unauthorized("the bearer token is not valid (unknown or revoked)")
    return Principal(f"token:{info.name}", Role(info.role), hash_token(token.strip()))


def first_admin_token(catalog) -> str | None:
    """Create the admin token of a catalog that holds no token, and return it (to be
    shown once); None when a token exists (also when another server created one at the
    same moment)."""
    if catalog.tokens_exist():
        return None
    value = new_token()
    try:
        catalog.create_token(FIRST_TOKEN, Role.ADMIN.value, value)
    except ObjectExistsError:
        return None
    return value
