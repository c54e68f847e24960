"""The admin's policy: what a job may read, write, connect to and resolve (DESIGN §9).

:class:`AdminPolicy` answers every "may this be reached" question in one place. It is
built from the home and its engine properties ``streamjob.security.*``
(``streamjob.conf`` or ``--conf`` of the server; a session can never set them):

==========================================  ===============================  ==========================
setting                                     default                          what it allows an operator
==========================================  ===============================  ==========================
``streamjob.security.file.roots``           ``data,warehouse`` (in the home)  file streams, file tables,
                                                                             LOCATION, SQLite files,
                                                                             Kafka TLS files
``streamjob.security.sql.hosts``            ``localhost,127.0.0.1,::1``      database servers of SQL tables
``streamjob.security.sql.drivers``          sqlite, postgresql, mysql ...    SQLAlchemy drivers
``streamjob.security.kafka.hosts``          ``localhost,127.0.0.1,::1``      Kafka bootstrap servers,
                                                                             ZooKeeper of old scripts
``streamjob.security.webhook.hosts``        ``localhost,127.0.0.1,::1``      alert webhooks
``streamjob.security.secret.dirs``          ``secrets`` (in the home)        ``${file:...}`` (everyone)
``streamjob.security.secret.env``           ``STREAMJOB_SECRET_*``           ``${env:...}`` (everyone)
``streamjob.security.secret.key``           ``secret.key`` (in the home)     the key of sealed secrets
``streamjob.security.functions.dirs``       ``functions`` (in the home)      modules of CREATE FUNCTION
                                                                             (everyone)
``streamjob.security.functions.packages``   (none)                           installed packages of
                                                                             CREATE FUNCTION (everyone)
``streamjob.security.functions.jars``       ``functions`` (in the home)      jars of ADD JAR / USING
                                                                             JAR (everyone; ``none``:
                                                                             no jar functions)
==========================================  ===============================  ==========================

Host lists hold names, addresses or ``fnmatch`` patterns (``*.corp.example``,
``10.0.0.*``), each optionally with ``:port`` (then only that port); relative paths are
relative to the home.

Rules for **everyone** (admins included; also checked when a job starts, so that a row
written before these rules cannot slip through): the home's own state — the home
directory itself, ``catalog.db`` and its ``-wal``/``-journal``/``-shm`` files,
``streamjob.conf``, the checkpoint root, the secret directories, ``logs``, the key file
— is never a stream, table, LOCATION or SQLite path, and no path holds the home; the
catalog's own database is never a SQL table's database. Subfolders of the home that are
not its state (``data/``, ``warehouse/``, a ``flights.db`` beside the catalog) are data.

Rules for an **operator** (an API operator token; anonymous counts as one): the
allowlists above. The admin (local clients, admin tokens) is not confined by them.

Every refusal is a :class:`PolicyError` naming the value, the rule it broke and the
setting that would allow it.
"""

from __future__ import annotations

import fnmatch
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping
from urllib.parse import unquote, urlsplit

from ..exceptions import ConnectorError, ValidationError
from ..properties.definitions import ENGINE
from .hosts import host_allowed, host_port as _host_port, loopback as _loopback

PREFIX = "streamjob.security."
FILE_ROOTS = PREFIX + "file.roots"
SQL_HOSTS = PREFIX + "sql.hosts"
SQL_DRIVERS = PREFIX + "sql.drivers"
KAFKA_HOSTS = PREFIX + "kafka.hosts"
WEBHOOK_HOSTS = PREFIX + "webhook.hosts"
SECRET_DIRS = PREFIX + "secret.dirs"
SECRET_ENV = PREFIX + "secret.env"
SECRET_KEY = PREFIX + "secret.key"
FUNCTION_DIRS = PREFIX + "functions.dirs"
FUNCTION_PACKAGES = PREFIX + "functions.packages"
FUNCTION_JARS = PREFIX + "functions.jars"

#: ``{setting: its default}``: the settings are engine properties, registered with their
#: defaults and meanings in :mod:`streamjob.properties.definitions` (docs/properties.md).
DEFAULTS: dict[str, str] = {key: ENGINE.get(key).default for key in (
    FILE_ROOTS, SQL_HOSTS, SQL_DRIVERS, KAFKA_HOSTS, WEBHOOK_HOSTS, SECRET_DIRS, SECRET_ENV,
    SECRET_KEY, FUNCTION_DIRS, FUNCTION_PACKAGES, FUNCTION_JARS)}

