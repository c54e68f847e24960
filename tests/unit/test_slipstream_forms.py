"""Slipstream's storage and statement forms (issue 18): ROW FORMAT SERDE, STORED AS
ORC|TEXTFILE, refused HBase/Hyperdrive/Holodesk tables, and the bare INSERT's implicit
job, through the parser and the executor on a real SQLite catalog (no Spark)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from streamjob.catalog import Catalog
from streamjob.connectors import spec as cspec
from streamjob.connectors.kafka.encode import encode_records
from streamjob.connectors.kafka.formats import RecordSlice, decode
from streamjob.exceptions import ParseError, StreamJobError, ValidationError
from streamjob.executor import Executor
from streamjob.executor.insert import implicit_job_name
from streamjob.grammar import parse_script
from streamjob.grammar import statements as st
from streamjob.home import Home
from streamjob.columntypes import arrow_schema

pytestmark = pytest.mark.unit

MULTI = "org.apache.hadoop.hive.contrib.serde2.MultiDelimitSerDe"
KAFKA = "\"topic\"=\"t\", \"kafka.broker.list\"=\"h:9092\""


@pytest.fixture
def ex(tmp_path):
    home = Home.open(tmp_path / "home")
    return Executor(Catalog(f"sqlite:///{tmp_path}/catalog.db"), home)


def run(executor, script):
    results = [executor.execute(stmt) for stmt in parse_script(script)]
    return results[-1] if results else None


# -- ROW FORMAT SERDE ------------------------------------------------------------------


def test_serde_clause_parses_with_its_properties_and_counts_as_the_row_format():
    [s] = parse_script(f"CREATE STREAM s (a INT) ROW FORMAT SERDE '{MULTI}'\n"
                       f"  WITH SERDEPROPERTIES ('input.delimited'='|+|') TBLPROPERTIES ({KAFKA})")
    assert s.row_format == st.RowFormat(serde=MULTI, serde_properties=(("input.delimited", "|+|"),))
    assert s.where("serde") == st.Position(1, 42)
    with pytest.raises(ParseError, match="duplicate ROW FORMAT clause") as err:
        parse_script("CREATE TABLE t (a INT) ROW FORMAT DELIMITED FIELDS TERMINATED BY ','\n"
                     f"  ROW FORMAT SERDE '{MULTI}'")
    assert (err.value.line, err.value.column) == (2, 3)


@pytest.mark.parametrize("key", ["input.delimited", "field.delim"])
def test_multi_delimit_serde_stream_reads_and_table_writes_multi_character_fields(ex, key):
    run(ex, f"""CREATE STREAM s (id INT, name STRING, x DOUBLE) ROW FORMAT SERDE '{MULTI}'
                  WITH SERDEPROPERTIES ('{key}'='|+|') TBLPROPERTIES ({KAFKA});
                CREATE TABLE k (id INT, name STRING, x DOUBLE)
                  ROW FORMAT SERDE 'org.apache.hadoop.hive.serde2.MultiDelimitSerDe'
                  WITH SERDEPROPERTIES ("{key}"="|+|")
                  TBLPROPERTIES ("topic"="out", "kafka.broker.list"="h:9092");""")
    stream = ex.catalog.get_stream("default", "s")
    spec = cspec.source_spec(stream.name, stream.properties, stream.row_format)
    assert (spec.format, spec.delimiter) == ("delimited", "|+|")
    table = ex.catalog.get_table("default", "k")
    tspec = cspec.spec_of_table(table)
    assert (tspec.format, tspec.delimiter) == ("delimited", "|+|")
    cols = [{"name": "id", "type": "int"}, {"name": "name", "type": "string"},
            {"name": "x", "type": "double"}]
    rows = pa.table({"id": [1, 2], "name": ["a|b", None], "x": [1.5, None]})
    _, values = encode_records(rows, cols, tspec.format, tspec.delimiter)
    assert values == [b"1|+|a|b|+|1.5", b"2|+|\\N|+|\\N"]
    back = decode(RecordSlice("t", 0, [0, 1], values, [None, None], [0, 0]),
                  arrow_schema(cols), spec.format, spec.delimiter)
    assert back.to_pylist() == [{"id": 1, "name": "a|b", "x": 1.5},
                                {"id": 2, "name": None, "x": None}]


@pytest.mark.parametrize("serde", ["org.apache.hive.hcatalog.data.JsonSerDe",
                                   "org.openx.data.jsonserde.JsonSerDe"])
def test_json_serdes_are_the_json_format_for_streams_kafka_and_file_tables(ex, serde):
    run(ex, f"""CREATE STREAM s (a INT) ROW FORMAT SERDE '{serde}' TBLPROPERTIES ({KAFKA});
                CREATE TABLE f (a INT) ROW FORMAT SERDE '{serde}' STORED AS TEXTFILE;
                CREATE TABLE g (a INT) ROW FORMAT SERDE '{serde}';""")
    stream = ex.catalog.get_stream("default", "s")
    assert cspec.source_spec("s", stream.properties, stream.row_format).format == "json"
    for name in ("f", "g"):
        spec = cspec.spec_of_table(ex.catalog.get_table("default", name), "/tmp/x")
        assert spec.format == "json", name


def test_unknown_serde_is_refused_naming_it_and_the_supported_ones(ex):
    with pytest.raises(ValidationError) as err:
        run(ex, "CREATE TABLE t (a INT)\n  ROW FORMAT SERDE 'org.apache.hadoop.hive.serde2.RegexSerDe'")
    msg = str(err.value)
    assert "'org.apache.hadoop.hive.serde2.RegexSerDe' is not supported" in msg
    assert MULTI in msg and "org.openx.data.jsonserde.JsonSerDe" in msg
    assert (err.value.line, err.value.column) == (2, 20)
    assert ex.catalog.get_table("default", "t") is None
    with pytest.raises(ValidationError, match="needs the field delimiter"):
        run(ex, f"CREATE STREAM s (a INT) ROW FORMAT SERDE '{MULTI}' TBLPROPERTIES ({KAFKA})")
    with pytest.raises(ValidationError, match="different"):
        run(ex, f"CREATE STREAM s (a INT) ROW FORMAT SERDE '{MULTI}' WITH SERDEPROPERTIES "
                f"('field.delim'='|+|', 'input.delimited'='||') TBLPROPERTIES ({KAFKA})")


# -- STORED AS -------------------------------------------------------------------------


def test_file_table_formats_and_delimiters(ex):
    run(ex, """CREATE TABLE o (a INT) STORED AS ORC;
               CREATE TABLE t (a INT, b STRING) STORED AS TEXTFILE;
               CREATE TABLE d (a INT, b STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',';
               CREATE TABLE c (a INT, b STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY '|'
                 STORED AS CSV;
               CREATE TABLE p (a INT) ROW FORMAT DELIMITED FIELDS TERMINATED BY ','
                 STORED AS PARQUET;""")
    got = {n: cspec.spec_of_table(ex.catalog.get_table("default", n), "/w")
           for n in ("o", "t", "d", "c", "p")}
    assert (got["o"].format, got["o"].delimiter) == ("orc", None)
    assert (got["t"].format, got["t"].delimiter) == ("textfile", None)  # Hive's \001
    # a delimited ROW FORMAT without STORED AS is Hive's text table, recorded as such
    assert (got["d"].format, got["d"].delimiter) == ("textfile", ",")
    assert ex.catalog.get_table("default", "d").stored_as == "textfile"
    assert (got["c"].format, got["c"].delimiter) == ("csv", "|")
    assert (got["p"].format, got["p"].delimiter) == ("parquet", None)
    shown = {r[1]: r[2] for r in run(ex, "SHOW TABLES").rows}
    assert shown["o"] == "files (orc)" and shown["d"] == "files (textfile)"


@pytest.mark.parametrize("clause, kind", [
    ("STORED AS HYPERDRIVE", "Hyperdrive"),
    ("STORED AS HOLODESK", "Holodesk"),
    ("STORED BY 'io.transwarp.hyperdrive.HyperdriveStorageHandler'", "Hyperdrive"),
    ("STORED BY 'org.apache.hadoop.hive.hbase.HBaseStorageHandler'\n"
     "  WITH SERDEPROPERTIES ('hbase.columns.mapping'=':key,f:v')", "HBase"),
])
def test_hbase_hyperdrive_and_holodesk_tables_are_refused_with_the_replacement(ex, clause, kind):
    with pytest.raises(ValidationError) as err:
        run(ex, f"CREATE TABLE h (k STRING, v INT)\n{clause}")
    msg = str(err.value)
    assert f"a {kind} table" in msg and "a SQL table with a primary key" in msg
    assert (err.value.line, err.value.column) == (2, 1)
    assert ex.catalog.get_table("default", "h") is None


# -- the bare INSERT -------------------------------------------------------------------


SETUP = f"""CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ({KAFKA});
            CREATE TABLE out (k STRING, v DOUBLE) STORED AS JSON;"""


def test_bare_insert_parses_to_its_target_and_whole_text():
    [i] = parse_script("-- note\nINSERT INTO TABLE db.`Out` (k) SELECT k\n  FROM s -- tail\n;")
    assert i == st.InsertInto(target=st.QualifiedName("Out", "db"),
                              query="INSERT INTO TABLE db.`Out` (k) SELECT k\n  FROM s")
    assert i.position == st.Position(2, 1) and i.where("name") == st.Position(2, 19)
    with pytest.raises(ParseError, match="expected INSERT INTO <table> SELECT"):
        parse_script("INSERT OVERWRITE out SELECT * FROM s")
    with pytest.raises(ParseError, match="missing ';'"):
        parse_script("CREATE STREAM d AS SELECT * FROM s\nINSERT INTO out SELECT * FROM d")
    # START ... FROM and names after other statements are not taken for an INSERT tail
    [start] = parse_script("START STREAMJOB j FROM CHECKPOINT 3")
    assert start.from_checkpoint == 3


def test_implicit_job_id_is_deterministic_and_ignores_layout_not_literals():
    a = implicit_job_name("default", "out", "insert into out select * from s where k = 'A'")
    b = implicit_job_name("default", "out",
                          "INSERT  INTO out\n  SELECT * FROM s -- all\n WHERE k = 'A'")
    assert a == b and a.startswith("insert_") and len(a) == len("insert_") + 8
    assert a != implicit_job_name("default", "out", "insert into out select * from s where k = 'a'")
    assert a != implicit_job_name("other", "out", "insert into out select * from s where k = 'A'")


def test_bare_insert_creates_its_job_once_and_resubmission_starts_nothing(ex):
    run(ex, SETUP)
    query = "INSERT INTO out SELECT k, v FROM s WHERE v > 1"
    first = run(ex, query + ";")
    name = implicit_job_name("default", "out", query)
    assert first.object == f"default.{name}" and first.pending  # no job manager here
    job = ex.catalog.get_job("default", name)
    assert job.query == query and job.desired_state == "RUNNING" and job.properties == {}
    listed = run(ex, "LIST STREAMJOBS")
    row = dict(zip(listed.columns, listed.rows[0]))
    assert (row["job"], row["sql"]) == (f"default.{name}", query)
    again = run(ex, "insert into out\n select k, v from s where v > 1;")
    assert again.detail == "exists" and "nothing started" in again.message
    assert len(ex.catalog.list_jobs()) == 1
    assert ex.catalog.get_job("default", name).uid == job.uid
    run(ex, f"STOP STREAMJOB {name}")
    assert ex.catalog.get_job("default", name).desired_state == "STOPPED"
    run(ex, query)  # a stopped job stays stopped
    assert ex.catalog.get_job("default", name).desired_state == "STOPPED"
    other = run(ex, "INSERT INTO out SELECT k, v FROM s")
    assert other.object != first.object and len(ex.catalog.list_jobs()) == 2


def test_bare_insert_errors_at_their_place_and_create_nothing(ex):
    run(ex, SETUP)
    with pytest.raises(StreamJobError) as err:
        run(ex, "INSERT INTO out\nSELECT k, nope FROM s")
    assert (err.value.line, "nope" in str(err.value)) == (2, True)
    with pytest.raises(StreamJobError, match="does not exist"):
        run(ex, "INSERT INTO missing SELECT k, v FROM s")
    assert ex.catalog.list_jobs() == []
