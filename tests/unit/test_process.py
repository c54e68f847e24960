"""streamjob/process.py: whether a process lives, the one answer the lease, the
ZooKeeper backend's job registrations and the class-data sharing archive all use."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from streamjob.process import pid_alive

pytestmark = pytest.mark.unit


def test_a_live_process_a_reaped_one_and_values_that_are_no_pid():
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(30)
    assert not pid_alive(child.pid)  # exited and reaped
    for value in (None, "123", 0, -1, True, 1.5):
        assert not pid_alive(value)
