"""Where a user function's code comes from, and its code hash (docs/functions.md,
docs/security.md "functions").

A function is code the job manager and its executors run, so where it may come from is
the admin's decision (:class:`~streamjob.security.policy.AdminPolicy`):

* a module file under a directory of ``streamjob.security.functions.dirs`` (default
  ``functions/`` of the home): ``'pkg.mod:callable'`` is ``<dir>/pkg/mod.py`` (or
  ``<dir>/pkg/mod/__init__.py``); its code hash is the SHA-256 of the file's bytes;
* a module of an installed package named in ``streamjob.security.functions.packages``
  (none by default); its code hash is the SHA-256 of ``<distribution>==<version>``.

:func:`resolve` finds the file by path arithmetic and checks confinement (symlinks and
``..`` resolved) *before* anything is imported; :func:`load` imports only a resolved
:class:`FunctionSource` and checks that the file still has the hash the catalog holds.
Nothing here imports a module a reference merely names.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..exceptions import ChangedLogic, ValidationError
from ..security.policy import FUNCTION_DIRS, FUNCTION_PACKAGES, AdminPolicy, PolicyError

__all__ = ["FunctionSource", "check_unchanged", "code_hash", "current_hash", "load",
           "of_record", "parse_reference", "resolve"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: The prefix of the names modules of the function directories are imported under, so
#: that they never shadow (or are shadowed by) an installed module of the same name.
MODULE_PREFIX = "_streamjob_functions"


@dataclass(frozen=True)
class FunctionSource:
    """A resolved reference: ``module`` and ``attribute`` as written, ``kind`` ``"file"``
    (a module of a function directory; ``path`` its real path), ``"package"`` (an
    installed package; ``path`` the distribution and version) or ``"jar"`` (a Hive UDF
    class, ``module`` its name, ``attribute`` empty; ``path`` the jar's real path,
    :mod:`.jars`), ``code_hash`` the SHA-256 hex of the file's bytes or of
    ``dist==version``."""

    module: str
    attribute: str
    kind: str
    path: str
    code_hash: str

    @property
    def reference(self) -> str:
        """``module:attribute``, as the catalog stores it."""
        return f"{self.module}:{self.attribute}"


def parse_reference(text: str) -> tuple[str, str]:
    """``'pkg.module:callable'`` as ``(module, attribute)``.

    Raises:
        ValidationError: not of that form (dotted Python names around one ``:``).
    """
    module, sep, attribute = text.strip().partition(":")
    parts = module.split(".")
    if not sep or not all(_NAME.fullmatch(p) for p in parts) \
            or not all(_NAME.fullmatch(p) for p in attribute.split(".")):
        raise ValidationError(f"function source '{text}' is not 'package.module:callable' "
                              "(Python names; e.g. 'text_udfs:shout'); a path is never "
                              "accepted, the admin decides where code comes from")
    return module, attribute


def code_hash(data: bytes) -> str:
    """The SHA-256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def _in_dirs(policy: AdminPolicy, parts: list[str]) -> Path | None:
    for root in policy.function_dirs:
        for candidate in (root.joinpath(*parts[:-1], parts[-1] + ".py"),
                          root.joinpath(*parts, "__init__.py")):
            if not candidate.is_file():
                continue
            real = Path(os.path.realpath(candidate))
            if root not in real.parents:
                raise PolicyError(
                    f"function module {'.'.join(parts)} ({candidate}) leads outside the "
                    f"admin's function directory {root} (a symbolic link); the admin puts "
                    f"the file itself there ({FUNCTION_DIRS})")
            return real
    return None


