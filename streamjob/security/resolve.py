"""Secret references and sealed secrets resolved under the admin's rules (DESIGN §9,
docs/security.md): :func:`resolve` for a secret property's value, :func:`resolve_url` for
the password of a URL. The rules themselves are :class:`~.policy.AdminPolicy`'s
(secret directories, variable pattern); sealed values are :mod:`.sealed`'s."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..sensitive import ANY_REFERENCE, SECRET_KEYS, userinfo_span, mask_url, remember

#: the end of ``?password=`` (and the other secret query keys) just before a value
_QUERY_KEY = re.compile(rf"[?&;]{SECRET_KEYS}=$", re.IGNORECASE)

__all__ = ["resolve", "resolve_url"]


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
    * ``${sealed:...}``: a literal secret sealed in the catalog (:mod:`.sealed`).

    Resolved values are masked by :func:`streamjob.sensitive.mask_text` from then on.

    Raises:
        PolicyError: a reference outside the admin's rules (names the reference, the rule
            and the setting).
        ConnectorError: a variable that is not set, a file that cannot be read or is no
            regular text file, a sealed value the key does not open; the message names
            the reference, never a value.
    """
    if not isinstance(text, str) or "${" not in text:
        return text
    return ANY_REFERENCE.sub(lambda m: _value(m, what, policy), text)


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

    from .policy import PolicyError

    if not isinstance(url, str) or "${" not in url:
        return url
    span = userinfo_span(url)

    def inside(m: re.Match) -> bool:
        if span is not None and span[0] <= m.start() and m.end() <= span[1]:
            return True  # the password
        # a sealed ?password= (streamjob sealed it there: security/sealed.py)
        return m.group(1) == "sealed" and _QUERY_KEY.search(url[:m.start()]) is not None

    for m in ANY_REFERENCE.finditer(url):
        if not inside(m):
            raise PolicyError(f"{what} {mask_url(url)}: a secret reference may stand only for "
                              "the URL's password, never for its host, database or parameters")

    def value(m: re.Match) -> str:
        found = _value(m, what, policy)
        return found if m.group(1) == "sealed" else quote(found, safe="")

    return ANY_REFERENCE.sub(value, url)


def _value(m: re.Match, what: str, policy) -> str:
    """The secret one reference match stands for (see :func:`resolve`)."""
    from ..exceptions import ConnectorError
    from .policy import active
    from .sealed import unseal

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
    remember(found)
    return found


def _read_secret_file(path: Path, name: str, what: str) -> str:
    """The text of secret file ``path`` (real, inside a secret directory), read without
    blocking and in bounded memory (:data:`~streamjob.security.policy.SECRET_MAX_BYTES`).

    Raises:
        ConnectorError: missing or unreadable, not a regular file (FIFO, device,
            directory), too large, or not UTF-8 text.
    """
    import stat

    from ..exceptions import ConnectorError
    from .policy import SECRET_MAX_BYTES

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
