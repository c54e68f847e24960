"""Issue 34, the checkpoint side (streamjob/checkpoint/watermark.py, entries.py): reading
whether the newest committed micro-batch left a no-data batch to run, writing that
batch's offset log entry before a restart, and which files a file stream has committed.

The entries are written as Spark 4.3 writes them (copied from a real checkpoint of a CEP
job over a file stream: ``v1``, the metadata JSON, one line per source; no trailing
newline). tests/integration/test_until_idle_watermark.py runs the same against Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamjob.checkpoint import entries, store
from streamjob.checkpoint.watermark import last_step, schedule_released_batch
from streamjob.manager.idle import ReleasedOutput

pytestmark = pytest.mark.unit

CONF = {"spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
        "spark.sql.streaming.multipleWatermarkPolicy": "min", "spark.sql.shuffle.partitions": "2"}
HOUR = 1704113999000  # 2024-01-01T12:59:59Z in ms


def offsets(ck: Path, batch: int, watermark: int, log_offset: int, ts: int = 1795791629602) -> None:
    meta = {"batchWatermarkMs": watermark, "batchTimestampMs": ts, "conf": CONF}
    (ck / "offsets").mkdir(parents=True, exist_ok=True)
    (ck / "offsets" / str(batch)).write_text(
        "\n".join(["v1", json.dumps(meta, separators=(",", ":")),
                   json.dumps({"logOffset": log_offset}), "-"]))


def commit(ck: Path, batch: int, next_watermark: int) -> None:
    (ck / "commits").mkdir(parents=True, exist_ok=True)
    (ck / "commits" / str(batch)).write_text(
        "v1\n" + json.dumps({"nextBatchWatermarkMs": next_watermark}))


def stateful(ck: Path) -> None:
    (ck / "state" / "0" / "0").mkdir(parents=True)


def test_a_batch_that_moved_the_watermark_of_a_stateful_job_releases(tmp_path):
    ck = tmp_path / "ck"
    assert last_step(str(ck)) is None
    offsets(ck, 0, 0, 0)
    commit(ck, 0, HOUR)
    step = last_step(str(ck))
    assert (step.batch_id, step.watermark_ms, step.next_ms) == (0, 0, HOUR)
    assert not step.stateful and not step.releases  # stateless: Spark runs no such batch
    stateful(ck)
    assert last_step(str(ck)).releases
    offsets(ck, 1, HOUR, 0)  # its no-data batch begun ...
    assert last_step(str(ck)).constructed
    commit(ck, 1, HOUR)  # ... and committed: nothing left
    step = last_step(str(ck))
    assert step.batch_id == 1 and not step.releases and not step.constructed


def test_a_restart_writes_the_no_data_batch_as_spark_would(tmp_path):
    ck = tmp_path / "ck"
    stateful(ck)
    offsets(ck, 0, 0, 0)
    commit(ck, 0, 1000)
    offsets(ck, 1, 1000, 0)
    commit(ck, 1, 1000)
    offsets(ck, 2, 1000, 1, ts=1795791640939)
    commit(ck, 2, HOUR)
    (ck / "offsets" / ".3.crc").write_text("stale")  # left by a truncation
    assert schedule_released_batch(str(ck), now_ms=1795791700000) == 3
    lines = (ck / "offsets" / "3").read_text().split("\n")
    before = (ck / "offsets" / "2").read_text().split("\n")
    assert lines[0] == "v1" and lines[2:] == before[2:]  # the same source offsets
    meta = json.loads(lines[1])
    assert meta == {"batchWatermarkMs": HOUR, "batchTimestampMs": 1795791700000, "conf": CONF}
    assert list(meta) == list(json.loads(before[1]))  # Spark's key order kept
    assert not (ck / "offsets" / ".3.crc").exists()
    assert store.log_ids(str(ck), "offsets") == [0, 1, 2, 3]
    assert not [p for p in (ck / "offsets").iterdir() if p.name.endswith(".tmp")]
    # begun now: a second start writes nothing, and never over the entry
    assert schedule_released_batch(str(ck)) is None
    assert (ck / "offsets" / "3").read_text().split("\n") == lines


def test_nothing_is_written_when_nothing_is_pending(tmp_path):
    ck = tmp_path / "ck"
    assert schedule_released_batch(str(ck)) is None  # a new job
    offsets(ck, 0, 0, 0)
    commit(ck, 0, HOUR)
    assert schedule_released_batch(str(ck)) is None  # stateless
    stateful(ck)
    offsets(ck, 1, HOUR, 1)  # a data batch in flight: Spark runs it again
    assert schedule_released_batch(str(ck)) is None
    commit(ck, 1, HOUR)  # did not move the watermark
    assert schedule_released_batch(str(ck)) is None
    assert store.log_ids(str(ck), "offsets") == [0, 1]
    # nothing released: the released output is written, at once and without a query
    released = ReleasedOutput(str(ck), None, lambda: None)
    assert released.written()


def test_the_timestamp_never_goes_back(tmp_path):
    ck = tmp_path / "ck"
    stateful(ck)
    offsets(ck, 0, 0, 0, ts=2_000_000_000_000)
    commit(ck, 0, HOUR)
    assert schedule_released_batch(str(ck), now_ms=1_000) == 1
    assert json.loads((ck / "offsets" / "1").read_text().split("\n")[1])["batchTimestampMs"] \
        == 2_000_000_000_000


def test_file_stream_files_are_committed_by_the_source_position_in_the_offset_log(tmp_path):
    """The file source's log ids are its own: query batch 1 (no data) and 2 (the second
    file) must not make file 2, in the source's log entry 1, look committed at batch 1."""
    ck = tmp_path / "ck"
    src = ck / "sources" / "0"
    src.mkdir(parents=True)
    for n in (0, 1):
        (src / str(n)).write_text(
            "v1\n" + json.dumps({"path": f"file:///in/part-{n}.json", "timestamp": 1,
                                 "batchId": n}))
    offsets(ck, 0, 0, 0)
    commit(ck, 0, HOUR)
    offsets(ck, 1, HOUR, 0)
    commit(ck, 1, HOUR)  # the no-data batch: the source still at its entry 0
    offsets(ck, 2, HOUR, 1)  # the second file's batch, running
    assert entries.committed_source_files(str(ck)) == {"file:///in/part-0.json"}
    commit(ck, 2, HOUR)
    assert entries.committed_source_files(str(ck)) == {"file:///in/part-0.json",
                                                     "file:///in/part-1.json"}
