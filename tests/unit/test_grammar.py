"""Unit tests of the StreamSQL parser (streamjob.grammar); no Spark needed."""

from __future__ import annotations



import pytest

from streamjob.exceptions import ParseError
from streamjob.grammar import (
    AlterStreamJob,
    Column,
    CreateStream,
    CreateStreamJob,
    CreateTable,
    Describe,
    DescribeStreamJob,
    DropStream,
    DropStreamJob,
    DropTable,
    Position,
    QualifiedName,
    ResetProperty,
    RowFormat,
    SetProperty,
    ShowCheckpoints,
    ShowStreamJobs,
    ShowStreams,
    ShowTables,
    StartStreamJob,
    StopStreamJob,
    parse_script,
    parse_statement,
    props,
)

pytestmark = pytest.mark.unit

SLIPSTREAM_SCRIPT = """\
-- flights from Kafka
CREATE STREAM IF NOT EXISTS flights (
  year INT, month INT, day INT, dep_delay DOUBLE, arr_delay DOUBLE,
  carrier STRING, origin STRING, dest STRING, distance DOUBLE
)
TBLPROPERTIES(
  "topic"="flights",              -- the topic
  "kafka.broker.list"="127.0.0.1:9092",
  /* json, one object per record */
  "format"="json"
);
CREATE STREAM s2 (id int, name string) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' TBLPROPERTIES("topic"="t2","kafka.broker.list"="h:9092");
CREATE TABLE IF NOT EXISTS late_flights (carrier STRING, arr_delay DOUBLE) STORED AS PARQUET LOCATION 'file:///tmp/x';
CREATE TABLE carrier_delays (carrier STRING, month INT, flights BIGINT)
  TBLPROPERTIES("connector"="sql", "url"="sqlite:////tmp/x.db", "primary.key"="carrier,month");
CREATE STREAMJOB IF NOT EXISTS delays AS("insert into carrier_delays
  select carrier, month, count(*) from flights group by carrier, month")
JOBPROPERTIES("morphling.job.checkpoint.interval"="2000", "morphling.result.auto.flush"="false");
START STREAMJOB delays;
START STREAMJOB delays FROM CHECKPOINT 3;
LIST STREAMJOBS;
"""


def one(text: str):
    return parse_statement(text)


