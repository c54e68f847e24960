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


def _admit_in_thread(gate, stop, priority, name, order, admitted):
    """Start a thread that waits for a slot of ``gate``; once admitted it appends
    ``name`` to ``order`` and puts its Admission in ``admitted[name]``."""
    def run():
        slot = gate.admit(stop, priority=priority)
        admitted[name] = slot
        order.append(name)
        done.set()
    done = threading.Event()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, done


def test_a_recovery_goes_ahead_of_starts_that_waited_longer():
    gate = StartGate(1)
    stop = threading.Event()
    held = gate.admit(stop)
    order, admitted = [], {}
    t_new, new = _admit_in_thread(gate, stop, admission.NORMAL, "new", order, admitted)
    assert gate.await_waiting(1, 5)
    t_rec, rec = _admit_in_thread(gate, stop, admission.RECOVERY, "recovery", order, admitted)
    assert gate.await_waiting(2, 5)
    held.release()
    assert rec.wait(5)
    assert order == ["recovery"] and gate.waiting() == 1  # the new start still waits
    admitted["recovery"].release()
    assert new.wait(5)
    assert order == ["recovery", "new"]
    admitted["new"].release()
    t_new.join(5)
    t_rec.join(5)


def test_starts_of_one_class_are_admitted_in_the_order_they_came():
    gate = StartGate(1)
    stop = threading.Event()
    held = gate.admit(stop)
    order, admitted, threads = [], {}, []
    for i, name in enumerate(["a", "b", "c"]):
        threads.append(_admit_in_thread(gate, stop, admission.RECOVERY, name, order,
                                        admitted))
        assert gate.await_waiting(i + 1, 5)
    held.release()
    for name, (t, done) in zip(["a", "b", "c"], threads):
        assert done.wait(5)
        assert order[-1] == name and gate.waiting() == 3 - len(order)
        admitted[name].release()
        t.join(5)
    assert order == ["a", "b", "c"]


def test_a_stopped_head_of_the_queue_lets_the_next_one_in():
    gate = StartGate(1)
    held = gate.admit(threading.Event())
    stop_rec, stop_new = threading.Event(), threading.Event()
    order, admitted = [], {}
    t_rec, rec = _admit_in_thread(gate, stop_rec, admission.RECOVERY, "recovery", order,
                                  admitted)
    assert gate.await_waiting(1, 5)
    t_new, new = _admit_in_thread(gate, stop_new, admission.NORMAL, "new", order, admitted)
    assert gate.await_waiting(2, 5)
    stop_rec.set()  # the recovery's job is stopped while it waits: it leaves the queue
    assert rec.wait(5) and admitted["recovery"] is None
    held.release()
    assert new.wait(5) and admitted["new"].held
    t_rec.join(5)
    t_new.join(5)


@pytest.mark.parametrize("active, progress, status, past", [
    # before the first trigger: sources being initialised, offsets asked for
    (True, None, {"message": "Initializing sources", "isDataAvailable": False,
                  "isTriggerActive": False}, False),
    (True, None, {"message": "Getting offsets from KafkaStream", "isDataAvailable": False,
                  "isTriggerActive": True}, False),
    (True, None, {"message": "Writing offsets to log", "isDataAvailable": False,
                  "isTriggerActive": True}, False),
    # the first trigger planned a batch: its offsets are in the log, the batch runs
    (True, None, {"message": "Processing new data", "isDataAvailable": True,
                  "isTriggerActive": True}, True),
    # the first trigger found nothing
    (True, None, {"message": "Waiting for data to arrive", "isDataAvailable": False,
                  "isTriggerActive": False}, True),
    (True, None, {"message": "Waiting for next trigger", "isDataAvailable": False,
                  "isTriggerActive": False}, True),
    # a batch reported, or the query ended
    (True, {"batchId": 0}, {"message": "Getting offsets from x", "isTriggerActive": True}, True),
    (False, None, {"message": "Stopped", "isTriggerActive": False}, True),
])
def test_a_query_leaves_its_start_up_once_its_first_trigger_planned(active, progress,
                                                                     status, past):
    assert admission.past_start_up(active, progress, status) is past
