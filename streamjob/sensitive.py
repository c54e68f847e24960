"""Secrets: how they are masked in everything streamjob shows or stores (DESIGN §9).

One place answers "what is secret in this text":

* :func:`mask_url` masks the password of one URL value (a SQL table's ``"url"``, a
  catalog URL). Passwords may hold ``/``, spaces, ``@`` and ``:`` when written raw, so
  the user part ends at the *last* ``@`` before the host; ``?password=`` (and
  ``secret``, ``token``, ``sslpassword``, ...) query parameters are masked too.
  SQLAlchemy's own parser (``make_url``) stops at the first ``@`` and misses the rest.
* :func:`mask_text` masks free text (an error copied from a driver, a log line): the
  credentials of every URL in it, ``password=...`` pairs, and the exact secret values
  given (e.g. the passwords of the job's own tables), wherever they appear.

A secret property may hold a reference instead of the secret: ``${env:NAME}`` or
``${file:/path}`` (as Kafka Connect's config providers), resolved only when a connection
is made and only within the admin's rules (:mod:`streamjob.security.resolve`), so the
secret never reaches the catalog. In a URL a reference may stand only for the password.
A secret written literally is sealed (encrypted) in the catalog
(:mod:`streamjob.security.sealed`). This module only finds and masks them.

The catalog masks every error it stores (runs' causes, jobs' ``last_error``) with
:func:`mask_text`; property display masks secret properties wholesale
(:func:`streamjob.properties.mask`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

__all__ = ["MASK", "has_reference", "is_sealed", "mask_text", "mask_url", "references",
           "remember", "url_password"]

MASK = "***"
#: Query parameters and ``key=value`` pairs whose values are secrets.
SECRET_KEYS = r"(?:password|passwd|pwd|secret|token|sslpassword|sasl\.password|api[_-]?key|access[_-]?key)"
_QUERY_SECRET = re.compile(rf"([?&;]{SECRET_KEYS}=)[^&\s'\"]*", re.IGNORECASE)
_PAIR_SECRET = re.compile(rf"(\b{SECRET_KEYS}\s*[=:]\s*)('[^']*'|\"[^\"]*\"|[^\s,;&)]+)", re.IGNORECASE)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


def userinfo_span(url: str, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
    """``(start, end)`` of the password in the URL at ``url[start:end]`` (after
    ``scheme://user:`` up to the last ``@`` of its authority), or None."""
    end = len(url) if end is None else end
    m = _SCHEME.match(url, start)
    if not m:
        return None
    at = url.rfind("@", m.end(), end)
    if at < 0:
        return None
    colon = url.find(":", m.end(), at)
    if colon < 0:
        return None
    return colon + 1, at


def url_password(url: str) -> str | None:
    """The password written in a URL value (raw, as :func:`mask_url` finds it), or None."""
    span = userinfo_span(url)
    return url[span[0]:span[1]] if span and span[1] > span[0] else None


def mask_url(url: str) -> str:
    """``url`` with its password and secret query parameters replaced by ``***``.

    ``postgresql://u:p/a ss@w@h:5432/db?password=x`` -> ``postgresql://u:***@h:5432/db?password=***``.
    Anything that is not a URL is returned unchanged.
    """
    if not isinstance(url, str):
        return url
    span = userinfo_span(url)
    if span and span[1] > span[0]:
        url = url[:span[0]] + MASK + url[span[1]:]
    return _QUERY_SECRET.sub(rf"\g<1>{MASK}", url)


def mask_text(text: str | None, secrets: Iterable[str] = ()) -> str | None:
    """Free text with every URL's credentials, ``password=...`` pairs and the given
    secret values masked. None stays None."""
    if not text:
        return text
    text = _SEALED.sub(MASK, text)  # ciphertext, but never shown (streamjob/security/sealed.py)
    known = set(secrets) | _REMEMBERED
    for value in sorted({s for s in known if s and len(s) >= 3}, key=len, reverse=True):
        text = text.replace(value, MASK)
    out, pos = [], 0
    for m in _SCHEME.finditer(text):
        if m.start() < pos:
            continue
        # the authority of a URL in free text ends at the first blank after its first
        # "@" (a raw password may hold blanks and "@"; the user part ends at the last one)
        at = text.find("@", m.end())
        blank = re.search(r"[\s'\"]", text[m.end():])
        first_blank = blank.start() + m.end() if blank else len(text)
        if at < 0 or (first_blank < at and ":" not in text[m.end():first_blank]):
            continue
        after = re.search(r"[\s'\"]", text[at + 1:])
        stop = at + 1 + after.start() if after else len(text)
        span = userinfo_span(text, m.start(), stop)
        if span and span[1] > span[0]:
            out.append(text[pos:span[0]] + MASK)
            pos = span[1]
    out.append(text[pos:])
    text = "".join(out)
    text = _QUERY_SECRET.sub(rf"\g<1>{MASK}", text)
    return _PAIR_SECRET.sub(rf"\g<1>{MASK}", text)


#: ``${env:NAME}`` / ``${file:/path}``: a secret reference (Kafka Connect's config
#: providers' form), resolved when a connection is made, never stored resolved.
#: Group 1 is the provider (env, file), group 2 its argument.
REFERENCE = re.compile(r"\$\{(env|file):([^}]+)\}")
#: a reference, or a literal secret sealed in the catalog (:mod:`streamjob.security.sealed`)
ANY_REFERENCE = re.compile(r"\$\{(env|file|sealed):([^}]+)\}")
_SEALED = re.compile(r"\$\{sealed:[^}]*\}")
_REMEMBERED: set[str] = set()


def has_reference(text: str) -> bool:
    """True if ``text`` holds a ``${env:...}`` or ``${file:...}`` secret reference."""
    return isinstance(text, str) and REFERENCE.search(text) is not None


def is_sealed(text: str) -> bool:
    """True if ``text`` holds a sealed secret (``${sealed:...}``, written by streamjob)."""
    return isinstance(text, str) and _SEALED.search(text) is not None


def references(text: str) -> list[tuple[str, str]]:
    """The ``(kind, name)`` of every ``${env:}``/``${file:}`` reference in ``text``."""
    if not isinstance(text, str):
        return []
    return [(m.group(1), m.group(2).strip()) for m in REFERENCE.finditer(text)]


def remember(value: str) -> None:
    """Mask ``value`` (a secret just resolved) in every later :func:`mask_text`."""
    _REMEMBERED.add(value)
