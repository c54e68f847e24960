"""File and rate sources, file tables (partitioned, every format), static tables in
stream-static joins and the console sink, through real local Spark: plan_job +
start_query in one session clone, as tests/integration/test_windows_and_derived.py.

Waits are event-driven: each step adds a file to a stream's directory (atomically, by
rename), then ``processAllAvailable()``; the rate source, which never runs dry, is polled
on its progress with a deadline. File tables are read back as Spark's batch reader or
pyarrow (only the files the sink's manifest lists) would read them.
"""

from __future__ import annotations

import json
import os
import uuid
from contextlib import contextmanager
from datetime import timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from streamjob.connectors.files.table import committed_files, read_table
from streamjob.exceptions import ValidationError
from streamjob.planner.plan import Static
from streamjob.planner.bind import bind_static
from streamjob.spark.query import table_frame

from .conftest import wait_for
from .world import SparkWorld, start_planned

pytestmark = pytest.mark.spark
#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 35

PG_URL = os.environ.get("STREAMJOB_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
ORDER_COLUMNS = ("id", "region", "amount", "day")
ORDER_DDL = "id BIGINT, region STRING, amount DOUBLE, day STRING"
# (id, region, amount, day); "region" is a region no static table has (unless it read
# a CSV header line as data), asia has no manager
ORDERS = [(i, ("eu", "us", "asia")[i % 3], i * 1.5, f"2024-01-0{1 + i % 2}") for i in range(12)]
ORDERS.append((99, "region", 0.5, "2024-01-01"))
MANAGERS = {"eu": "Eva", "us": "Sam"}
FLOORS = {"eu": 1, "us": 2, "region": 3}


class World(SparkWorld):
    """The module's :class:`SparkWorld`, with its file streams of ORDERS."""

    def stream_dir(self, name: str) -> Path:
        directory = self.root / "in" / name
        directory.mkdir(parents=True)
        return directory

    def write(self, directory: Path, fmt: str, rows: list[tuple]) -> None:
        """Add one file of ``rows`` (ORDER_COLUMNS) in format ``fmt`` to a file stream's
        directory, atomically (written aside, then renamed in)."""
        if fmt == "json":
            super().write(directory, [dict(zip(ORDER_COLUMNS, r)) for r in rows])
            return
        self.files += 1
        tmp = self.root / f".part-{self.files}.{fmt}"
        if fmt == "csv":
            tmp.write_text("".join(",".join(str(v) for v in r) + "\n" for r in rows))
        else:
            schema = pa.schema([("id", pa.int64()), ("region", pa.string()),
                                ("amount", pa.float64()), ("day", pa.string())])
            pq.write_table(pa.Table.from_pylist([dict(zip(ORDER_COLUMNS, r)) for r in rows],
                                                schema=schema), tmp)
        os.rename(tmp, directory / f"part-{self.files:04d}.{fmt}")

    def orders_stream(self, name: str, fmt: str = "json") -> Path:
        directory = self.stream_dir(name)
        self.run(f"""CREATE STREAM {name} ({ORDER_DDL})
          TBLPROPERTIES ("source"="files", "path"="{directory}", "format"="{fmt}");""")
        return directory

    def feed(self, query, directory: Path, fmt: str = "json") -> None:
        """All ORDERS in two files (two micro-batches), each processed before going on."""
        for part in (ORDERS[:7], ORDERS[7:]):
            self.write(directory, fmt, part)
            query.processAllAvailable()
        assert query.exception() is None


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("files"))
    yield w
    w.close()


def hive_rows(location: Path) -> list[dict]:
    """The committed rows of a partitioned Parquet table, partition columns included
    (pyarrow, Hive partitioning: ``col=value`` directories)."""
    files = [str(f) for f in committed_files(str(location))]
    dataset = pads.dataset(files, format="parquet", partition_base_dir=str(location),
                           partitioning=pads.partitioning(
                               pa.schema([("region", pa.string()), ("day", pa.string())]),
                               flavor="hive"))
    return dataset.to_table().to_pylist()


