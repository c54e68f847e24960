"""A SIGKILL while Spark writes a checkpoint entry atomically leaves its temp file (and
checksum) in ``offsets``; Spark 4.3 then refuses to start the query at batch 0 because
the directory is not empty (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY), for ever. The
chaos test hit it (a kill 1.1 s after another job's offsets). streamjob removes such
files before each start (streamjob/checkpoint/store.py remove_torn_writes)."""

from __future__ import annotations

import pytest

from streamjob.checkpoint import store

pytestmark = pytest.mark.unit


def test_only_the_temp_files_of_torn_writes_are_removed(tmp_path):
    ck = tmp_path / "ck"
    (ck / "offsets").mkdir(parents=True)
    (ck / "commits").mkdir()
    # what the chaos run left: the checksum of offsets/0's temp file, nothing else
    torn = ["..0.49bef7c7-8100-4a89-8f0f-95af795ed8d9.tmp.crc",
            ".0.49bef7c7-8100-4a89-8f0f-95af795ed8d9.tmp"]
    for name in torn:
        (ck / "offsets" / name).write_text("x")
    (ck / "commits" / ".3.0a1b2c3d-0000-4000-8000-000000000000.tmp").write_text("x")
    kept = {"offsets": ["0", ".0.crc", "1", ".1.crc"], "commits": ["0", ".0.crc"]}
    for log_name, names in kept.items():
        for name in names:
            (ck / log_name / name).write_text("x")
    assert sorted(store.remove_torn_writes(str(ck))) == sorted(
        [f"offsets/{n}" for n in torn] + ["commits/.3.0a1b2c3d-0000-4000-8000-000000000000.tmp"])
    for log_name, names in kept.items():
        assert sorted(p.name for p in (ck / log_name).iterdir()) == sorted(names)
    assert store.log_ids(str(ck), "offsets") == [0, 1]


def test_a_directory_without_logs_is_fine(tmp_path):
    assert store.remove_torn_writes(str(tmp_path / "none")) == []
