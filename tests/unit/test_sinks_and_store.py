"""The SQL sink's exactly-once commit, file-table manifests and checkpoint purge safety."""

import json

import pytest
import sqlalchemy as sa

from streamjob.checkpoint import store
from streamjob.connectors.files.table import committed_files
from streamjob.connectors.spec import SqlTableSpec
from streamjob.connectors.sql.sink import SqlSink
from streamjob.exceptions import CheckpointError, ConnectorError, SchemaMismatch

pytestmark = pytest.mark.component

COLS = [{"name": "carrier", "type": "string"}, {"name": "month", "type": "int"},
        {"name": "n", "type": "bigint"}]


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sink.db'}"
        return
    import uuid

    schema = f"sj_sink_{uuid.uuid4().hex[:8]}"
    base = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    eng = sa.create_engine(base)
    with eng.begin() as c:
        c.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    yield f"{base}?options=-csearch_path%3D{schema}"
    with eng.begin() as c:
        c.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    eng.dispose()


def rows(url, table="t"):
    eng = sa.create_engine(url)
    with eng.connect() as c:
        out = sorted(tuple(r) for r in c.execute(sa.text(f"select * from {table}")))
    eng.dispose()
    return out


def test_exactly_once_upsert_skips_replayed_batches(url):
    sink = SqlSink(SqlTableSpec(url, "t", ("carrier", "month")), COLS, "uid1", True, True)
    sink.prepare()
    assert sink.write_batch([{"carrier": "AA", "month": 1, "n": 1}], 0) == 1
    assert sink.write_batch([{"carrier": "AA", "month": 1, "n": 5}, {"carrier": "UA", "month": 1, "n": 2}], 1) == 2
    # a replay of batch 1 (crash after the sink committed, before Spark's commit marker)
    assert sink.write_batch([{"carrier": "AA", "month": 1, "n": 99}], 1) == 0
    assert rows(url) == [("AA", 1, 5), ("UA", 1, 2)]
    assert sink.last_committed() == 1
    sink.purge_markers()
    assert sink.last_committed() is None


def test_append_without_marker_is_at_least_once(url):
    sink = SqlSink(SqlTableSpec(url, "t", ()), COLS, "uid2", False, False)
    sink.prepare()
    sink.write_batch([{"carrier": "AA", "month": 1, "n": 1}], 0)
    sink.write_batch([{"carrier": "AA", "month": 1, "n": 1}], 0)
    assert rows(url) == [("AA", 1, 1), ("AA", 1, 1)]


def test_existing_table_with_other_columns_is_refused(url):
    eng = sa.create_engine(url)
    with eng.begin() as c:
        c.execute(sa.text("create table t (carrier text, other int)"))
    eng.dispose()
    with pytest.raises(SchemaMismatch, match=r"column 'month' is missing.*column 'n' is missing"):
        SqlSink(SqlTableSpec(url, "t", ()), COLS, "u", True, False).prepare()


def test_unreachable_database_names_the_address():
    sink = SqlSink(SqlTableSpec("postgresql+psycopg://postgres@127.0.0.1:1/x", "t", ()), COLS, "u", True, False)
    with pytest.raises(ConnectorError, match="127.0.0.1:1"):
        sink.prepare()


def test_committed_files_follow_the_manifest(tmp_path):
    (tmp_path / "_spark_metadata").mkdir()
    for name in ("a.parquet", "b.parquet", "crashed.parquet"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "_spark_metadata" / "0").write_text(
        "v1\n" + json.dumps({"path": f"file://{tmp_path}/a.parquet", "action": "add"}) + "\n")
    (tmp_path / "_spark_metadata" / "1").write_text(
        "v1\n" + json.dumps({"path": f"file://{tmp_path}/b.parquet", "action": "add"}) + "\n")
    assert [p.name for p in committed_files(str(tmp_path))] == ["a.parquet", "b.parquet"]


def test_purge_never_leaves_the_checkpoint_root(tmp_path):
    root = tmp_path / "checkpoints"
    job = root / "default" / "j"
    (job / "commits").mkdir(parents=True)
    outside = tmp_path / "precious"
    outside.mkdir()
    with pytest.raises(CheckpointError, match="not inside the checkpoint root"):
        store.purge(str(root / ".." / "precious"), str(root))
    with pytest.raises(CheckpointError):
        store.purge(str(root), str(root))
    assert outside.exists()
    assert store.purge(str(job), str(root)) is True
    assert not job.exists() and root.exists()
    assert store.purge(str(job), str(root)) is False


def test_trim_logs_keeps_the_retained_batches(tmp_path):
    for log in ("offsets", "commits"):
        (tmp_path / log).mkdir()
        for i in range(8):
            (tmp_path / log / str(i)).write_text("x")
            (tmp_path / log / f".{i}.crc").write_text("x")
    store.trim_logs(str(tmp_path), 3)
    # the offset log keeps the entry before the oldest retained checkpoint (Spark reads it)
    assert store.log_ids(str(tmp_path), "offsets") == [2, 3, 4, 5, 6, 7]
    assert store.log_ids(str(tmp_path), "commits") == [3, 4, 5, 6, 7]
    assert not (tmp_path / "commits" / ".2.crc").exists()


def test_a_hadoop_uri_in_a_process_without_spark_is_a_clear_error():
    """The checkpoint store on a non-local URI (``viewfs://``) in a process that hosts no
    Spark session and has no starter (a unit test's): a CheckpointError saying such a
    root is reached through the Spark session of a process that runs jobs
    (tests/integration/test_cluster.py checks the Hadoop layer itself)."""
    with pytest.raises(CheckpointError, match="through the Spark session"):
        store.log_ids("viewfs://sjnone/ck/default/job", "commits")
