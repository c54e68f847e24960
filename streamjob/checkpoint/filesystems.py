"""The file systems of checkpoint directories and savepoint folders (DESIGN §4): local
paths and ``file:`` URIs through os calls (:class:`_LocalFs`), any other Hadoop URI
(``hdfs://``, ``s3a://``, ``abfs://``, ``viewfs://`` ...) through Hadoop's ``FileSystem``
in the JVM of the process's Spark session (:class:`_HadoopFs`), the file system Spark
itself writes checkpoints with. :func:`filesystem` picks one; :mod:`.store` builds the
checkpoint operations on them.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

from ..exceptions import CheckpointError
from ..home import is_local_uri


def local_path(uri: str) -> Path:
    """The local path of a plain path or a ``file:`` URI (``file:///a/b`` -> ``/a/b``)."""
    return Path(urlparse(uri).path if uri.startswith("file:") else uri)


def join_uri(uri: str, *parts: str) -> str:
    """``uri`` with ``parts`` appended, ``/``-separated (any scheme: local, hdfs:, s3a:)."""
    return "/".join([uri.rstrip("/"), *parts])


def os_reason(exc: Exception) -> str:
    """The operating system's reason of an ``OSError`` (``No such file or directory``),
    else the exception's text: the end of a :class:`CheckpointError` message."""
    return getattr(exc, "strerror", None) or str(exc)


class _LocalFs:
    """Checkpoint files on the local file system (plain paths and ``file:`` URIs)."""

    def exists(self, uri: str) -> bool:
        return local_path(uri).exists()

    def list_names(self, uri: str) -> list[str]:
        d = local_path(uri)
        return [p.name for p in d.iterdir()] if d.is_dir() else []

    def delete(self, uri: str) -> bool:
        try:
            local_path(uri).unlink()
            return True
        except FileNotFoundError:
            return False

    def rename(self, src: str, dst: str) -> None:
        """Rename a file or folder (atomic on one file system); OSError if ``dst`` exists."""
        import os

        if local_path(dst).exists():
            raise FileExistsError(f"{dst} exists")
        os.rename(local_path(src), local_path(dst))

    def read_text(self, uri: str) -> str:
        return local_path(uri).read_text()

    def mtime(self, uri: str) -> float:
        return local_path(uri).stat().st_mtime

    def is_dir(self, uri: str) -> bool:
        return local_path(uri).is_dir()

    def copy(self, src: str, dst: str) -> None:
        """Copy one file, creating the target's folders owner-only; OSError (e.g.
        FileNotFoundError) if ``src`` is gone."""
        target = local_path(dst)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        shutil.copyfile(local_path(src), target)

    def write_text(self, uri: str, text: str) -> None:
        """Write ``text`` atomically (a temp file renamed over ``uri``), creating the
        directory owner-only."""
        import os

        path = local_path(uri)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    def write_new(self, uri: str, text: str) -> bool:
        """Write ``text`` as a new file, atomically (a temp file renamed in without
        replacing); False if the file exists already."""
        import os
        import uuid

        path = local_path(uri)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # fails if the file exists: never overwrite Spark's entry
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links
            if path.exists():
                return False
            os.rename(tmp, path)
            return True
        finally:
            tmp.unlink(missing_ok=True)
        return True


class _HadoopFs:
    """Checkpoint files on a Hadoop file system, through the JVM of the Spark session
    (``org.apache.hadoop.fs.FileSystem`` with Spark's Hadoop configuration). JVM errors
    are raised as OSError, like the local file system's."""

    def __init__(self, spark) -> None:
        self._jvm = spark._jvm
        self._conf = spark._jsc.hadoopConfiguration()

    def _call(self, uri: str, op):
        from py4j.protocol import Py4JError

        try:
            path = self._jvm.org.apache.hadoop.fs.Path(uri)
            return op(path.getFileSystem(self._conf), path)
        except Py4JError as exc:
            text = str(getattr(exc, "java_exception", None) or exc).strip().splitlines()
            raise OSError(f"{uri}: {text[0] if text else type(exc).__name__}") from None

    def exists(self, uri: str) -> bool:
        return bool(self._call(uri, lambda fs, p: fs.exists(p)))

    def list_names(self, uri: str) -> list[str]:
        def ls(fs, p):
            if not fs.exists(p) or not fs.getFileStatus(p).isDirectory():
                return []
            return [st.getPath().getName() for st in fs.listStatus(p)]
        return list(self._call(uri, ls))

    def delete(self, uri: str, recursive: bool = False) -> bool:
        return bool(self._call(uri, lambda fs, p: fs.delete(p, recursive)))

    def rename(self, src: str, dst: str) -> None:
        """Hadoop's ``FileSystem.rename`` (atomic for a folder on HDFS); OSError if it
        refuses (e.g. ``dst`` exists)."""
        def rename(fs, p):
            target = self._jvm.org.apache.hadoop.fs.Path(dst)
            if fs.exists(target) or not fs.rename(p, target):
                raise OSError(f"{src}: cannot rename it to {dst}")
        self._call(src, rename)

    def read_text(self, uri: str) -> str:
        def read(fs, p):
            stream = fs.open(p)
            try:
                return self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
            finally:
                stream.close()
        return str(self._call(uri, read))

    def mtime(self, uri: str) -> float:
        return self._call(uri, lambda fs, p: fs.getFileStatus(p).getModificationTime()) / 1000

    def is_dir(self, uri: str) -> bool:
        return bool(self._call(uri, lambda fs, p: fs.exists(p) and fs.getFileStatus(p).isDirectory()))

    def copy(self, src: str, dst: str) -> None:
        """Copy one file with Hadoop's ``FileUtil.copy`` (target overwritten, source
        kept); OSError if ``src`` is gone or the copy fails."""
        def copy(fs, p):
            target = self._jvm.org.apache.hadoop.fs.Path(dst)
            if not fs.exists(p):
                raise OSError(f"{src}: No such file or directory")
            ok = self._jvm.org.apache.hadoop.fs.FileUtil.copy(
                fs, p, target.getFileSystem(self._conf), target, False, True, self._conf)
            if not ok:
                raise OSError(f"{src}: cannot copy it to {dst}")
        self._call(src, copy)

    def write_text(self, uri: str, text: str) -> None:
        """Write ``text`` to ``uri`` (overwriting it): a temp file beside it, then renamed
        (Hadoop's rename does not replace, so the old file is deleted first)."""
        data = bytearray(text.encode())

        def write(fs, p):
            tmp = self._jvm.org.apache.hadoop.fs.Path(p.getParent(), "." + p.getName() + ".tmp")
            out = fs.create(tmp, True)
            try:
                out.write(data)
            finally:
                out.close()
            fs.delete(p, False)
            if not fs.rename(tmp, p):
                raise OSError(f"{uri}: cannot rename {tmp} over it")
        self._call(uri, write)
    def write_new(self, uri: str, text: str) -> bool:
        """Write ``text`` as a new file: a temp file beside it, renamed in (Hadoop's
        ``rename`` does not replace an existing file); False if the file exists."""
        import uuid

        def write(fs, p):
            if fs.exists(p):
                return False
            tmp = self._jvm.org.apache.hadoop.fs.Path(p.getParent(),
                                                      f".{p.getName()}.{uuid.uuid4()}.tmp")
            out = fs.create(tmp, False)
            try:
                out.write(bytearray(text.encode("utf-8")))
            finally:
                out.close()
            if not fs.rename(tmp, p):
                fs.delete(tmp, False)
                return False
            return True
        return bool(self._call(uri, write))


_LOCAL = _LocalFs()


def reachable_here(uri: str) -> bool:
    """True if this process can reach ``uri``'s file system: a local path or ``file:``
    URI, or a Hadoop URI in a process that hosts a Spark session (:func:`filesystem`
    raises for the others)."""
    return is_local_uri(uri) or _session() is not None


def _session():
    """The process's Spark session, or None (it hosts none)."""
    from ..spark import session

    return getattr(session, "_spark", None)


#: What starts a Spark session in a process that hosts none, on the first operation on
#: a Hadoop URI (:func:`start_on_demand`); None: such an operation raises.
_starter: Callable[[], Any] | None = None


def start_on_demand(starter: Callable[[], Any] | None) -> None:
    """Let :func:`filesystem` start a Spark session with ``starter`` (returns the
    session) the first time this process, which hosts none, needs a Hadoop URI: a
    client (``streamjob -e``) that drops a job or restores a checkpoint on an
    ``hdfs://`` root then reaches it through Hadoop's ``FileSystem`` in its own driver
    JVM, as the job manager does. ``None`` withdraws it."""
    global _starter
    _starter = starter


def filesystem(uri: str):
    """The file system of ``uri``: local os calls, or Hadoop's through the process's
    Spark session (started first by the :func:`start_on_demand` starter if it has none).

    Raises:
        CheckpointError: a non-local URI in a process without a Spark session and no
            starter; StreamJobError: the starter's Spark did not start.
    """
    if is_local_uri(uri):
        return _LOCAL
    spark = _session()
    if spark is None and _starter is not None:
        spark = _starter()
    if spark is None:
        raise CheckpointError(
            f"checkpoint directory {uri} is on a Hadoop file system, which streamjob reaches "
            "through the Spark session of a process that runs jobs (streamjob server, "
            "run, shell), and none runs here; local paths and file: URIs work anywhere")
    return _HadoopFs(spark)