def partition_dirs(location: Path) -> set[str]:
    """``region=x/day=y`` of every directory holding a data file."""
    return {str(f.parent.relative_to(location)) for f in location.rglob("part-*")
            if not f.name.endswith(".crc")}


# ------------------------------------------------------------------ file sources


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_file_stream_into_partitioned_parquet_table(world, fmt):
    directory = world.orders_stream(f"orders_{fmt}", fmt)
    out = world.root / "out" / f"by_day_{fmt}"
    world.run(f"""CREATE TABLE by_day_{fmt} (id BIGINT, amount DOUBLE)
      PARTITIONED BY (region STRING, day STRING) STORED AS PARQUET LOCATION '{out}';""")
    plan, query = world.start(f"by_day_{fmt}", f"insert into by_day_{fmt} "
                              f"select id, amount, region, day from orders_{fmt}")
    assert plan.sink_spec.partitioned_by == ("region", "day")
    try:
        world.feed(query, directory, fmt)
    finally:
        query.stop()
    assert partition_dirs(out) == {f"region={r}/day={d}" for _, r, _, d in ORDERS}
    got = sorted((r["id"], r["region"], r["amount"], r["day"]) for r in hive_rows(out))
    assert got == sorted(ORDERS)
    # Spark's batch reader (honouring the sink's manifest) finds the partition columns too
    spark_rows = world.session.read.schema(
        "id BIGINT, amount DOUBLE, region STRING, day STRING").parquet(str(out)).collect()
    assert sorted((r.id, r.region, r.amount, r.day) for r in spark_rows) == sorted(ORDERS)


def test_json_and_csv_file_tables_written_by_jobs(world):
    directory = world.orders_stream("orders_jc")
    json_out = world.root / "out" / "rows_json"
    csv_out = world.root / "out" / "rows_csv"
    world.run(f"""
    CREATE TABLE rows_json (id BIGINT, region STRING, amount DOUBLE) STORED AS JSON
      LOCATION 'file://{json_out}';
    CREATE TABLE rows_csv (region STRING, id BIGINT, day STRING) PARTITIONED BY (region)
      STORED AS CSV LOCATION 'file://{csv_out}';
    """)
    _, to_json = world.start("to_json", "insert into rows_json select id, region, amount "
                                        "from orders_jc")
    # without checkpoints: each batch appended by a plain (foreachBatch) partitioned write
    plan, to_csv = world.start("to_csv", "insert into rows_csv select region, id, day from orders_jc",
                               {"morphling.job.enable.checkpoint": "false"})
    try:
        world.feed(to_json, directory)
        to_csv.processAllAvailable()
        assert to_csv.exception() is None
    finally:
        to_json.stop()
        to_csv.stop()

    assert (json_out / "_spark_metadata").is_dir()
    rows = world.session.read.schema("id BIGINT, region STRING, amount DOUBLE").json(str(json_out))
    assert sorted(tuple(r) for r in rows.collect()) == sorted((i, r, a) for i, r, a, _ in ORDERS)
    assert all(json.loads(line).keys() == {"id", "region", "amount"}
               for f in committed_files(str(json_out)) for line in f.read_text().splitlines())

    assert not (csv_out / "_spark_metadata").exists()
    assert {p.name for p in csv_out.iterdir() if p.is_dir()} == {f"region={r}" for _, r, _, _ in ORDERS}
    first = next(p for p in (csv_out / "region=eu").iterdir() if p.name.startswith("part-"))
    assert first.read_text().splitlines()[0].count(",") == 1  # id,day: no header, no region
    # read back as static data: partition column in its declared (first) place
    table = world.catalog.get_table("default", "rows_csv")
    df = table_frame(world.session, bind_static(Static(table, "rows_csv_view", plan.sink_spec)))
    assert df.columns == ["region", "id", "day"]
    assert sorted(tuple(r) for r in df.collect()) == sorted((r, i, d) for i, r, _, d in ORDERS)

    # a job without checkpoints may not add plain files beside a file-sink manifest
    # (the location a file: URI)
    plan = world.plan("late_json", "insert into rows_json select id, region, amount from orders_jc",
                      {"morphling.job.enable.checkpoint": "false"})
    with pytest.raises(ValidationError, match="was written by a checkpointed job"):
        start_planned(world.session, plan, str(world.root / "checkpoints" / "late_json"))


