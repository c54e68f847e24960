"""The lines ``streamjob server`` prints about itself and its jobs (``server X: active
...``, ``standby: ...``, ``streamjob j started``), and its log file.

Each line starts with the local time, ``2026-11-25 14:30:01,123`` (milliseconds after a
comma), the form of Flink's and Kafka's log4j logs and of the WARNING/ERROR records that
Python's logging prints on the same terminal (:func:`streamjob.cli.app.configure_logging`),
so one server's output reads as one log. Every line, and every WARNING or ERROR record
of the process, is also appended to ``<home>/logs/server.log`` (:func:`server_log`).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Callable

from ..home import Home

#: The log file of ``streamjob server`` under the home.
SERVER_LOG = Path("logs") / "server.log"
#: The format of a log record in that file (as on the terminal).
RECORD_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def server_log(home: Home) -> Path:
    """``<home>/logs/server.log``."""
    return home.root / SERVER_LOG


def stamp(now: float | None = None) -> str:
    """``now`` (seconds since the epoch; default: the current time) as local time
    ``YYYY-MM-DD HH:MM:SS,mmm``, the form of Python logging's ``asctime``."""
    now = time.time() if now is None else now
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"


class ServerLog:
    """A callable that prints a lifecycle line with its :func:`stamp` first and appends
    the same line to ``path`` (its directory created).

    Args:
        path: the log file (appended to; opened once, line-buffered).
        echo: where lines are printed (``click.echo`` in the CLI).

    :meth:`attach` also sends the process's WARNING and ERROR records to the file.
    """

    def __init__(self, path: Path, echo: Callable[[str], None]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._echo = echo
        self._file = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - closed by close()
        self._lock = threading.Lock()
        self._handler: logging.Handler | None = None

    def __call__(self, line: str) -> None:
        text = f"{stamp()} {line}"
        with self._lock:
            if not self._file.closed:
                self._file.write(text + "\n")
        self._echo(text)

    def attach(self) -> "ServerLog":
        """Append the root logger's records (WARNING and above unless --debug) to the
        file too, as :data:`RECORD_FORMAT`. Returns self."""
        handler = logging.FileHandler(self.path, encoding="utf-8")
        handler.setFormatter(logging.Formatter(RECORD_FORMAT))
        logging.getLogger().addHandler(handler)
        self._handler = handler
        return self

    def close(self) -> None:
        """Detach from logging and close the file."""
        if self._handler is not None:
            logging.getLogger().removeHandler(self._handler)
            self._handler.close()
            self._handler = None
        with self._lock:
            self._file.close()
