"""Quiet ends of pyspark's Python streaming-source runner processes.

Spark runs each Python streaming source in a ``pyspark.sql.streaming.
python_streaming_source_runner`` process that talks to the JVM over a socket. When a
query is stopped while that conversation is in flight (Spark interrupts the micro-batch
thread, which closes the socket), the runner's next read hits end of file and its
attempt to report that to the JVM fails with a broken pipe: pyspark lets that escape,
and Python prints a traceback to the terminal — after the job already stopped cleanly
(its checkpoint is intact; Spark replays the interrupted batch on the next start).

:func:`install` (called when our source module is imported inside such a runner)
makes exactly those exits quiet; every other uncaught error is printed as before, and
``--debug`` (``STREAMJOB_DEBUG=1``) keeps them all.

It also makes the connectors' log records visible in every pyspark Python process
(the source runner and the executors' Python workers, which nothing else configures):
:func:`log_to_stderr` gives the ``streamjob`` logger a WARNING handler on stderr, which
Spark passes on to the job's own stderr (e.g. a ``failOnDataLoss=false`` warning naming
the records a Kafka source skipped).
"""

from __future__ import annotations

import logging
import os
import sys

RUNNER_MODULE = "pyspark.sql.streaming.python_streaming_source_runner"
#: What a runner meets when the JVM closed its socket first.
SOCKET_GONE = (EOFError, BrokenPipeError, ConnectionResetError)


def _main_module() -> str | None:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None)


def _in_runner() -> bool:
    return _main_module() == RUNNER_MODULE


def _in_pyspark_process() -> bool:
    """A process pyspark started to run Python code: ``pyspark.daemon`` (and the workers
    it forks), ``pyspark.worker`` or a runner such as :data:`RUNNER_MODULE`."""
    return (_main_module() or "").startswith("pyspark.")


class _CurrentStderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is at the time of the record (pyspark
    swaps it while a task runs to capture worker output)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler assigns it; always follow sys.stderr
        pass


def log_to_stderr(name: str = "streamjob") -> bool:
    """Give logger ``name`` a WARNING handler on stderr (format ``streamjob <level>
    <logger>: <message>``) unless it already has a handler; records then stop at it (no
    propagation to a root handler pyspark may add). Returns True if a handler was added."""
    logger = logging.getLogger(name)
    if logger.handlers:
        return False
    handler = _CurrentStderr()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("streamjob %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.WARNING:
        logger.setLevel(logging.WARNING)
    logger.propagate = False
    return True


def quiet_excepthook(exc_type, exc, tb, default=sys.__excepthook__) -> None:
    """Swallow an uncaught error caused by the JVM closing the socket (the exception or
    the one it occurred while handling); hand anything else to ``default``."""
    seen = exc
    while seen is not None:
        if isinstance(seen, SOCKET_GONE):
            return
        seen = seen.__context__
    default(exc_type, exc, tb)


def install() -> bool:
    """In a pyspark Python process, log warnings to stderr (:func:`log_to_stderr`); then
    install :func:`quiet_excepthook` if this process is a streaming-source runner and not
    debugging; returns True if the hook was installed."""
    if _in_pyspark_process():
        log_to_stderr()
    if not _in_runner() or os.environ.get("STREAMJOB_DEBUG"):
        return False
    sys.excepthook = quiet_excepthook
    return True