def test_rate_stream_into_file_table(world):
    out = world.root / "out" / "ticks"
    world.run(f"""
    CREATE STREAM ticks (timestamp TIMESTAMP, value BIGINT)
      TBLPROPERTIES ("source"="rate", "rows.per.second"="50");
    CREATE TABLE tick_log (value BIGINT, at TIMESTAMP) STORED AS PARQUET LOCATION '{out}';
    """)
    _, query = world.start("ticks", "insert into tick_log select value, timestamp from ticks")
    try:
        wait_for(lambda: query.exception() is not None or sum(
            p["numInputRows"] for p in query.recentProgress) >= 60, 60, "60 rate rows written")
        assert query.exception() is None
    finally:
        query.stop()
    rows = sorted(read_table(str(out)).to_pylist(), key=lambda r: r["value"])
    assert len(rows) > 0
    assert [r["value"] for r in rows] == list(range(len(rows)))  # 0, 1, 2 ... no gap
    assert all(a["at"] <= b["at"] for a, b in zip(rows, rows[1:]))


# ------------------------------------------------------------------ static tables


def test_stream_static_join_with_csv_and_partitioned_parquet_tables(world):
    regions = world.root / "static" / "regions"
    regions.mkdir(parents=True)
    (regions / "regions.csv").write_text(
        "region,manager\n" + "".join(f"{r},{m}\n" for r, m in MANAGERS.items()))
    floors = world.root / "static" / "floors"
    pq.write_to_dataset(pa.Table.from_pylist([{"region": r, "floor": f} for r, f in FLOORS.items()],
                                             schema=pa.schema([("region", pa.string()),
                                                               ("floor", pa.int32())])),
                        str(floors), partition_cols=["region"])
    out = world.root / "out" / "managed"
    directory = world.orders_stream("orders_st")
    world.run(f"""
    CREATE TABLE regions (region STRING, manager STRING) STORED AS CSV LOCATION '{regions}'
      TBLPROPERTIES ("skip.header.line.count"="1");
    CREATE TABLE floors (region STRING, floor INT) PARTITIONED BY (region) STORED AS PARQUET
      LOCATION '{floors}';
    CREATE TABLE managed (id BIGINT, manager STRING, floor INT) STORED AS PARQUET LOCATION '{out}';
    """)
    plan, query = world.start("managed", """insert into managed
        select o.id, r.manager, f.floor from orders_st o
        join regions r on o.region = r.region join floors f on o.region = f.region""")
    assert {s.table.name: s.spec.partitioned_by for s in plan.statics} == {
        "regions": (), "floors": ("region",)}
    try:
        world.feed(query, directory)
    finally:
        query.stop()
    expected = sorted((i, MANAGERS[r], FLOORS[r]) for i, r, _, _ in ORDERS if r in MANAGERS)
    got = sorted((r["id"], r["manager"], r["floor"]) for r in read_table(str(out)).to_pylist())
    assert got == expected  # the header line joined nothing (order 99 is in "region")


