"""Table functions on real Spark and the real broker (issue 31, docs/functions.md "Table
functions"): a Python UDTF registered by CREATE FUNCTION ... RETURNS TABLE from the home's
functions/ directory explodes records of a Kafka stream in a job's LATERAL, into SQLite,
and the sink equals pandas' explode of the same input; a UDTF that raises fails the job
with an error naming it, the exception, the failing row's arguments and the batch's Kafka
offsets, with no trace; a shell preview calls it too."""

from __future__ import annotations

import json
import uuid

import pandas as pd
import pytest
import sqlalchemy as sa

from streamjob.catalog import Catalog
from streamjob.exceptions import JobError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.manager.job_manager import JobManager
from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay

pytestmark = pytest.mark.spark

MODULE = '''
class Words:
    def eval(self, text: str):
        for word in (text or "").split():
            if word == "boom":
                raise ValueError(f"no booms: {text}")
            yield word, len(word)
'''

ROWS = [{"id": i, "text": " ".join(f"w{i}x{j}" for j in range(i % 4))} for i in range(200)]


@pytest.fixture
def world(tmp_path, broker):
    home = Home.open(tmp_path / "home", {"spark.master": "local[2]",
                                         "spark.sql.shuffle.partitions": "2"})
    (tmp_path / "home" / "functions").mkdir()
    (tmp_path / "home" / "functions" / "word_udtfs.py").write_text(MODULE)
    catalog = Catalog(home.catalog_url)
    manager = JobManager(catalog, home)
    ex = Executor(catalog, home, manager, {"morphling.job.checkpoint.interval": "0"})
    yield ex, broker
    for uid in list(manager.runners):
        manager.stop(uid)
    catalog.close()


def _script(ex, broker, tmp_path, rows, extra: str = "", partitions: int = 2) -> tuple[str, str]:
    topic = f"udtf_{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, partitions)
    replay(broker.bootstrap, topic, [json.dumps(r).encode() for r in rows], partitions)
    db = tmp_path / "out.db"
    script = f"""
    CREATE STREAM lines (id BIGINT, text STRING)
      TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
    CREATE TABLE words (id BIGINT, word STRING, n INT)
      TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{db}");
    CREATE FUNCTION explode_words AS 'word_udtfs:Words' RETURNS TABLE (word STRING, n INT);
    CREATE STREAMJOB j AS ("insert into words select l.id, t.word, t.n from lines l,
      lateral explode_words(l.text) as t(word, n)") {extra};
    START STREAMJOB j;"""
    for stmt in parse_script(script):
        ex.execute(stmt)
    return topic, f"sqlite:///{db}"


def test_a_udtf_over_kafka_into_sqlite_equals_pandas_explode(world, tmp_path):
    ex, broker = world
    _, url = _script(ex, broker, tmp_path, ROWS)
    ex.manager.wait_until_idle(timeout=240)
    got = pd.read_sql("select id, word, n from words", sa.create_engine(url))
    frame = pd.DataFrame(ROWS)
    frame["word"] = frame["text"].str.split()
    want = frame.explode("word").dropna(subset=["word"])[["id", "word"]]
    want["n"] = want["word"].str.len()
    key = ["id", "word"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True),
                                  want.sort_values(key).reset_index(drop=True),
                                  check_dtype=False)
    assert len(got) == sum(i % 4 for i in range(200))
    desc = dict(ex.execute(parse_script("DESCRIBE FUNCTION explode_words")[0]).rows)
    assert desc["jobs"] == "default.j"
    assert desc["signature"] == "explode_words(text) -> table(word string, n int)"


def test_a_raising_udtf_fails_the_job_naming_function_row_and_kafka_input(world, tmp_path):
    ex, broker = world
    rows = [dict(r) for r in ROWS]
    rows[41]["text"] = "a boom here"
    topic, _ = _script(ex, broker, tmp_path, rows,
                       'JOBPROPERTIES ("streamjob.failover.initial.backoff"="500")',
                       partitions=1)
    with pytest.raises(JobError):
        ex.manager.wait_until_idle(timeout=240)
    job = ex.catalog.get_job("default", "j")
    assert job.status == "FAILED"
    error = job.last_error
    assert error.startswith("[streamjob:repeated-function-error] function explode_words "
                            "raised ValueError: no booms: a boom here"), error
    assert "first failing row: explode_words(text='a boom here')" in error, error
    assert f"input topic {topic} partition 0 offsets " in error, error
    assert "[0, 200)" in error or "up to 200" in error, error
    assert "a restart cannot fix this: the function failed the same way" in error
    assert "Traceback" not in error and "File " not in error and "\tat " not in error


def test_a_shell_preview_calls_the_udtf(world, tmp_path):
    """A bare SELECT of the shell (:class:`~streamjob.client.preview.Previews`) with a
    LATERAL table function: its rows are the UDTF's."""
    from types import SimpleNamespace

    from streamjob.client.preview import Previews
    from streamjob.spark.session import spark_session

    ex, broker = world
    topic = f"udtf_{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    replay(broker.bootstrap, topic, [json.dumps(r).encode() for r in ROWS[:8]], 1)
    for stmt in parse_script(f"""
        CREATE STREAM lines (id BIGINT, text STRING) TBLPROPERTIES ("topic"="{topic}",
          "kafka.broker.list"="{broker.bootstrap}", "format"="json");
        CREATE FUNCTION explode_words AS 'word_udtfs:Words' RETURNS TABLE (word STRING, n INT);
        """):
        ex.execute(stmt)
    lines: list[str] = []
    session = SimpleNamespace(catalog=ex.catalog, home=ex.home, properties={},
                              database="default")
    previews = Previews(session, lambda: spark_session(ex.home), echo=lambda x="": lines.append(x))
    previews.reset = "earliest"
    previews.run("select l.id, t.word, t.n from lines l join lateral explode_words(l.text) t "
                 "where l.id = 3 limit 3", as_json=True)
    rows = [json.loads(x) for x in lines if x.startswith("{")]
    assert sorted(r["word"] for r in rows) == ["w3x0", "w3x1", "w3x2"], lines
    assert {r["n"] for r in rows} == {4} and {r["id"] for r in rows} == {3}
