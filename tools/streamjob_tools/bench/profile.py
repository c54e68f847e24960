"""Where the time goes: an optional py-spy profile of the bench process and every process
below it (Spark's JVM starts the Python workers and the streaming source runner, so
``--subprocesses`` reaches the Kafka source's ``read`` and ``latestOffset``).

py-spy comes with the ``bench`` extra (in ``dev``, so ``make setup`` installs it); ``$PYSPY``
names another. The summary groups samples by the innermost frame's area.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Callable

AREAS = (
    ("kafka-python (fetch, record parsing)", ("(kafka/",)),
    ("pyarrow (decode, IPC)", ("(pyarrow/",)),
    ("imports (pyspark.zip compiled per process)", ("zipimport", "importlib")),
    ("pyspark (daemon, worker protocol, py4j)", ("(pyspark/", "daemon.py", "worker.py",
                                                "serializers.py", "py4j/")),
    ("streamjob", ("(streamjob/",)),
    ("sqlalchemy/sqlite", ("(sqlalchemy/", "sqlite")),
    ("socket/select (waiting on I/O)", ("socket.py", "selectors.py", "ssl.py", "threading.py")),
)


def pyspy() -> str | None:
    """The py-spy executable: ``$PYSPY``, else the one installed beside this interpreter
    (the ``bench`` extra, in ``dev``: ``make setup`` installs it), else ``py-spy`` on
    PATH; None without one."""
    import sys

    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return (os.environ.get("PYSPY") or (beside if os.access(beside, os.X_OK) else None)
            or shutil.which("py-spy"))


def start(out: Path, rate_hz: int = 100) -> Callable[[], dict] | None:
    """Start recording this process and its descendants into ``out`` (py-spy's raw
    collapsed stacks); returns a function that stops it and returns :func:`summarise`,
    or None without py-spy."""
    exe = pyspy()
    if not exe:
        return None
    proc = subprocess.Popen([exe, "record", "--pid", str(os.getpid()), "--subprocesses",
                             "--rate", str(rate_hz), "--format", "raw", "--nonblocking",
                             "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop() -> dict:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        return summarise(out)

    return stop


def summarise(path: Path, top: int = 12) -> dict:
    """Samples of a py-spy raw file by area of the innermost frame and the ``top``
    innermost functions, each with its share of all samples; {} if there is none."""
    if not path.exists():
        return {}
    leaves: Counter = Counter()
    areas: Counter = Counter()
    procs: Counter = Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit() or not stack:
            continue
        n = int(count)
        frames = stack.split(";")
        leaf = frames[-1]
        total += n
        leaves[_short(leaf)] += n
        areas[_area(leaf)] += n
        procs[_process(next((f for f in reversed(frames) if f.startswith("process ")), ""))] += n
    if not total:
        return {}
    return {"samples": total,
            "by_process": {k: round(v / total, 3) for k, v in procs.most_common(8)},
            "by_area": {k: round(v / total, 3) for k, v in areas.most_common()},
            "top_functions": [(k, round(v / total, 3)) for k, v in leaves.most_common(top)]}


def _area(frame: str) -> str:
    for name, marks in AREAS:
        if any(m in frame for m in marks):
            return name
    return "other (interpreter, stdlib)"


def _short(frame: str) -> str:
    # "func (path/to/file.py:123)" -> "func (file.py)"
    if "(" in frame and frame.endswith(")"):
        func, _, where = frame.partition(" (")
        file = where.rstrip(")").rsplit(":", 1)[0]
        parts = file.split("/")
        return f"{func} ({'/'.join(parts[-2:])})"
    return frame


def _process(frame: str) -> str:
    # py-spy --subprocesses puts "process <pid>:\"<cmdline>\"" first
    if frame.startswith("process "):
        cmd = frame.split(":", 1)[-1].strip('"')
        for mark in ("python_streaming_source_runner", "plan_data_source_read",
                     "pyspark.worker", "streamjob_tools.bench"):
            if mark in cmd:
                return mark
        return cmd[:60]
    return "?"