def _static_sql_join(world, name: str, url: str, table: str) -> None:
    """Join the orders with SQL table ``table`` at ``url`` (regions -> managers)."""
    out = world.root / "out" / name
    directory = world.orders_stream(f"orders_{name}")
    world.run(f"""
    CREATE TABLE {name}_regions (region STRING, manager STRING)
      TBLPROPERTIES ("connector"="sql", "url"="{url}", "table"="{table}");
    CREATE TABLE {name} (id BIGINT, manager STRING) STORED AS PARQUET LOCATION '{out}';
    """)
    _, query = world.start(name, f"""insert into {name} select o.id, r.manager
        from orders_{name} o join {name}_regions r on o.region = r.region""")
    try:
        world.feed(query, directory)
    finally:
        query.stop()
    expected = sorted((i, MANAGERS[r]) for i, r, _, _ in ORDERS if r in MANAGERS)
    assert sorted((r["id"], r["manager"]) for r in read_table(str(out)).to_pylist()) == expected


def _fill_regions(engine: sa.Engine, schema: str | None) -> None:
    # columns in another order and case than declared: matched by name
    regions = sa.Table("regions", sa.MetaData(schema=schema), sa.Column("Manager", sa.Text),
                       sa.Column("region", sa.Text))
    with engine.begin() as conn:
        regions.create(conn)
        conn.execute(regions.insert(), [{"Manager": m, "region": r} for r, m in MANAGERS.items()])


def test_stream_static_join_with_sqlite_table(world):
    url = f"sqlite:///{world.root / 'static.db'}"
    engine = sa.create_engine(url)
    _fill_regions(engine, None)
    engine.dispose()
    _static_sql_join(world, "lite", url, "regions")


def test_stream_static_join_with_postgresql_table_in_a_schema(world):
    schema = f"sj_static_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(PG_URL)
    with admin.begin() as conn:  # raises if PostgreSQL is down: the test fails
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    try:
        _fill_regions(admin, schema)
        _static_sql_join(world, "pg", PG_URL, f"{schema}.regions")
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _join_across_a_change(world, name: str, static_ddl: str | None, change) -> set[tuple]:
    """Run ``insert into {name} select o.id, r.manager from orders_{name} o join
    {name}_regions r on o.region = r.region`` over two micro-batches (ORDERS[:7], then
    ORDERS[7:]), calling ``change()`` between them; the rows written, as (id, manager).
    ``static_ddl`` declares ``{name}_regions (region STRING, manager STRING)`` (None: it
    exists)."""
    out = world.root / "out" / name
    directory = world.orders_stream(f"orders_{name}")
    world.run(f"""{static_ddl + ";" if static_ddl else ""}
    CREATE TABLE {name} (id BIGINT, manager STRING) STORED AS PARQUET LOCATION '{out}';""")
    _, query = world.start(name, f"""insert into {name} select o.id, r.manager
        from orders_{name} o join {name}_regions r on o.region = r.region""")
    try:
        world.write(directory, "json", ORDERS[:7])
        query.processAllAvailable()
        change()
        world.write(directory, "json", ORDERS[7:])
        query.processAllAvailable()
        assert query.exception() is None
        assert len([p for p in query.recentProgress if p["numInputRows"] > 0]) == 2
    finally:
        query.stop()
    return {(r["id"], r["manager"]) for r in read_table(str(out)).to_pylist()}


