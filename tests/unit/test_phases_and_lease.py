"""Start-up phase marks (streamjob/phases.py) and the lease timing rules of
``streamjob server`` (streamjob/manager/lease.py), issue 19."""

from __future__ import annotations

import time
import uuid

import pytest

from streamjob import phases
from streamjob.manager.lease import renew_every_ms

pytestmark = pytest.mark.unit


def test_marks_go_to_the_phases_file_once_per_phase_and_job(tmp_path, monkeypatch):
    path = tmp_path / "phases.jsonl"
    monkeypatch.setenv(phases.PHASES_ENV, str(path))
    job = f"default.j{uuid.uuid4().hex[:6]}"
    before = time.time()
    assert phases.mark("plan done", job) is True
    assert phases.mark("plan done", job) is False  # a failover's second plan is not cold
    assert phases.mark("first commit", job, at=before + 1.5) is True
    marks = phases.read(str(path))
    assert [(m["phase"], m["job"]) for m in marks] == [("plan done", job), ("first commit", job)]
    assert marks[0]["at"] >= before and marks[1]["at"] == before + 1.5
    started = phases.process_started_at()
    assert started <= before and before - started < 24 * 3600  # this process, not boot
    assert abs(marks[1]["since_start_s"] - (before + 1.5 - started)) < 1e-3
    path.write_text(path.read_text() + '{"pid": 1, "pha')  # a writer killed mid-line
    assert len(phases.read(str(path))) == 2
    assert phases.read(str(tmp_path / "none.jsonl")) == []


def test_lease_renewal_period_defaults_and_bounds():
    assert renew_every_ms(10_000, None, 1.0) == 1000   # every second
    assert renew_every_ms(1500, None, 1.0) == 500      # a third of a short TTL
    assert renew_every_ms(3000, 700, 1.0) == 700
    assert renew_every_ms(3000, 1500, 1.0) == 1500     # half the TTL: allowed
    with pytest.raises(ValueError, match="at most half"):
        renew_every_ms(3000, 1501, 1.0)                 # one missed renewal would fence
    for bad in (0, -5, True, 1.5):
        with pytest.raises(ValueError):
            renew_every_ms(3000, bad, 1.0)
