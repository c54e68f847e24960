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
``${file:/path}`` (:func:`resolve`, as Kafka Connect's config providers), resolved only
when a connection is made and only within the admin's rules (the secret directories and
the variable pattern of :mod:`streamjob.security.policy`), so the secret never reaches the
catalog. In a URL a reference may stand only for the password (:func:`resolve_url`). A
secret written literally is sealed (encrypted) in the catalog
(:mod:`streamjob.security.sealed`) and unsealed by the same functions.

The catalog masks every error it stores (runs' causes, jobs' ``last_error``) with
:func:`mask_text`; property display masks secret properties wholesale
(:func:`streamjob.properties.mask`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

__all__ = ["MASK", "has_reference", "is_sealed", "mask_text", "mask_url", "references", "resolve",
           "resolve_url", "url_password"]

MASK = "***"
#: Query parameters and ``key=value`` pairs whose values are secrets.
_SECRET_KEYS = r"(?:password|passwd|pwd|secret|token|sslpassword|sasl\.password|api[_-]?key|access[_-]?key)"
_QUERY_SECRET = re.compile(rf"([?&;]{_SECRET_KEYS}=)[^&\s'\"]*", re.IGNORECASE)
_PAIR_SECRET = re.compile(rf"(\b{_SECRET_KEYS}\s*[=:]\s*)('[^']*'|\"[^\"]*\"|[^\s,;&)]+)", re.IGNORECASE)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")


def _userinfo_span(url: str, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
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
    span = _userinfo_span(url)
    return url[span[0]:span[1]] if span and span[1] > span[0] else None


def mask_url(url: str) -> str:
    """``url`` with its password and secret query parameters replaced by ``***``.

    ``postgresql://u:p/a ss@w@h:5432/db?password=x`` -> ``postgresql://u:***@h:5432/db?password=***``.
    Anything that is not a URL is returned unchanged.
    """
    if not isinstance(url, str):
        return url
    span = _userinfo_span(url)
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
        span = _userinfo_span(text, m.start(), stop)
        if span and span[1] > span[0]:
            out.append(text[pos:span[0]] + MASK)
            pos = span[1]
    out.append(text[pos:])
    text = "".join(out)
    text = _QUERY_SECRET.sub(rf"\g<1>{MASK}", text)
    return _PAIR_SECRET.sub(rf"\g<1>{MASK}", text)


#: ``${env:NAME}`` / ``${file:/path}``: a secret reference (Kafka Connect's config
#: providers' form), resolved when a connection is made, never stored resolved.
_REFERENCE = re.compile(r"\$\{(env|file):([^}]+)\}")
#: a reference, or a literal secret sealed in the catalog (:mod:`streamjob.security.sealed`)
_ANY = re.compile(r"\$\{(env|file|sealed):([^}]+)\}")
_SEALED = re.compile(r"\$\{sealed:[^}]*\}")
_REMEMBERED: set[str] = set()


def has_reference(text: str) -> bool:
    """True if ``text`` holds a ``${env:...}`` or ``${file:...}`` secret reference."""
    return isinstance(text, str) and _REFERENCE.search(text) is not None


def is_sealed(text: str) -> bool:
    """True if ``text`` holds a sealed secret (``${sealed:...}``, written by streamjob)."""
    return isinstance(text, str) and _SEALED.search(text) is not None


def references(text: str) -> list[tuple[str, str]]:
    """The ``(kind, name)`` of every ``${env:}``/``${file:}`` reference in ``text``."""
    if not isinstance(text, str):
        return []
    return [(m.group(1), m.group(2).strip()) for m in _REFERENCE.finditer(text)]


def resolve(text: str, what: str = "a property", policy=None) -> str:
    """A secret property's value (``"kafka.sasl.password"``) with its reference or sealed
    secret replaced by the secret, under the admin's rules (``policy``, default the
    process's: :func:`streamjob.security.active`):

    * ``${env:NAME}``: a variable of this process whose name matches
      ``streamjob.security.secret.env``;
    * ``${file:PATH}``: a regular file inside ``streamjob.security.secret.dirs`` (after
      symlinks and ``..``; a relative PATH is relative to the first one), at most 64 KiB
      of UTF-8 text, trailing newline removed; opened without blocking, so a FIFO or a
      device is refused, never waited on or read endlessly;
    * ``${sealed:...}``: a literal secret sealed in the catalog (:mod:`.security.sealed`).

    Resolved values are remembered and masked by :func:`mask_text` from then on.

    Raises:
        PolicyError: a reference outside the admin's rules (names the reference, the rule
            and the setting).
        ConnectorError: a variable that is not set, a file that cannot be read or is no
            regular text file, a sealed value the key does not open; the message names
            the reference, never a value.
    """
    if not isinstance(text, str) or "${" not in text:
        return text
    return _ANY.sub(lambda m: _value(m, what, policy), text)


def resolve_url(url: str, what: str = "a URL", policy=None) -> str:
    """``url`` with the reference or sealed secret that stands for its password resolved
    (as :func:`resolve`). A value from a reference is percent-encoded, so that a password
    may hold ``@``, ``/`` or ``:``; a sealed one is put back as it was written. A
    reference anywhere else (host, database, parameters) is refused: a secret must never
    choose where it is sent.

    Raises:
        PolicyError: a reference outside the password, or outside the admin's rules.
        ConnectorError: as :func:`resolve`.
    """
    from urllib.parse import quote

    from .security.policy import PolicyError

    if not isinstance(url, str) or "${" not in url:
        return url
    span = _userinfo_span(url)
    inside = (lambda m: span is not None and span[0] <= m.start() and m.end() <= span[1])
    for m in _ANY.finditer(url):
        if not inside(m):
            raise PolicyError(f"{what} {mask_url(url)}: a secret reference may stand only for "
                              "the URL's password, never for its host, database or parameters")

    def value(m: re.Match) -> str:
        found = _value(m, what, policy)
        return found if m.group(1) == "sealed" else quote(found, safe="")

    return _ANY.sub(value, url)


def _value(m: re.Match, what: str, policy) -> str:
    """The secret one reference match stands for (see :func:`resolve`)."""
    from .exceptions import ConnectorError
    from .security import active
    from .security.sealed import unseal

    policy = policy or active()
    kind, name = m.group(1), m.group(2).strip()
    if kind == "sealed":
        found = unseal(name, policy, what)
    elif kind == "env":
        policy.check_reference("env", name)
        found = os.environ.get(name)
        if found is None:
            raise ConnectorError(f"the secret reference ${{env:{name}}} in {what} is not set "
                                 "in the environment of this process")
    else:
        found = _read_secret_file(policy.secret_file(name), name, what)
    _REMEMBERED.add(found)
    return found


def _read_secret_file(path: Path, name: str, what: str) -> str:
    """The text of secret file ``path`` (real, inside a secret directory), read without
    blocking and in bounded memory (:data:`~streamjob.security.policy.SECRET_MAX_BYTES`).

    Raises:
        ConnectorError: missing or unreadable, not a regular file (FIFO, device,
            directory), too large, or not UTF-8 text.
    """
    import stat

    from .exceptions import ConnectorError
    from .security.policy import SECRET_MAX_BYTES

    ref = f"${{file:{name}}}"

    def fail(why: str) -> ConnectorError:
        return ConnectorError(f"the secret reference {ref} in {what} {why}")

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise fail(f"cannot be read: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise fail("is not a regular file (a FIFO, device or directory is never read)")
        if info.st_size > SECRET_MAX_BYTES:
            raise fail(f"is larger than {SECRET_MAX_BYTES // 1024} KiB, the most a secret "
                       "file may hold")
        chunks, size = [], 0
        while size <= SECRET_MAX_BYTES:
            chunk = os.read(fd, SECRET_MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > SECRET_MAX_BYTES:
            raise fail(f"is larger than {SECRET_MAX_BYTES // 1024} KiB, the most a secret "
                       "file may hold")
    except OSError as exc:
        raise fail(f"cannot be read: {exc.strerror}") from None
    finally:
        os.close(fd)
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise fail("is not UTF-8 text (a secret file holds the secret as text)") from None
    if "\x00" in text:
        raise fail("holds a NUL character (a secret file holds the secret as text)")
    return text.rstrip("\r\n")