def _joined(before: dict, after: dict) -> set[tuple]:
    """(id, manager) of the orders of the first batch joined with ``before``, and of
    the second with ``after``."""
    return ({(i, before[r]) for i, r, _, _ in ORDERS[:7] if r in before}
            | {(i, after[r]) for i, r, _, _ in ORDERS[7:] if r in after})


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_static_sql_table_is_read_again_at_each_batch(world, backend):
    """Rows inserted and updated in the SQL table between two micro-batches are joined
    by the second one (the table is read at every batch, not once at job start)."""
    if backend == "sqlite":
        url, schema = f"sqlite:///{world.root / 'changing.db'}", None
    else:
        url, schema = PG_URL, f"sj_static_{uuid.uuid4().hex[:12]}"
    engine = sa.create_engine(url)
    regions = sa.Table("regions", sa.MetaData(schema=schema), sa.Column("region", sa.Text),
                       sa.Column("MANAGER", sa.Text))
    with engine.begin() as conn:
        if schema:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        regions.create(conn)
        conn.execute(regions.insert(), [{"region": "eu", "MANAGER": "Eva"}])

    def change():
        with engine.begin() as conn:
            conn.execute(regions.update().where(regions.c.region == "eu").values(MANAGER="Eve"))
            conn.execute(regions.insert(), [{"region": "us", "MANAGER": "Sam"}])

    name = f"changing_{backend}"
    table = f"{schema}.regions" if schema else "regions"
    try:
        got = _join_across_a_change(world, name, f"""CREATE TABLE {name}_regions
          (region STRING, manager STRING)
          TBLPROPERTIES ("connector"="sql", "url"="{url}", "table"="{table}")""", change)
    finally:
        if schema:
            with engine.begin() as conn:
                conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()
    assert got == _joined({"eu": "Eva"}, {"eu": "Eve", "us": "Sam"})
    assert {m for _, m in got} == {"Eva", "Eve", "Sam"}


def _add_file(world, directory: Path, name: str, fmt: str, rows: list[dict]) -> None:
    """Add one file of ``rows`` ({region, manager}) to a static table's ``directory``,
    atomically (written aside, then renamed in)."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = world.root / f".static-{uuid.uuid4().hex}"
    if fmt == "csv":
        tmp.write_text("region,manager\n" + "".join(f"{r['region']},{r['manager']}\n" for r in rows))
    else:
        pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(
            [(k, pa.string()) for k in rows[0]])), tmp)
    os.rename(tmp, directory / name)


@pytest.mark.parametrize("layout", ["parquet", "csv", "partitioned-parquet"])
def test_static_file_table_sees_files_added_between_batches(world, layout):
    """A file (or a new ``region=...`` partition directory) added to a static file
    table's location between two micro-batches is joined by the second one."""
    fmt = "csv" if layout == "csv" else "parquet"
    name = f"grown_{layout.replace('-', '_')}"
    location = world.root / "static" / name
    if layout == "partitioned-parquet":
        _add_file(world, location / "region=eu", "part-0.parquet", fmt, [{"manager": "Eva"}])
        ddl = (f"CREATE TABLE {name}_regions (manager STRING) PARTITIONED BY (region STRING) "
               f"STORED AS PARQUET LOCATION 'file://{location}'")

        def change():
            _add_file(world, location / "region=us", "part-1.parquet", fmt, [{"manager": "Sam"}])
    else:
        _add_file(world, location, f"part-0.{fmt}", fmt, [{"region": "eu", "manager": "Eva"}])
        ddl = (f"CREATE TABLE {name}_regions (region STRING, manager STRING) STORED AS "
               f"{fmt.upper()} LOCATION '{location}'"
               + (' TBLPROPERTIES ("skip.header.line.count"="1")' if fmt == "csv" else ""))

        def change():
            _add_file(world, location, f"part-1.{fmt}", fmt, [{"region": "us", "manager": "Sam"}])

    got = _join_across_a_change(world, name, ddl, change)
    assert got == _joined({"eu": "Eva"}, {"eu": "Eva", "us": "Sam"})
    assert any(m == "Sam" for _, m in got)


