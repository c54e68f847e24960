"""Jars of Hive UDF classes (Slipstream's and Hive's ``ADD JAR 'x.jar'; CREATE TEMPORARY
FUNCTION f AS 'com.x.Udf'``, and ``CREATE FUNCTION f AS 'com.x.Udf' USING JAR 'x.jar'``;
docs/functions.md "Hive UDF jars").

A jar is code the job manager's JVM and its executors run, so it may come only from the
admin's directories ``streamjob.security.functions.jars`` (default ``functions/`` of the
home; :attr:`~streamjob.security.policy.AdminPolicy.function_jar_dirs`). A statement
names a jar relative to one of them (``'udfs.jar'``, looked up in each, in order) or by
an absolute path that lies inside one; either way the real path (symbolic links and
``..`` resolved) must lie inside the directory, as :mod:`.source` checks modules. The
catalog records the jar's real path and the SHA-256 of its bytes (the code hash, part
of the job's fingerprint). Nothing here starts a JVM: :func:`class_in_jar` reads the
jar's entries as a zip.
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..exceptions import ValidationError
from ..security.policy import FUNCTION_JARS, AdminPolicy, PolicyError
from .source import code_hash

__all__ = ["Jar", "class_in_jar", "resolve_jar"]


@dataclass(frozen=True)
class Jar:
    """A jar the admin allowed: ``path`` its real path, ``code_hash`` the SHA-256 hex of
    its bytes."""

    path: str
    code_hash: str


def _refusal(written: str, roots: list[Path]) -> PolicyError:
    where = ", ".join(map(str, roots)) or "(none: jar functions are off)"
    return PolicyError(
        f"jar '{written}' is not in the admin's jar directories ({where}); the admin puts "
        f"it there or names its directory in {FUNCTION_JARS}; a statement never names a "
        "jar elsewhere")


def resolve_jar(written: str, policy: AdminPolicy) -> Jar:
    """The jar ``written`` (as in ``ADD JAR`` / ``USING JAR``: relative to a jar
    directory, or absolute inside one; a ``file:`` URI counts as its path).

    Raises:
        PolicyError: jar functions are off (``none``), or the jar's real path lies in no
            jar directory (naming the directories and the setting).
        ValidationError: the jar does not exist there, or is not a ``.jar`` file.
    """
    text = written.strip()
    if text.startswith("file:"):
        text = re.sub(r"^file:(//)?", "", text)
    roots = policy.function_jar_dirs
    if not roots or not text or "\x00" in text:
        raise _refusal(written, roots)
    given = Path(os.path.expanduser(text))
    candidates = [given] if given.is_absolute() else [root / given for root in roots]
    for candidate in candidates:
        real = Path(os.path.realpath(candidate))
        if not any(root in real.parents for root in roots):
            raise _refusal(written, roots)
        if real.is_file():
            if real.suffix.lower() != ".jar" or not zipfile.is_zipfile(real):
                raise ValidationError(f"'{written}' is not a jar (a zip file named .jar)")
            return Jar(str(real), code_hash(real.read_bytes()))
    raise ValidationError(f"jar '{written}' does not exist in the admin's jar directories "
                          f"({', '.join(map(str, roots))})")


def class_in_jar(jar: str, class_name: str) -> bool:
    """True when the jar at ``jar`` holds the class file of ``class_name``
    (``com/x/Udf.class``)."""
    entry = class_name.replace(".", "/") + ".class"
    try:
        with zipfile.ZipFile(jar) as zf:
            return entry in zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False
