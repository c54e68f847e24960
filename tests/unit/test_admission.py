import pytest
"""The job manager's start gate (streamjob/manager/admission.py)."""

import threading

from streamjob.manager import admission
from streamjob.manager.admission import StartGate

pytestmark = pytest.mark.unit


def test_slots_bound_the_start_ups_and_free_on_release():
    gate = StartGate(2)
    stop = threading.Event()
    a, b = gate.admit(stop), gate.admit(stop)
    assert a and b
    waited = []
    t = threading.Thread(target=lambda: waited.append(gate.admit(stop)))
    t.start()
    t.join(0.3)
    assert t.is_alive() and not waited  # the third waits
    a.release()
    a.release()  # idempotent: frees one slot, not two
    t.join(5)
    assert waited and waited[0].held
    stop2 = threading.Event()
    stop2.set()
    assert gate.admit(stop2) is None  # full, and the job is being stopped: no slot


def test_a_waiting_start_gives_up_when_its_job_is_stopped():
    gate = StartGate(1)
    held = gate.admit(threading.Event())
    stop = threading.Event()
    out = []
    t = threading.Thread(target=lambda: out.append(gate.admit(stop, poll_s=0.01)))
    t.start()
    stop.set()
    t.join(5)
    assert out == [None] and held.held


def test_a_slot_is_held_at_most_start_hold_s(monkeypatch):
    gate = StartGate(1)
    slot = gate.admit(threading.Event())
    monkeypatch.setattr(admission, "START_HOLD_S", 0.0)
    slot.release_once_started(query=None)  # past the bound: released without asking Spark
    assert not slot.held
    assert gate.admit(threading.Event(), poll_s=0.01).held