def test_static_table_written_by_another_job_is_joined_as_it_grows(world):
    """A static table filled by a streaming job (files listed in its ``_spark_metadata``
    manifest) is joined with what that job has committed by each micro-batch."""
    feed = world.stream_dir("manager_feed")
    location = world.root / "out" / "managers_live"
    world.run(f"""
    CREATE STREAM manager_feed (region STRING, manager STRING)
      TBLPROPERTIES ("source"="files", "path"="{feed}", "format"="json");
    CREATE TABLE live_regions (region STRING, manager STRING) STORED AS PARQUET
      LOCATION '{location}';""")
    _, writer = world.start("live_regions", "insert into live_regions select * from manager_feed")

    def publish(rows: dict) -> None:
        tmp = world.root / f".managers-{uuid.uuid4().hex}"
        tmp.write_text("".join(json.dumps({"region": r, "manager": m}) + "\n"
                               for r, m in rows.items()))
        os.rename(tmp, feed / f"{uuid.uuid4().hex}.json")
        writer.processAllAvailable()
        assert writer.exception() is None

    try:
        publish({"eu": "Eva"})
        assert (location / "_spark_metadata").is_dir()
        got = _join_across_a_change(world, "live", None, lambda: publish({"us": "Sam"}))
    finally:
        writer.stop()
    assert got == _joined({"eu": "Eva"}, {"eu": "Eva", "us": "Sam"})


# ------------------------------------------------------------------ console sink


@contextmanager
def jvm_console_to(session, path: Path):
    """Send what the JVM prints with Scala's ``println`` (the console sink does) to
    ``path``, for threads the calling thread's JVM peer starts meanwhile.

    Spark's console sink prints from the JVM, whose stdout pytest cannot capture; Scala's
    ``Console.out`` is an inheritable per-thread value, so it is set for PySpark's pinned
    JVM thread while the query (and its micro-batch thread) starts, then restored."""
    jvm = session.sparkContext._jvm
    module = jvm.java.lang.Class.forName("scala.Console$")
    field = module.getDeclaredField("outVar")
    field.setAccessible(True)
    out_var = field.get(module.getField("MODULE$").get(None))
    stream = jvm.java.io.PrintStream(jvm.java.io.FileOutputStream(str(path), True), True, "UTF-8")
    previous = out_var.value()
    getattr(out_var, "value_$eq")(stream)
    try:
        yield stream
    finally:
        getattr(out_var, "value_$eq")(previous)


def test_console_sink_prints_the_rows(world):
    directory = world.orders_stream("orders_console")
    world.run("""CREATE TABLE shown (id BIGINT, region STRING)
      TBLPROPERTIES ("connector"="console");""")
    printed = world.root / "console.out"
    with jvm_console_to(world.session, printed) as stream:
        _, query = world.start("console", "insert into shown select id, upper(region) "
                                          "from orders_console where amount > 3")
    try:
        world.feed(query, directory)
        # two files, two micro-batches with rows (counted after the filter: JSON pushdown)
        assert len([p for p in query.recentProgress if p["numInputRows"] > 0]) == 2
    finally:
        query.stop()
        stream.close()
    text = printed.read_text()
    assert "Batch: 0" in text and "Batch: 1" in text
    assert "|id |region|" in text
    shown = {(i, r.upper()) for i, r, a, _ in ORDERS if a > 3}
    for i, r in shown:
        assert f"|{i:<3}|{r:<6}|" in text
    hidden = [i for i, _, a, _ in ORDERS if a <= 3]
    assert not any(f"|{i:<3}|" in text for i in hidden)


