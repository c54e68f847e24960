"""Who may call the HTTP API: bearer tokens and roles (issue 15, DESIGN §8).

While the catalog holds no token, the API is open (as a fresh install is, on one
machine: bind it to 127.0.0.1) and every caller is ``anonymous`` with the operator role.
Once a token exists (``streamjob token create NAME --role viewer|operator``), every
request must carry ``Authorization: Bearer <token>`` (RFC 6750): a missing, malformed or
unknown token gets 401 with ``WWW-Authenticate: Bearer`` and leaves no trace in the
catalog. A *viewer* reads (jobs, status, checkpoints, metrics, events, and the
read-only statements SHOW, DESCRIBE, EXPLAIN, SET, RESET); an *operator* may do anything the
StreamSQL statements do. Tokens are 256 random bits (``secrets.token_urlsafe``) with the
prefix ``sjt_``, so they are recognisable in a leaked file; only their SHA-256 is
stored (:mod:`streamjob.catalog.access`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from ..catalog.records import Role
from ..grammar import statements as st

#: Statements a viewer may execute: they read the catalog or change only the session.
READ_ONLY = (st.ShowStreams, st.ShowTables, st.Describe, st.ShowStreamJobs,
             st.DescribeStreamJob, st.ShowCheckpoints, st.SetProperty, st.ResetProperty,
             st.ShowCreate, st.ShowDatabases, st.UseDatabase, st.ShowTopics, st.PrintTopic,
             st.Explain)
#: The prefix of every token.
TOKEN_PREFIX = "sjt_"


def new_token() -> str:
    """A new random token: ``sjt_`` and 43 URL-safe characters (256 bits)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Principal:
    """The caller of one request: ``name`` as the statement log records it
    (``token:NAME`` or ``anonymous``) and its :class:`Role`."""

    name: str
    role: Role

    @property
    def may_change(self) -> bool:
        """True for an operator."""
        return self.role is Role.OPERATOR


class Unauthorized(Exception):
    """No valid token (HTTP 401)."""


def authenticate(catalog, authorization: str | None) -> Principal:
    """The :class:`Principal` of a request's ``Authorization`` header.

    Raises:
        Unauthorized: tokens exist and the header carries none or an unknown one.
    """
    if not catalog.tokens_exist():
        return Principal("anonymous", Role.OPERATOR)
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("this server requires a bearer token (Authorization: Bearer ...)")
    info = catalog.authenticate(token.strip())
    if info is None:
        raise Unauthorized("the bearer token is not valid (unknown or revoked)")
    return Principal(f"token:{info.name}", Role(info.role))