def _package_version(top: str) -> tuple[str, str] | None:
    from importlib import metadata

    dists = metadata.packages_distributions().get(top) or []
    for dist in dists:
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def resolve(text: str, policy: AdminPolicy) -> FunctionSource:
    """Resolve ``'pkg.module:callable'`` to its code without importing anything.

    The function directories come first; then the installed packages the admin named.
    The rule is the same for every principal: code is the admin's decision.

    Raises:
        ValidationError: a malformed reference.
        PolicyError: the module is in no function directory and its package is not one
            the admin allowed (naming both settings), or a file leads out of its
            directory through a symbolic link.
    """
    module, attribute = parse_reference(text)
    parts = module.split(".")
    path = _in_dirs(policy, parts)
    if path is not None:
        return FunctionSource(module, attribute, "file", str(path), code_hash(path.read_bytes()))
    if parts[0] in policy.function_packages:
        found = importlib.util.find_spec(parts[0])  # a top-level name: imports nothing
        version = _package_version(parts[0])
        if found is not None and version is not None:
            dist = f"{version[0]}=={version[1]}"
            return FunctionSource(module, attribute, "package", dist, code_hash(dist.encode()))
        raise PolicyError(f"function module {module}: package {parts[0]} is allowed "
                          f"({FUNCTION_PACKAGES}) but not installed with a version")
    dirs = ", ".join(map(str, policy.function_dirs)) or "(none)"
    raise PolicyError(
        f"function module {module} is not in the admin's function directories ({dirs}) nor "
        f"an allowed installed package; the admin puts it in a directory of "
        f"{FUNCTION_DIRS} or names its package in {FUNCTION_PACKAGES}")


def current_hash(source: FunctionSource) -> str:
    """The code hash ``source`` has now (the file read again, the version asked again).

    Raises:
        ChangedLogic: the file or the package is gone.
    """
    if source.kind in ("file", "jar"):
        try:
            return code_hash(Path(source.path).read_bytes())
        except OSError:
            what = "jar" if source.kind == "jar" else "module"
            raise ChangedLogic(f"function {what} {source.module} ({source.path}) is gone") from None
    version = _package_version(source.module.split(".")[0])
    if version is None:
        raise ChangedLogic(f"function package {source.module} is no longer installed")
    return code_hash(f"{version[0]}=={version[1]}".encode())


def of_record(f) -> FunctionSource:
    """The source of a catalog record (:class:`~streamjob.catalog.records.FunctionInfo`):
    a Hive UDF class in its jar (kind ``hive``), a file module when its location is an
    absolute path, else a package (``dist==version``)."""
    if f.kind == "hive":
        return FunctionSource(f.source, "", "jar", f.location, f.code_hash)
    module, attribute = parse_reference(f.source)
    kind = "file" if Path(f.location).is_absolute() else "package"
    return FunctionSource(module, attribute, kind, f.location, f.code_hash)


def check_unchanged(functions) -> None:
    """Each function's code (records of the catalog) still hashes as registered.

    Raises:
        ChangedLogic: an edited (or removed) module file, another package version: the
            job would run other code than the one its checkpoints and CREATE FUNCTION
            saw. Names the function and both hashes.
    """
    for f in functions:
        source = of_record(f)
        now = current_hash(source)
        if now != f.code_hash:
            raise ChangedLogic(
                f"function {f.database}.{f.name} changed since CREATE FUNCTION: its code "
                f"({source.path}) now hashes {now[:12]}, the catalog registered "
                f"{f.code_hash[:12]}; restore the code, or drop the jobs calling it and the "
                "function and create them again")


def load(source: FunctionSource) -> Callable:
    """Import ``source``'s module (a resolved one: never a name the admin did not allow)
    and return its callable. A file module is imported under
    ``_streamjob_functions.<module>`` from its own path only.

    Raises:
        ValidationError: the module fails to import (its exception type and message),
            or has no such callable.
    """
    try:
        if source.kind == "file":
            name = f"{MODULE_PREFIX}.{source.module}"
            module = sys.modules.get(name)
            if module is None or getattr(module, "__file__", None) != source.path \
                    or getattr(module, "__streamjob_hash__", None) != source.code_hash:
                spec = importlib.util.spec_from_file_location(name, source.path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                module.__streamjob_hash__ = source.code_hash
                sys.modules[name] = module
        else:
            module = importlib.import_module(source.module)
        obj = module
        for part in source.attribute.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        raise ValidationError(f"function module {source.module} has no {source.attribute}") from None
    except Exception as exc:  # noqa: BLE001 - the user's code: its error, no trace
        raise ValidationError(f"function module {source.module} failed to import: "
                              f"{type(exc).__name__}: {exc}") from None
    if not callable(obj):
        raise ValidationError(f"{source.reference} is not callable")
    return obj
