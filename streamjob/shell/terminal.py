"""Process-level plumbing of the interactive shell: who handles Ctrl-C, and log lines
that must not overwrite the prompt."""

from __future__ import annotations

import logging
import signal
import sys
import threading


def restore_sigint() -> None:
    """Put back Python's Ctrl-C handler: pyspark installs one that cancels every Spark
    job of the process (the jobs hosted here too) when its SparkContext starts."""
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class _CurrentStderr(logging.StreamHandler):
    """A stream handler that writes to whatever ``sys.stderr`` is now, so that log lines
    from job threads go through prompt_toolkit's patched stdout above the prompt."""

    @property
    def stream(self):  # noqa: D401 - a property
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def follow_stderr() -> None:
    """Make the root logger's stderr handlers follow ``sys.stderr`` (see
    :class:`_CurrentStderr`)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if type(handler) is logging.StreamHandler and handler.stream in (sys.stderr, sys.__stderr__):
            new = _CurrentStderr()
            new.setFormatter(handler.formatter)
            new.setLevel(handler.level)
            root.removeHandler(handler)
            root.addHandler(new)