def error_of(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_script(text, source="test.sql")
    return info.value


# --------------------------------------------------------------------------- the Slipstream example


def test_slipstream_script_parses_completely():
    statements = parse_script(SLIPSTREAM_SCRIPT)
    assert [type(s) for s in statements] == [
        CreateStream,
        CreateStream,
        CreateTable,
        CreateTable,
        CreateStreamJob,
        StartStreamJob,
        StartStreamJob,
        ShowStreamJobs,
    ]
    flights, s2, late, delays_table, job, start, start_cp, listing = statements

    assert flights == CreateStream(
        name=QualifiedName("flights"),
        if_not_exists=True,
        columns=tuple(
            Column(n, t)
            for n, t in [
                ("year", "int"),
                ("month", "int"),
                ("day", "int"),
                ("dep_delay", "double"),
                ("arr_delay", "double"),
                ("carrier", "string"),
                ("origin", "string"),
                ("dest", "string"),
                ("distance", "double"),
            ]
        ),
        properties=(("topic", "flights"), ("kafka.broker.list", "127.0.0.1:9092"), ("format", "json")),
    )
    assert flights.position == Position(2, 1)
    assert flights.text.startswith("CREATE STREAM IF NOT EXISTS flights (")
    assert flights.text.endswith('"format"="json"\n)')

    assert s2.row_format == RowFormat(fields_terminated_by=",")
    assert props(s2.properties) == {"topic": "t2", "kafka.broker.list": "h:9092"}
    assert s2.position == Position(12, 1)

    assert late == CreateTable(
        name=QualifiedName("late_flights"),
        if_not_exists=True,
        columns=(Column("carrier", "string"), Column("arr_delay", "double")),
        stored_as="parquet",
        location="file:///tmp/x",
    )
    assert props(delays_table.properties)["primary.key"] == "carrier,month"
    assert delays_table.columns[2] == Column("flights", "bigint")

    assert job.name == QualifiedName("delays")
    assert job.if_not_exists
    assert job.query == (
        "insert into carrier_delays\n  select carrier, month, count(*) from flights group by carrier, month"
    )
    # The query's first character `i` is right after `AS("` on line 16.
    assert job.query_position == Position(16, 43)
    assert job.properties == (
        ("morphling.job.checkpoint.interval", "2000"),
        ("morphling.result.auto.flush", "false"),
    )
    assert job.text.endswith('"morphling.result.auto.flush"="false")')

    assert start == StartStreamJob(name=QualifiedName("delays"))
    assert start_cp == StartStreamJob(name=QualifiedName("delays"), from_checkpoint=3)
    assert start_cp.text == "START STREAMJOB delays FROM CHECKPOINT 3"
    assert listing.position == Position(21, 1)


# --------------------------------------------------------------------------- each statement form


def test_empty_scripts_and_empty_statements():
    assert parse_script("") == []
    assert parse_script("  \n -- only a comment\n /* and a block */ ") == []
    assert parse_script(";;; ;") == []
    statements = parse_script(";show streams;;show tables;")
    assert [type(s) for s in statements] == [ShowStreams, ShowTables]


def test_last_semicolon_is_optional():
    assert parse_script("show streams; show tables") == [ShowStreams(), ShowTables()]


def test_create_stream_with_row_format_and_lines():
    stmt = one(
        r"CREATE STREAM raw (line STRING) ROW FORMAT DELIMITED FIELDS TERMINATED BY '\001' "
        r"LINES TERMINATED BY '\n' TBLPROPERTIES('topic'='raw')"
    )
    assert stmt.row_format == RowFormat("\x01", "\n")
    assert stmt.properties == (("topic", "raw"),)


@pytest.mark.parametrize(
    ("literal", "char"),
    [(r"'\001'", "\x01"), (r"'\t'", "\t"), (r"'\u0001'", "\x01"), ("','", ","), ('"|"', "|"), (r"'\\'", "\\")],
)
def test_delimiter_escapes_are_decoded(literal, char):
    stmt = one(f"create stream s (a int) row format delimited fields terminated by {literal}")
    assert stmt.row_format.fields_terminated_by == char


def test_row_format_alone_and_clause_order():
    stmt = one("create stream s (a int) tblproperties('topic'='t') row format delimited")
    assert stmt.row_format == RowFormat()
    assert stmt.properties == (("topic", "t"),)


def test_create_stream_as_select():
    stmt = one("CREATE STREAM IF NOT EXISTS late AS SELECT * FROM flights WHERE arr_delay > 60;")
    assert stmt == CreateStream(
        name=QualifiedName("late"),
        if_not_exists=True,
        as_select="SELECT * FROM flights WHERE arr_delay > 60",
        as_select_position=Position(1, 37),
    )
    assert stmt.columns == ()


def test_create_stream_as_keeps_semicolons_inside_quotes_and_comments():
    script = "create stream v as select a, ';' as x, \"b;c\" from s -- not ; the end\n where y = 'q'; show streams"
    stream, show = parse_script(script)
    assert stream.as_select == "select a, ';' as x, \"b;c\" from s -- not ; the end\n where y = 'q'"
    assert isinstance(show, ShowStreams)


@pytest.mark.parametrize("gap", ["", " ", "\n  "])
def test_create_stream_as_in_parentheses(gap):
    stmt = one(f"create stream v AS{gap}(\n  SELECT a FROM s )")
    assert stmt.as_select == "SELECT a FROM s"
    line = 1 + gap.count("\n")
    assert stmt.as_select_position == Position(line + 1, 3)


def test_create_stream_as_parenthesised_union_is_kept_whole():
    stmt = one("create stream v as (select 1) union all (select 2)")
    assert stmt.as_select == "(select 1) union all (select 2)"


def test_create_stream_as_multiline_position_and_trailing_comment():
    stmt = one("create stream v as\n  -- the query\n  with x as (select 1) select * from x  -- done\n;")
    assert stmt.as_select == "with x as (select 1) select * from x"
    assert stmt.as_select_position == Position(3, 3)
    assert stmt.text == "create stream v as\n  -- the query\n  with x as (select 1) select * from x"


def test_create_table_all_clauses():
    stmt = one(
        "create table db.out (id bigint comment 'the id', amount decimal(10, 2), tags array<string>,"
        " attrs map<string, int>, info struct<a:int, b : string>, code varchar(20))"
        " row format delimited fields terminated by '|' stored as CSV location '/data/out'"
        ' tblproperties("Header"="true")'
    )
    assert stmt.name == QualifiedName("out", "db")
    assert [c.type for c in stmt.columns] == [
        "bigint",
        "decimal(10,2)",
        "array<string>",
        "map<string,int>",
        "struct<a:int,b:string>",
        "varchar(20)",
    ]
    assert stmt.row_format == RowFormat("|")
    assert stmt.stored_as == "csv"
    assert stmt.location == "/data/out"
    assert stmt.properties == (("header", "true"),)


def test_create_table_clauses_in_any_order():
    stmt = one("create table t (a int) location 'x' tblproperties('k'='v') stored as json")
    assert (stmt.stored_as, stmt.location, stmt.properties) == ("json", "x", (("k", "v"),))


def test_column_types_are_lower_cased_without_spaces():
    stmt = one("create table t (a DECIMAL( 10 , 2 ), b MAP< STRING , ARRAY<STRUCT<X:INT>> >, c TimeStamp)")
    assert [c.type for c in stmt.columns] == ["decimal(10,2)", "map<string,array<struct<x:int>>>", "timestamp"]


@pytest.mark.parametrize(
    "type_text",
    ["int", "bigint", "double", "string", "boolean", "timestamp", "date", "float", "smallint", "tinyint"],
)
def test_primitive_types(type_text):
    assert one(f"create table t (x {type_text.upper()})").columns == (Column("x", type_text),)


def test_keywords_usable_as_column_names():
    stmt = one("create table t (comment string, year int, start int, stream string, `Table` int)")
    assert [c.name for c in stmt.columns] == ["comment", "year", "start", "stream", "Table"]


def test_create_streamjob_forms():
    a = one("create streamjob j as ('insert into t select * from s')")
    b = one("CREATE STREAMJOB j AS(\"insert into t select * from s\")")
    c = one("create streamjob j as 'insert into t select * from s'")
    expected = dict(name=QualifiedName("j"), query="insert into t select * from s")
    assert a == CreateStreamJob(**expected, query_position=Position(1, 25))
    assert a.query_position == Position(1, 25)
    assert b.query_position == Position(1, 24)
    assert c.query_position == Position(1, 24)


def test_create_streamjob_query_is_unescaped():
    stmt = one(r"""create streamjob j as ("insert into t select 'a\tb', \"q\", ""d"" from s")""")
    assert stmt.query == "insert into t select 'a\tb', \"q\", \"d\" from s"


def test_create_streamjob_multiline_query_position():
    script = (
        "SET morphling.job.checkpoint.interval=1000;\n"
        "\n"
        "CREATE STREAMJOB counts AS (\n"
        '    "\n'
        "    insert into totals\n"
        '    select count(*) from s")\n'
        "  JOBPROPERTIES('morphling.task.max.failures' = '3');"
    )
    _, job = parse_script(script)
    assert job.position == Position(3, 1)
    assert job.query_position == Position(4, 6)
    assert job.query == "\n    insert into totals\n    select count(*) from s"
    assert job.properties == (("morphling.task.max.failures", "3"),)


def test_start_stop_drop_alter_streamjob():
    statements = parse_script(
        "start streamjob db.j from checkpoint 12; stop streamjob j; drop streamjob if exists j;"
        " drop streamjob k; alter streamjob j set jobproperties('morphling.result.auto.flush'='true')"
    )
    assert statements == [
        StartStreamJob(name=QualifiedName("j", "db"), from_checkpoint=12),
        StopStreamJob(name=QualifiedName("j")),
        DropStreamJob(name=QualifiedName("j"), if_exists=True),
        DropStreamJob(name=QualifiedName("k")),
        AlterStreamJob(name=QualifiedName("j"), properties=(("morphling.result.auto.flush", "true"),)),
    ]


def test_listing_and_describing():
    statements = parse_script(
        "LIST STREAMJOBS; SHOW STREAMJOBS; DESCRIBE STREAMJOB j; SHOW CHECKPOINTS FOR STREAMJOB j;"
        " SHOW STREAMS; SHOW TABLES; DESCRIBE s; DESC STREAM s; describe table db.t; desc streamjob j"
    )
    assert statements == [
        ShowStreamJobs(),
        ShowStreamJobs(),
        DescribeStreamJob(name=QualifiedName("j")),
        ShowCheckpoints(name=QualifiedName("j")),
        ShowStreams(),
        ShowTables(),
        Describe(name=QualifiedName("s")),
        Describe(name=QualifiedName("s"), kind="stream"),
        Describe(name=QualifiedName("t", "db"), kind="table"),
        DescribeStreamJob(name=QualifiedName("j")),
    ]


def test_drop_stream_and_table():
    assert parse_script("drop stream s; drop stream if exists s; drop table t; drop table if exists db.t") == [
        DropStream(name=QualifiedName("s")),
        DropStream(name=QualifiedName("s"), if_exists=True),
        DropTable(name=QualifiedName("t")),
        DropTable(name=QualifiedName("t", "db"), if_exists=True),
    ]


def test_set_and_reset():
    statements = parse_script(
        "SET morphling.job.checkpoint.interval=2000;\n"
        "set Morphling.Result.Auto.Flush = 'true' ;\n"
        'set x.y = "a;b" -- a comment\n;\n'
        "set msg = hello world  /* note */ ;\n"
        "set empty = ;\n"
        "SET;\n"
        "RESET;\n"
        "reset morphling.job.checkpoint.interval"
    )
    assert statements == [
        SetProperty(key="morphling.job.checkpoint.interval", value="2000"),
        SetProperty(key="morphling.result.auto.flush", value="true"),
        SetProperty(key="x.y", value="a;b"),
        SetProperty(key="msg", value="hello world"),
        SetProperty(key="empty", value=""),
        SetProperty(),
        ResetProperty(),
        ResetProperty(key="morphling.job.checkpoint.interval"),
    ]
    assert statements[2].text == 'set x.y = "a;b"'
    assert statements[7].position == Position(9, 1)


def test_property_lists():
    stmt = one(
        "create stream s (a int) TBLPROPERTIES (\n"
        '  "Topic" = "T1",  -- quoted with double quotes\n'
        "  'k2'='v2', /* single quotes */\n"
        "  k3.sub=v3,\n"
        "  rows.per.second = 100,\n"
        "  path = file:///tmp/in,\n"
        "  'escaped'='a\\'b',\n"
        ")"
    )
    assert stmt.properties == (
        ("topic", "T1"),
        ("k2", "v2"),
        ("k3.sub", "v3"),
        ("rows.per.second", "100"),
        ("path", "file:///tmp/in"),
        ("escaped", "a'b"),
    )


def test_empty_property_list():
    assert one("create streamjob j as ('select 1') jobproperties()").properties == ()


def test_case_insensitive_keywords():
    a = one("cReAtE sTrEaM iF nOt ExIsTs S (A InT) tblProperties('Topic'='x')")
    b = one("CREATE STREAM IF NOT EXISTS s (a int) TBLPROPERTIES('topic'='x')")
    assert a == b
    assert one("StArT StReAmJoB J fRoM cHeCkPoInT 1") == StartStreamJob(name=QualifiedName("j"), from_checkpoint=1)


def test_qualified_and_backquoted_names():
    stmt = one("create table `Sales DB`.`Daily Totals` (`Amount` int, `odd``name` string)")
    assert stmt.name == QualifiedName("Daily Totals", "Sales DB")
    assert [c.name for c in stmt.columns] == ["Amount", "odd`name"]
    assert one("drop table MyDb.MyTable").name == QualifiedName("mytable", "mydb")
    assert QualifiedName("t").resolve() == ("default", "t")


def test_comments_everywhere():
    stmt = one(
        "/* lead */ create /* a */ stream -- b\n s /* c */ ( a /* d */ int -- e\n ) tblproperties ( /* f */ 'k' = 'v' )"
    )
    assert stmt.columns == (Column("a", "int"),)
    assert stmt.properties == (("k", "v"),)
    assert stmt.position == Position(1, 12)


def test_statement_text_and_position():
    statements = parse_script("  show streams ;\n\n   stop streamjob x\n;")
    assert [(s.position, s.text) for s in statements] == [
        (Position(1, 3), "show streams"),
        (Position(3, 4), "stop streamjob x"),
    ]


def test_parse_statement_requires_exactly_one():
    assert one("show tables;") == ShowTables()
    with pytest.raises(ParseError) as info:
        parse_statement("show tables; show streams")
    assert (info.value.line, info.value.column) == (1, 14)
    assert "exactly one statement" in info.value.message
    with pytest.raises(ParseError) as info:
        parse_statement("  -- nothing\n")
    assert "expected a statement" in info.value.message


def test_savepoint_statements():
    from streamjob.grammar import CreateSavepoint, DropSavepoint, ShowSavepoints
    from streamjob.grammar.lexical import GRAMMAR_KEYWORDS

    stop, create, show_all, show_one, show_kw, drop, start_sp, start_at = parse_script("""
        STOP STREAMJOB j WITH SAVEPOINT Before_Fix;
        create savepoint `sp1` for streamjob db.j;
        SHOW SAVEPOINTS;
        SHOW SAVEPOINTS FOR j;
        SHOW SAVEPOINTS FOR STREAMJOB db.j;
        DROP SAVEPOINT sp1 FOR STREAMJOB j;
        START STREAMJOB j FROM SAVEPOINT sp1;
        START STREAMJOB j FROM CHECKPOINT AT '2026-11-27 10:00:01';""")
    assert stop == StopStreamJob(name=QualifiedName("j"), savepoint="before_fix")
    assert stop.where("savepoint") == Position(2, 41)
    assert create == CreateSavepoint(name=QualifiedName("j", "db"), savepoint="sp1")
    assert (show_all, show_one) == (ShowSavepoints(), ShowSavepoints(name=QualifiedName("j")))
    assert show_kw == ShowSavepoints(name=QualifiedName("j", "db"))
    assert drop == DropSavepoint(name=QualifiedName("j"), savepoint="sp1")
    assert start_sp == StartStreamJob(name=QualifiedName("j"), from_savepoint="sp1")
    assert start_at == StartStreamJob(name=QualifiedName("j"), checkpoint_at=1795773601000)
    assert start_at.where("timestamp") == Position(9, 46)
    assert parse_script("STOP STREAMJOB j")[0].savepoint is None
    assert {"SAVEPOINT", "SAVEPOINTS", "AT"} <= GRAMMAR_KEYWORDS  # the shell's vocabulary


@pytest.mark.parametrize("sql, where, words", [
    # FOR is read as the savepoint's name here, as any word where a name belongs
    ("CREATE SAVEPOINT FOR STREAMJOB j", (1, 22), "unexpected 'STREAMJOB', expected FOR"),
    ("DROP SAVEPOINT sp j", (1, 19), "expected FOR"),
    ("STOP STREAMJOB j WITH sp", (1, 23), "expected SAVEPOINT"),
    ("START STREAMJOB j FROM CHECKPOINT AT 5", (1, 38), "unexpected"),
    ("START STREAMJOB j FROM CHECKPOINT AT '27.11.2026'", (1, 38), "is not a time"),
    ("CREATE SAVEPOINT `a-b` FOR STREAMJOB j", (1, 18), "is not a savepoint name"),
])
def test_savepoint_statement_errors_are_located(sql, where, words):
    with pytest.raises(ParseError, match=words) as info:
        parse_script(sql)
    assert (info.value.line, info.value.column) == where
