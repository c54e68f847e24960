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
"""

from __future__ import annotations

import os
import sys

RUNNER_MODULE = "pyspark.sql.streaming.python_streaming_source_runner"
#: What a runner meets when the JVM closed its socket first.
SOCKET_GONE = (EOFError, BrokenPipeError, ConnectionResetError)


def _in_runner() -> bool:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == RUNNER_MODULE


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
    """Install :func:`quiet_excepthook` if this process is a streaming-source runner and
    not debugging; returns True if installed."""
    if not _in_runner() or os.environ.get("STREAMJOB_DEBUG"):
        return False
    sys.excepthook = quiet_excepthook
    return True
