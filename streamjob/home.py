"""The streamjob home: where the catalog, checkpoints and warehouse live, and engine settings.

The home is ``--home``, else ``$STREAMJOB_HOME``, else ``~/.streamjob``. It holds:

- ``catalog.db``: the SQLite catalog (unless ``streamjob.catalog.url`` names another);
- ``checkpoints/<db>/<job>``: each job's Spark checkpoint directory (unless
  ``spark.morphling.taskstate.checkpoint.directory`` names another root, any Hadoop URI);
- ``warehouse/<db>/<table>``: file tables declared without LOCATION;
- ``streamjob.conf``: optional engine properties, one ``key=value`` per line (``#`` comments),
  the format of Spark's ``spark-defaults.conf``.
- ``secrets/``: files ``${file:...}`` secret references may read (owner-only;
  ``streamjob.security.secret.dirs``); ``secret.key``: the key sealing literal secrets in
  the catalog (:mod:`streamjob.security.sealed`);
- ``logs/spark.log``: what Spark's JVM and its Python workers print, unless --debug
  (:func:`streamjob.spark.session.spark_log`); ``logs/server.log``: the lines of
  ``streamjob server`` and its warnings (:mod:`streamjob.manager.serverlog`).

Engine properties (DESIGN §3) come from, lowest first: built-in defaults,
``streamjob.conf``, ``--conf k=v`` on the command line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from .exceptions import StreamJobError, ValidationError
from .properties import validate_engine
from .security.policy import AdminPolicy, activate

CHECKPOINT_DIR_KEY = "spark.morphling.taskstate.checkpoint.directory"
CATALOG_URL_KEY = "streamjob.catalog.url"

ENGINE_DEFAULTS: dict[str, str] = {
    "spark.master": "local[*]",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.morphling.zookeeper.root.path": "/morphling",
    "spark.sql.streaming.stateStore.maintenanceInterval": "5s",
}
"""Engine defaults. Four shuffle partitions keep per-batch state-store work small on one
machine; a cluster sets its own (the number is fixed per job at its first checkpoint).
State-store maintenance (snapshots, and the purge of state versions older than the
retained checkpoints) runs every 5 s instead of Spark's 60 s, so that the state on disk
follows ``morphling.checkpoint.retained`` closely."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def default_home() -> Path:
    """``$STREAMJOB_HOME`` or ``~/.streamjob``."""
    return Path(os.environ.get("STREAMJOB_HOME") or Path.home() / ".streamjob").expanduser()


