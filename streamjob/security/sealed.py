"""Literal secrets encrypted at rest in the catalog (DESIGN §9, docs/security.md).

A secret written literally — ``"kafka.sasl.password"="s3cret"``, the password of a SQL
table's ``"url"``, the ``user:password`` of an alert webhook — is stored in the catalog
*sealed*: ``${sealed:<token>}``, where the token is a Fernet token (AES-128-CBC with an
HMAC-SHA256, from the ``cryptography`` package) under the key the admin holds
(``streamjob.security.secret.key``, default ``<home>/secret.key``, created owner-only,
0600, on first use). The value is unsealed only when a connection is made
(:func:`streamjob.security.resolve.resolve`), in the job manager, which holds the key; everything
shown masks it. A catalog copied without the key file holds no usable secret.

Sealed tokens are streamjob's own: a statement may not write one (an operator could
otherwise copy another table's token into a URL of a host they listen on). A row written
before sealing existed keeps its plain value and still works (read as written); it is
sealed when the object is created again.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..exceptions import ConnectorError
from ..sensitive import SECRET_KEYS

if TYPE_CHECKING:
    from .policy import AdminPolicy

#: a secret query parameter: ``(?password=)(value)`` (the keys of :mod:`streamjob.sensitive`)
_QUERY_SECRET = re.compile(rf"([?&;]{SECRET_KEYS}=)([^&\s'\"]*)", re.IGNORECASE)
#: ``${sealed:TOKEN}``: a Fernet token (URL-safe base64).
SEALED = re.compile(r"\$\{sealed:([A-Za-z0-9_\-=]+)\}")
_KEY_BYTES = 44  # a Fernet key: 32 bytes, URL-safe base64


def _key(policy: "AdminPolicy", create: bool) -> bytes | None:
    """The Fernet key of ``policy`` (created owner-only when ``create`` and missing)."""
    path: Path = policy.key_file
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        if not create:
            return None
        from cryptography.fernet import Fernet

        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = Fernet.generate_key()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: use theirs
            return _key(policy, False)
        with os.fdopen(fd, "wb") as f:
            f.write(key + b"\n")
        return key
    except OSError as exc:
        raise ConnectorError(f"the secret key file {path} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        data = f.read(_KEY_BYTES + 8).strip()
    if len(data) != _KEY_BYTES:
        raise ConnectorError(f"the secret key file {path} does not hold a Fernet key "
                             f"({_KEY_BYTES} characters of URL-safe base64)")
    return data


def seal(value: str, policy: "AdminPolicy") -> str:
    """``${sealed:TOKEN}`` for ``value`` under the policy's key (made on first use)."""
    from cryptography.fernet import Fernet

    token = Fernet(_key(policy, create=True)).encrypt(value.encode("utf-8")).decode("ascii")
    return f"${{sealed:{token}}}"


def unseal(token: str, policy: "AdminPolicy", what: str) -> str:
    """The value sealed in ``token`` (the text inside ``${sealed:...}``).

    Raises:
        ConnectorError: no key, or a token this key did not seal (another home's catalog,
            a changed key); never shows the token.
    """
    from cryptography.fernet import Fernet, InvalidToken

    key = _key(policy, create=False)
    if key is None:
        raise ConnectorError(f"{what} holds a sealed secret, but the key file "
                             f"{policy.key_file} is missing; restore it (or give the secret "
                             "again)")
    try:
        return Fernet(key).decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, ValueError, UnicodeDecodeError):
        raise ConnectorError(f"{what} holds a sealed secret that the key {policy.key_file} "
                             "does not open (another home's key?); give the secret again") from None


def seal_properties(props: Mapping[str, Any], policy: "AdminPolicy") -> dict[str, Any]:
    """``props`` (TBLPROPERTIES or JOBPROPERTIES, as the catalog will store them) with
    every literal secret sealed: values of properties the registry marks secret, the
    password of a ``"url"``, the ``user:password`` of ``streamjob.alert.webhook``.
    References (``${env:}``, ``${file:}``) and sealed values stay as they are."""
    from .. import properties as jp
    from ..sensitive import userinfo_span, has_reference

    out = dict(props)
    for name, value in props.items():
        if not isinstance(value, str) or not value or SEALED.search(value):
            continue
        low = name.strip().lower()
        prop = jp.CONNECTOR.get(low) or jp.JOB.get(low)
        if prop is not None and prop.secret:
            if not has_reference(value):
                out[name] = seal(value, policy)
        elif low in ("url", "streamjob.alert.webhook"):
            span = userinfo_span(value)
            if span and span[1] > span[0] and not has_reference(value[span[0]:span[1]]):
                # sealed as written (percent-encoded or not), put back as written
                value = value[:span[0]] + seal(value[span[0]:span[1]], policy) + value[span[1]:]
            # ?password=... (and the other secret query keys) too
            out[name] = _QUERY_SECRET.sub(
                lambda m: m.group(0) if not m.group(2) or "${" in m.group(2)
                else m.group(1) + seal(m.group(2), policy), value)
    return out