#: Largest secret file ``${file:...}`` reads (bytes).
SECRET_MAX_BYTES = 64 * 1024

#: SQLite files beside a database file that belong to it.
_SQLITE_SIDE = ("", "-wal", "-journal", "-shm")
#: URL query parameters of a SQL table an operator may give (others name hosts, sockets
#: or files: host, hostaddr, service, passfile, sslkey, read_default_file, unix_socket).
SAFE_QUERY_KEYS = frozenset({"sslmode", "connect_timeout", "application_name", "charset",
                             "target_session_attrs", "options", "client_encoding"})
_DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306, "mssql": 1433,
                  "oracle": 1521}


class PolicyError(ValidationError):
    """A value the admin's policy does not allow; the message names the value, the rule
    and the setting that would allow it. ``key`` (when set) is the property holding the
    value, for the statement's position."""


def _split(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def _local_path(value: str) -> Path | None:
    """The absolute local path of a plain path or ``file:`` URI, or None (another scheme)."""
    parts = urlsplit(value)
    if parts.scheme == "file":
        return Path(unquote(parts.path))
    if parts.scheme and len(parts.scheme) > 1:
        return None
    return Path(os.path.expanduser(value))


def _real(path: Path) -> Path:
    """``path`` made absolute with symlinks and ``..`` resolved (as far as it exists)."""
    return Path(os.path.realpath(path if path.is_absolute() else Path.cwd() / path))


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True)
class AdminPolicy:
    """The admin's rules for one home (see the module doc). Build with :meth:`of`."""

    home: Path
    catalog_url: str
    checkpoint_root: str
    conf: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, home: Path, catalog_url: str, checkpoint_root: str,
           conf: Mapping[str, str]) -> "AdminPolicy":
        """The policy of the home at ``home`` with that catalog URL and checkpoint root
        (as :class:`streamjob.home.Home` answers them: ``Home.policy``), and the
        ``streamjob.security.*`` settings of its engine properties ``conf``."""
        return cls(Path(home), catalog_url, checkpoint_root,
                   tuple(sorted((k, v) for k, v in conf.items() if k.startswith(PREFIX))))

    # ------------------------------------------------------------------ settings

    def setting(self, key: str) -> str:
        """The effective text of one ``streamjob.security.*`` setting (its default when
        not given or empty)."""
        given = dict(self.conf).get(key, "").strip()
        return given or DEFAULTS[key]

    def _paths(self, key: str) -> list[Path]:
        out = []
        for item in _split(self.setting(key)):
            local = _local_path(item)
            if local is None:
                continue
            out.append(_real(local if local.is_absolute() else self.home / local))
        return out

    @property
    def file_roots(self) -> list[str]:
        """The operator's file roots: real local paths, and URIs of other schemes as written."""
        out = []
        for item in _split(self.setting(FILE_ROOTS)):
            local = _local_path(item)
            if local is None:
                out.append(item.rstrip("/"))
            else:
                out.append(str(_real(local if local.is_absolute() else self.home / local)))
        return out

    @property
    def secret_dirs(self) -> list[Path]:
        """Real paths of the directories ``${file:...}`` may read."""
        return self._paths(SECRET_DIRS)

    @property
    def function_dirs(self) -> list[Path]:
        """Real paths of the directories CREATE FUNCTION's modules may come from
        (``streamjob.security.functions.dirs``)."""
        return self._paths(FUNCTION_DIRS)

    @property
    def function_packages(self) -> list[str]:
        """The installed top-level packages CREATE FUNCTION may name
        (``streamjob.security.functions.packages``; none by default)."""
        return _split(dict(self.conf).get(FUNCTION_PACKAGES, ""))

    @property
    def function_jar_dirs(self) -> list[Path]:
        """Real paths of the directories whose jars ADD JAR and ``USING JAR`` may name
        (``streamjob.security.functions.jars``); empty when the setting is ``none``:
        then no jar function, and Spark's sessions run without Hive support
        (:func:`streamjob.spark.session.spark_session`)."""
        if self.setting(FUNCTION_JARS).lower() == "none":
            return []
        return self._paths(FUNCTION_JARS)

    @property
    def key_file(self) -> Path:
        """The file of the key sealing literal secrets (:mod:`.sealed`)."""
        item = self.setting(SECRET_KEY)
        path = Path(os.path.expanduser(item))
        return path if path.is_absolute() else self.home / path

    def protected(self) -> list[tuple[Path, bool]]:
        """The home's own state as ``(real path, is a directory tree)``: never a data path."""
        home = _real(self.home)
        out: list[tuple[Path, bool]] = [(home / "streamjob.conf", False),
                                        (_real(self.key_file), False),
                                        (home / "logs", True)]
        out += [(d, True) for d in self.secret_dirs]
        ck = _local_path(self.checkpoint_root)
        if ck is not None:
            out.append((_real(ck), True))
        db = self._catalog_file()
        if db is not None:
            out += [(Path(str(db) + side), False) for side in _SQLITE_SIDE]
        return out

    def _catalog_file(self) -> Path | None:
        from sqlalchemy.engine import make_url

        try:
            url = make_url(self.catalog_url)
        except Exception:  # noqa: BLE001 - the catalog itself reports a bad URL
            return None
        if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
            return None
        return _real(Path(os.path.expanduser(_sqlite_file(url))))

    # ------------------------------------------------------------------ paths

    def check_path(self, value: str, what: str, operator: bool, key: str | None = None) -> None:
        """A file stream's ``"path"``, a table's LOCATION, a SQLite file, a TLS file.

        Everyone: not the home, not inside its state (:meth:`protected`), not holding the
        home. Operator: under a file root.

        Raises:
            PolicyError: the rule broken and the setting that would allow the path.
        """
        if "\x00" in value:
            raise self._error(f"{what} holds a NUL character", key)
        if operator and ("{" in value or "}" in value
                         or ".." in re.split(r"[/\\,{}]", value)):
            # Hadoop globs expand {a,../../etc} after any check of the text could
            raise self._error(f"{what} '{value}': an operator's path may not use '{{...}}' "
                              "alternatives or '..' (write the directory itself)", key)
        local = _local_path(value)
        if local is None:
            if operator and not self._uri_allowed(value):
                raise self._error(
                    f"{what} '{value}' is not under a file root the admin allowed "
                    f"({', '.join(self.file_roots)}); the admin can add it to {FILE_ROOTS}", key)
            return
        real = _real(local)
        home = _real(self.home)
        if real == home or real in home.parents:
            raise self._error(f"{what} '{value}' is the streamjob home {home} or holds it: the "
                              "home's catalog, checkpoints and keys are never data", key)
        for path, tree in self.protected():
            if real == path or (tree and path in real.parents):
                raise self._error(f"{what} '{value}' lies in the streamjob home's own state "
                                  f"({path}): the catalog, its configuration, checkpoints, "
                                  "secrets, logs and keys are never data", key)
        if operator:
            roots = [Path(r) for r in self.file_roots if _local_path(r) is not None]
            if not any(_under(real, r) for r in roots):
                raise self._error(
                    f"{what} '{value}' is not under a file root the admin allowed "
                    f"({', '.join(self.file_roots)}); the admin can add its directory to "
                    f"{FILE_ROOTS}", key)

    def _uri_allowed(self, value: str) -> bool:
        parts = urlsplit(value)
        if ".." in parts.path.split("/"):
            return False
        for root in self.file_roots:
            r = urlsplit(root)
            if r.scheme and (r.scheme, r.netloc) == (parts.scheme, parts.netloc) and (
                    parts.path.rstrip("/") == r.path.rstrip("/")
                    or parts.path.startswith(r.path.rstrip("/") + "/")):
                return True
        return False

    # ------------------------------------------------------------------ SQL URLs

    def check_sql_url(self, url: str, what: str, operator: bool, key: str | None = "url") -> None:
        """A SQL table's ``"url"`` as written (a ``${env:}``/``${file:}`` reference may
        stand only for its password).

        Everyone: not the catalog's own database (same SQLite file, or same server and
        database), no secret reference outside the password. SQLite files follow
        :meth:`check_path`. Operator: the driver among ``streamjob.security.sql.drivers``,
        the server among ``streamjob.security.sql.hosts``, only harmless query parameters.

        Raises:
            PolicyError: names the URL (password masked), the rule and the setting.
        """
        from sqlalchemy.engine import make_url

        from ..sensitive import userinfo_span, has_reference, mask_url

        shown = mask_url(url)
        span = userinfo_span(url)
        rest = url[:span[0]] + "x" + url[span[1]:] if span and span[1] > span[0] else url
        if has_reference(rest):  # (a sealed value is streamjob's own: check_values)
            raise self._error(f"{what} {shown}: a secret reference (${{env:...}}, "
                              "${file:...}) may stand only for the URL's password, never for "
                              "its host, database or parameters", key)
        try:
            parsed = make_url(rest)
        except Exception:  # noqa: BLE001 - the connector reports a malformed URL
            return
        backend = parsed.get_backend_name()
        if operator:
            drivers = [d.lower() for d in _split(self.setting(SQL_DRIVERS))]
            if parsed.drivername.lower() not in drivers:
                raise self._error(f"{what} {shown}: driver '{parsed.drivername}' is not one the "
                                  f"admin allowed ({', '.join(drivers)}); see {SQL_DRIVERS}", key)
            extra = sorted(k for k in parsed.query if k.lower() not in SAFE_QUERY_KEYS)
            if extra:
                raise self._error(f"{what} {shown}: parameter '{extra[0]}' may name another "
                                  "host, socket or file; an operator's SQL URL may carry only "
                                  f"{', '.join(sorted(SAFE_QUERY_KEYS))}", key)
        if backend == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                self._not_catalog_file(parsed, what, shown, key)
                self.check_path(_sqlite_file(parsed), f"{what}'s SQLite file", operator, key)
            return
        host = str(parsed.query.get("host") or parsed.host or "localhost")
        port = parsed.port or _DEFAULT_PORTS.get(backend)
        if self._is_catalog_server(backend, host, port, parsed.database):
            raise self._error(f"{what} {shown} is the catalog's own database: a job can never "
                              "read or write the catalog", key)
        if operator and not host_allowed(host, port, _split(self.setting(SQL_HOSTS))):
            raise self._error(f"{what} {shown}: host '{host}' is not a database server the "
                              f"admin allowed ({self.setting(SQL_HOSTS)}); see {SQL_HOSTS}", key)

    def _not_catalog_file(self, parsed, what: str, shown: str, key: str | None) -> None:
        db = self._catalog_file()
        target = _real(Path(os.path.expanduser(_sqlite_file(parsed))))
        if db is not None and any(target == Path(str(db) + s) for s in _SQLITE_SIDE):
            raise self._error(f"{what} {shown} is the catalog's own database: a job can never "
                              "read or write the catalog", key)

    def _is_catalog_server(self, backend: str, host: str, port: int | None, database) -> bool:
        from sqlalchemy.engine import make_url

        try:
            cat = make_url(self.catalog_url)
        except Exception:  # noqa: BLE001
            return False
        cb = cat.get_backend_name()
        if cb == "sqlite" or cb != backend:
            return False
        chost = str(cat.query.get("host") or cat.host or "localhost")
        cport = cat.port or _DEFAULT_PORTS.get(cb)
        same_host = chost.lower() == host.lower() or (_loopback(chost) and _loopback(host))
        return same_host and cport == port and (cat.database or "") == (database or "")

    # ------------------------------------------------------------------ Kafka, webhooks

    def check_kafka(self, servers: str, what: str, operator: bool,
                    key: str | None = "kafka.broker.list") -> None:
        """Kafka bootstrap servers (``host:port,...``) or a ZooKeeper connect string:
        for an operator, every host among ``streamjob.security.kafka.hosts``.

        Raises:
            PolicyError: the first host not allowed.
        """
        if not operator:
            return
        for item in _split(servers.split("/", 1)[0]):  # a ZooKeeper chroot follows a '/'
            host, port = _host_port(item)
            if not host_allowed(host, port, _split(self.setting(KAFKA_HOSTS))):
                raise self._error(f"{what}: Kafka host '{item}' is not one the admin allowed "
                                  f"({self.setting(KAFKA_HOSTS)}); see {KAFKA_HOSTS}", key)

    def check_webhook(self, url: str, what: str, operator: bool,
                      key: str = "streamjob.alert.webhook") -> None:
        """An alert webhook URL: for an operator, its host among
        ``streamjob.security.webhook.hosts``.

        Raises:
            PolicyError: the host is not allowed (the URL shown masked).
        """
        from ..sensitive import userinfo_span, has_reference, mask_url

        if not url or not url.strip():
            return
        span = userinfo_span(url)
        rest = url[:span[0]] + "x" + url[span[1]:] if span and span[1] > span[0] else url
        if has_reference(rest):
            raise self._error(f"{what} {mask_url(url)}: a secret reference may stand only for "
                              "the URL's password, never for its host, path or parameters", key)
        if not operator:
            return
        try:
            parts = urlsplit(url.strip())
            host, port = parts.hostname or "", parts.port
        except ValueError:
            return  # the property's own check reports a malformed URL
        port = port or {"http": 80, "https": 443}.get(parts.scheme.lower())
        if not host_allowed(host, port, _split(self.setting(WEBHOOK_HOSTS))):
            raise self._error(f"{what} {mask_url(url)}: host '{host}' is not a webhook target "
                              f"the admin allowed ({self.setting(WEBHOOK_HOSTS)}); see "
                              f"{WEBHOOK_HOSTS}", key)

    # ------------------------------------------------------------------ secret references

    def check_reference(self, kind: str, name: str) -> None:
        """May ``${kind:name}`` be resolved at all (without reading it)?

        Raises:
            PolicyError: an environment variable outside the pattern, a file outside the
                secret directories (after symlinks and ``..``).
        """
        ref = f"${{{kind}:{name}}}"
        if kind == "env":
            patterns = _split(self.setting(SECRET_ENV))
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or not any(
                    fnmatch.fnmatchcase(name, p) for p in patterns):
                raise PolicyError(f"the secret reference {ref} names a variable outside the "
                                  f"admin's pattern ({', '.join(patterns)}); the admin can "
                                  f"widen {SECRET_ENV}")
            return
        self.secret_file(name)

    def secret_file(self, name: str) -> Path:
        """The real path a ``${file:name}`` reference reads: ``name`` absolute, or relative
        to the first secret directory; after symlinks and ``..`` it must lie inside a
        secret directory.

        Raises:
            PolicyError: outside every secret directory.
        """
        dirs = self.secret_dirs
        path = Path(os.path.expanduser(name))
        if not path.is_absolute():
            path = (dirs[0] if dirs else self.home) / path
        real = _real(path)
        if "\x00" in name or not any(real != d and d in real.parents for d in dirs):
            raise PolicyError(f"the secret reference ${{file:{name}}} is outside the admin's "
                              f"secret directories ({', '.join(map(str, dirs))}); put the "
                              f"file there, or the admin can add a directory to {SECRET_DIRS}")
        return real

    # ------------------------------------------------------------------ errors

    @staticmethod
    def _error(message: str, key: str | None) -> PolicyError:
        return PolicyError(message, key=key, bad_value=key is not None)


def _sqlite_file(url) -> str:
    """The file of a SQLite URL (``file:`` URIs of ``?uri=true`` without their query)."""
    db = url.database or ""
    if str(url.query.get("uri", "")).lower() in ("true", "1") and db.startswith("file:"):
        db = unquote(urlsplit(db).path)
    return db


_ACTIVE: AdminPolicy | None = None
_LOCK = threading.Lock()


def activate(policy: AdminPolicy) -> None:
    """Make ``policy`` the one secret references of this process are resolved by
    (``Home.open`` calls it: a process serves one home)."""
    global _ACTIVE
    with _LOCK:
        _ACTIVE = policy


def active() -> AdminPolicy:
    """This process's policy: the last activated one (``Home.open`` activates its home's).

    Raises:
        ConnectorError: this process has opened no streamjob home, so no admin's rules say
            what a secret reference may read (a job's references are resolved in the
            process that opened the home, before Spark's workers see them).
    """
    if _ACTIVE is None:
        raise ConnectorError("secret references are resolved under the rules of a streamjob "
                             "home, and this process has opened none")
    return _ACTIVE
