"""CEP across a SIGKILL (issue 18, "Done when"): ``streamjob run FILE`` with a PATTERN job
over a Kafka stream with event time is SIGKILLed after a few checkpoints, with partial
matches and buffered events in its state; the rest of the events arrive; the same file
runs again until idle. The sink holds exactly the matches the batch computation finds
(:mod:`.cep_events`): none lost, none doubled."""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay

from .cep_events import QUERY, batch_matches, encode, events, sentinels, table_matches
from .conftest import Cli, kill_group, wait_for

pytestmark = [pytest.mark.system, pytest.mark.slow]  # two `streamjob run` processes

SCRIPT = """
CREATE STREAM IF NOT EXISTS cep_k (id INT, cnt INT, ts TIMESTAMP)
TBLPROPERTIES("topic"="cep_k", "kafka.broker.list"="${{BROKER}}", "format"="json",
              "watermark.column"="ts", "watermark.delay"="0 seconds");
CREATE TABLE IF NOT EXISTS cep_kt (id INT, cnt INT, ts TIMESTAMP, last_cnt INT) STORED AS PARQUET;
CREATE STREAMJOB IF NOT EXISTS cep_kj AS ("{query}")
JOBPROPERTIES("morphling.job.checkpoint.interval"="0",
              "morphling.job.max.records.per.batch"="20");
START STREAMJOB cep_kj;
"""


def test_sigkill_and_restart_gives_exactly_the_batch_matches(tmp_path, broker):
    cli = Cli(tmp_path / "home", broker.bootstrap)
    script = tmp_path / "cep.sql"
    script.write_text(SCRIPT.format(query=QUERY.format(table="cep_kt", stream="cep_k")))
    create_topic(broker.bootstrap, "cep_k", 1)
    evs = events(240, seed=1818)
    replay(broker.bootstrap, "cep_k", encode(evs[:140]))

    proc = cli.popen("run", str(script), BROKER=broker.bootstrap)
    try:
        def progressed():
            ids = list(cli.last_checkpoints().values())
            return ids and (ids[0] or -1) >= 2

        wait_for(progressed, 600, "3 checkpoints of the CEP job")
    finally:
        kill_group(proc, signal.SIGKILL)
    [job] = cli.json("list")
    assert job["last_checkpoint"] >= 2  # killed with state; the rest of the stream follows
    location = cli.home / "warehouse" / "default" / "cep_kt"
    before = table_matches(str(location)) if location.is_dir() else Counter()
    read = cli.json("checkpoints", "default.cep_kj")[-1]["source_offsets"]["cep_k"]["0"]

    replay(broker.bootstrap, "cep_k", encode(evs[140:]))
    for s in sentinels(evs[-1]["ts"]):
        replay(broker.bootstrap, "cep_k", encode([s]))
    res = cli.run("run", str(script), "--until-idle", BROKER=broker.bootstrap)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr

    expected = batch_matches(evs)
    assert sum(expected.values()) >= 10, "the events should hold matches"
    assert table_matches(str(location)) == expected
    # matches whose first event was read before the last checkpoint recorded at the kill
    # and that were written after it: the restart never reads those events again (it
    # resumes at or after that checkpoint's offsets), so only the partial matches restored
    # from the checkpoint's state can have produced them
    started = Counter({m: n for m, n in expected.items() if m[2] < evs[read]["ts"]})
    assert started - before, "no match spans the kill: the test would not see lost state"