def validate_name(name: str, what: str = "name") -> str:
    """A database, job or table name usable as one path segment: letters, digits and
    ``_``, not starting with a digit. Keeps DROP from ever reaching outside the
    checkpoint root (DESIGN §4).

    Raises:
        ValidationError: the name could escape a directory or is empty.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):  # not "j\n"
        raise ValidationError(
            f"invalid {what} '{name}': use letters, digits and '_' (not starting with a digit)"
        )
    return name


@dataclass(frozen=True)
class Home:
    """A resolved streamjob home and its engine configuration.

    ``conf`` holds every engine property as strings (defaults, file, then overrides).
    """

    root: Path
    conf: dict[str, str] = field(default_factory=dict)

    @classmethod
    def open(cls, root: str | os.PathLike | None = None, overrides: dict[str, str] | None = None,
             catalog_url: str | None = None) -> "Home":
        """Resolve the home directory (creating it) and load its configuration.

        Raises:
            StreamJobError: the directory cannot be created or the config file is malformed.
            PropertyError: an unknown engine property (suggests the nearest).
        """
        path = Path(root).expanduser() if root else default_home()
        try:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
            _owner_only(path, 0o700)
            for name in ("catalog.db", "catalog.db-wal", "catalog.db-shm", "catalog.db-journal",
                         "secret.key", "streamjob.conf"):
                if (path / name).is_file():
                    _owner_only(path / name, 0o600)
        except OSError as exc:
            raise StreamJobError(f"cannot create streamjob home {path}: {exc.strerror}") from None
        conf = dict(ENGINE_DEFAULTS)
        conf.update(_read_conf(path / "streamjob.conf"))
        conf.update(overrides or {})
        if catalog_url:
            conf[CATALOG_URL_KEY] = catalog_url
        validate_engine(conf)
        home = cls(path.resolve(), conf)
        policy = home.policy
        activate(policy)  # secret references of this process resolve by its rules
        default_secrets = home.root / "secrets"
        if default_secrets in policy.secret_dirs and not default_secrets.exists():
            try:
                default_secrets.mkdir(mode=0o700)
            except OSError:
                pass  # a read-only home: references into it fail when resolved, named
        return home

    @property
    def policy(self):
        """The admin's :class:`~streamjob.security.AdminPolicy` of this home: its root,
        catalog URL, checkpoint root and ``streamjob.security.*`` settings."""
        return AdminPolicy.of(self.root, self.catalog_url, self.checkpoint_root, self.conf)

    @property
    def catalog_url(self) -> str:
        """The catalog's SQLAlchemy URL (default: SQLite file ``catalog.db`` in the home)."""
        return self.conf.get(CATALOG_URL_KEY) or f"sqlite:///{self.root / 'catalog.db'}"

    @property
    def checkpoint_root(self) -> str:
        """Root URI or path under which each job's checkpoint directory lives; a relative
        path is relative to the home, never to a client's working directory."""
        root = self.conf.get(CHECKPOINT_DIR_KEY)
        if not root:
            return str(self.root / "checkpoints")
        if not urlparse(root).scheme and not os.path.isabs(os.path.expanduser(root)):
            return str((self.root / root).resolve())
        return os.path.expanduser(root) if not urlparse(root).scheme else root

    def inside_checkpoints(self, location: str) -> bool:
        """True if a local ``location`` (path or ``file:`` URI) is the checkpoint root, lies
        inside it, or holds it: DROP STREAMJOB purges directories under the root, so a file
        table there could lose its data (issue 13 point 3)."""
        root, loc = self.checkpoint_root, location
        if "\x00" in loc or urlparse(root).scheme not in ("", "file") or urlparse(loc).scheme not in ("", "file"):
            return False  # a NUL byte is refused as a location by the caller
        as_path = (lambda u: Path(urlparse(u).path if u.startswith("file:") else u).expanduser())
        r, p = as_path(root).resolve(), as_path(loc)
        p = (p if p.is_absolute() else Path.cwd() / p).resolve()
        return r == p or r in p.parents or p in r.parents

    @property
    def warehouse(self) -> Path:
        """Directory of file tables declared without LOCATION."""
        return self.root / "warehouse"

    def checkpoint_dir(self, database: str, job: str) -> str:
        """The checkpoint directory of one job: ``<root>/<db>/<job>`` (names validated)."""
        validate_name(database, "database name")
        validate_name(job, "job name")
        root = self.checkpoint_root.rstrip("/")
        return f"{root}/{database}/{job}"

    def table_location(self, database: str, table: str) -> str:
        """Default location of a file table: ``<home>/warehouse/<db>/<table>``."""
        return str(self.warehouse / validate_name(database, "database name")
                   / validate_name(table, "table name"))

    @property
    def spark_conf(self) -> dict[str, str]:
        """The ``spark.*`` settings handed to the SparkSession builder."""
        return {k: v for k, v in self.conf.items()
                if k.startswith("spark.") and not k.startswith("spark.morphling.")}


def _owner_only(path: Path, mode: int) -> None:
    """Make ``path`` owner-only (``mode``: 0700 for the home, 0600 for its catalog file,
    key and configuration; DESIGN §9): a new home is created so, and an existing one of
    this user that its group or others may read is tightened. Another user's files are
    left alone (their owner decides; opening the catalog will tell)."""
    info = path.stat()
    if info.st_mode & 0o077 and info.st_uid == os.getuid():
        path.chmod(mode)


def is_local_uri(uri: str) -> bool:
    """True for plain paths and ``file:`` URIs (which streamjob can delete with os calls)."""
    scheme = urlparse(uri).scheme
    return scheme in ("", "file") or len(scheme) == 1  # a Windows drive letter


def _read_conf(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    out = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([^=\s]+)\s*(?:=|\s)\s*(.*)$", line)
        if not m:
            raise StreamJobError(f"{path}:{n}: expected 'key=value', got '{line}'")
        out[m.group(1)] = m.group(2).strip()
    return out