def test_json_file_stream_matches_keys_as_a_kafka_stream_does(world):
    """camelCase keys (Nexmark's ``dateTime``) into columns declared without backticks
    (stored lower-case): Spark's JSON reader matches field names case-sensitively, so a
    file stream read NULL where a Kafka stream of the same records read the values (on
    the main of 2026-11-25). Now both match exact spelling first, else ignoring case,
    record by record: a file arriving later with yet another spelling is matched too, and
    a declared column that no record carries is still counted."""
    from pyspark.sql.types import StructType

    from streamjob.connectors.kafka.decode import _decoder
    from streamjob.connectors.kafka.formats import RecordSlice
    from streamjob.spark.observe import missing_columns
    from streamjob.columntypes import ddl

    records = [{"auction": i, "dateTime": f"2024-01-01T00:00:0{i}Z", "itemName": f"x{i}",
                **({"ItemName": "other case", "itemname": f"exact{i}"} if i == 3 else {})}
               for i in range(5)]
    later = [{k.upper() if k == "itemName" else k: v for k, v in r.items()} for r in records[3:]]
    directory = world.stream_dir("camel")
    out = world.root / "out" / "camel"
    world.run(f"""
    CREATE STREAM camel (auction BIGINT, dateTime TIMESTAMP, itemName STRING, seller BIGINT)
      TBLPROPERTIES("source"="files", "path"="{directory}", "format"="json");
    CREATE TABLE camel_t (auction BIGINT, at TIMESTAMP, item STRING, seller BIGINT)
      STORED AS PARQUET LOCATION '{out}';""")
    _, query = world.start("camel", "insert into camel_t select auction, dateTime, itemName, "
                                    "seller from camel")
    try:
        for part in (records[:3], later):
            SparkWorld.write(world, directory, part)  # JSON lines of the dicts
            query.processAllAvailable()
            assert query.exception() is None
            assert missing_columns(query.lastProgress) == {"default.camel": ["seller"]}
    finally:
        query.stop()
    def utc(rows):  # (auction, ISO UTC time, item, seller); Parquet's times are naive UTC
        return sorted((a, (t if t.tzinfo is None else t.astimezone(timezone.utc).replace(
            tzinfo=None)).isoformat(), i, s) for a, t, i, s in (tuple(r.values()) for r in rows))

    got = utc(read_table(str(out)).to_pylist())
    columns = world.catalog.get_stream("default", "camel").columns
    decode = _decoder(StructType.fromDDL(ddl(columns)), "json", ",", None)  # a Kafka stream's
    values = [json.dumps(r).encode() for r in records[:3] + later]
    assert got == utc(decode(RecordSlice("t", 0, range(5), values, [None] * 5, [0] * 5)).to_pylist())
    assert got == [(i, f"2024-01-01T00:00:0{i}", "exact3" if i == 3 else f"x{i}", None)
                   for i in range(5)]


def test_json_table_read_by_spark_matches_keys_as_a_kafka_stream_does(world):
    """A JSON file table on a location streamjob cannot list itself (hdfs:, s3a: ...) is
    read by Spark's reader (``spark_table_reader``, here over a local directory): its keys
    match the declared columns exact spelling first, else ignoring case, as the local
    reader and Kafka streams do, and partition columns keep their declared type and
    place. Spark's JSON reader read NULL for ``dateTime`` into ``datetime``."""
    from streamjob.connectors.files.static import spark_table_reader
    from streamjob.connectors.spec import FileTableSpec
    from streamjob.spark.query import read_frame

    location = world.root / "static" / "camel_json"
    for region, rows in (("007", [{"dateTime": "2024-01-01T00:00:01Z", "Manager": "Eva"}]),
                         ("us", [{"DATETIME": "2024-01-01T00:00:02Z", "manager": "Sam",
                                  "MANAGER": "other case"}])):
        (location / f"floor={len(region)}" / f"region={region}").mkdir(parents=True)
        (location / f"floor={len(region)}" / f"region={region}" / "part-0.json").write_text(
            "".join(json.dumps(r) + "\n" for r in rows))
    columns = [{"name": "floor", "type": "int"}, {"name": "datetime", "type": "timestamp"},
               {"name": "manager", "type": "string"}, {"name": "region", "type": "string"}]
    spec = FileTableSpec("json", str(location), False, ("floor", "region"))
    df = read_frame(world.session, world.session.read, spark_table_reader(spec, columns))
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("floor", "int"), ("datetime", "timestamp"), ("manager", "string"), ("region", "string")]
    got = sorted((r.floor, r.datetime.second, r.manager, r.region) for r in df.collect())
    assert got == [(2, 2, "Sam", "us"), (3, 1, "Eva", "007")]  # "007", not 7 inferred
