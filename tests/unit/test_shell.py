"""The shell without a terminal: statement splitting, highlighting, completion, the
planning of a bare SELECT, and the shell's statement loop in non-interactive mode (no
Spark: every statement here is catalog-only or fails before Spark would start)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from pygments.token import Comment, Keyword, String

from streamjob.catalog import Catalog
from streamjob.exceptions import ValidationError
from streamjob.home import Home
from streamjob.planner.preview import DEFAULT_LIMIT, is_select, plan_preview
from streamjob.shell.app import Shell
from streamjob.shell.completion import Names, suggest
from streamjob.shell.lexer import StreamSqlLexer
from streamjob.client.splitter import is_complete, position_in, split_input

pytestmark = pytest.mark.unit

KAFKA = ('CREATE STREAM clicks (id int, name string) TBLPROPERTIES("topic"="clicks", '
         '"kafka.broker.list"="127.0.0.1:9", "format"="json", "malformed.policy"="skip");\n')


# --------------------------------------------------------------------------- splitting


def test_split_statements_ignores_semicolons_in_strings_names_and_comments():
    text = ("CREATE STREAMJOB j AS (\"insert into t select ';' from s\");\n"
            "-- a comment; still a comment\nSHOW `we;ird`; /* ; */ LIST STREAMJOBS;")
    split = split_input(text)
    assert [p.text for p in split.pieces] == [
        "CREATE STREAMJOB j AS (\"insert into t select ';' from s\")",
        "-- a comment; still a comment\nSHOW `we;ird`",
        "/* ; */ LIST STREAMJOBS"]
    assert split.complete and split.rest == ""


def test_split_keeps_the_unfinished_rest_and_its_offset():
    split = split_input("SHOW STREAMS;\n  CREATE STREAM s (a int)\n")
    assert [p.text for p in split.pieces] == ["SHOW STREAMS"]
    assert split.rest == "CREATE STREAM s (a int)\n" and split.rest_offset == 16
    assert not split.complete


@pytest.mark.parametrize("text, complete", [
    ("", True),
    ("   \n", True),
    ("SHOW STREAMS", False),
    ("SHOW STREAMS;", True),
    ("SHOW STREAMS;  -- done", True),
    ("CREATE STREAM s (a int)\nTBLPROPERTIES(\"topic\"=\"t\");", True),
    ("SET x = 'a;", False),  # inside a string
    ("SHOW /* ; */ STREAMS", False),
    ("SHOW STREAMS; /* open", False),
    ("\\l", True),
    ("  \\d clicks", True),
    ("quit", True),
    ("EXIT;", True),
    ("help", True),
    ("select * from s", False),
])
def test_is_complete(text, complete):
    assert is_complete(text) is complete


def test_meta_commands_are_lines_where_a_statement_would_start():
    split = split_input("\\timing\nSHOW STREAMS;\n\\d clicks\n")
    assert [(p.kind, p.text) for p in split.pieces] == [
        ("meta", "\\timing"), ("sql", "SHOW STREAMS"), ("meta", "\\d clicks")]
    # inside a statement a backslash is no meta command
    assert not is_complete("SHOW\n\\l")


def test_position_in_maps_a_statement_position_into_the_input():
    text = "SHOW STREAMS;\n  CREATE STREAM s\n (a int)"
    offset = split_input(text).rest_offset
    assert position_in(text, offset, 1, 8) == (2, 10)
    assert position_in(text, offset, 2, 3) == (3, 3)


# --------------------------------------------------------------------------- highlighting


def _tokens(text):
    return [(tok, val) for tok, val in StreamSqlLexer().get_tokens(text) if val.strip()]


def test_lexer_knows_streamsql_keywords_strings_and_comments():
    toks = dict((v, t) for t, v in _tokens(
        'create streamjob j as ("insert into t select * from s") '
        'JOBPROPERTIES("k"="v"); -- note\n\\d j'))
    for word in ("create", "streamjob", "as", "JOBPROPERTIES"):
        assert toks[word] in Keyword, word
    assert toks['"insert into t select * from s"'] in String
    assert toks["-- note"] in Comment
    assert toks["\\d"] is Keyword.Pseudo
    assert toks["j"] not in Keyword


def test_lexer_runs_an_unterminated_string_to_the_end():
    toks = _tokens("SELECT 'abc; def")
    assert toks[-1][0] in String and toks[-1][1].startswith("'abc; def")


# --------------------------------------------------------------------------- completion

NAMES = Names(streams=["clicks", "orders", "sales.events"], tables=["agg", "out"],
              jobs=["j1", "jobtwo"])


def _offers(text):
    return [(s.text, s.start) for s in suggest(text, NAMES)]


@pytest.mark.parametrize("text, expected", [
    ("SHOW STREAMJ", [("STREAMJOBS", -7)]),
    ("cr", [("create", -2)]),
    ("create ", [("database", 0), ("function", 0), ("or", 0), ("savepoint", 0), ("stream", 0),
                 ("streamjob", 0), ("table", 0), ("temporary", 0)]),
    ("show create ", [("function", 0), ("stream", 0), ("streamjob", 0), ("table", 0)]),
    ("print s1 from ", [("beginning", 0)]),
    ("SHOW TO", [("TOPICS", -2)]),
    ("LIST ", [("STREAMJOBS", 0)]),
    ("SHOW STREAMS; sh", [("show", -2)]),
])
def test_keyword_completion(text, expected):
    assert _offers(text) == expected


def test_statement_keywords_at_the_start():
    offered = [t for t, _ in _offers("")]
    assert {"CREATE", "START", "STOP", "DROP", "SHOW", "DESCRIBE", "LIST", "SET", "SELECT",
            "USE", "PRINT"} <= set(offered)


@pytest.mark.parametrize("text, expected", [
    ("START STREAMJOB ", [("j1", 0), ("jobtwo", 0)]),
    ("stop streamjob jo", [("jobtwo", -2)]),
    ("DROP STREAMJOB IF EXISTS j", [("j1", -1), ("jobtwo", -1)]),
    ("DROP STREAM c", [("clicks", -1)]),
    ("DESCRIBE TABLE ", [("agg", 0), ("out", 0)]),
    ("SHOW CHECKPOINTS FOR STREAMJOB j1", [("j1", -2)]),
    ("select * from o", [("orders", -1), ("out", -1)]),
    ("select * from sales.e", [("sales.events", -7)]),
    ("select * from ev", [("sales.events", -2)]),
    ("select * from `cl", [("clicks", -3)]),
    ('CREATE STREAMJOB x AS ("insert into a', [("agg", -1)]),
    ('CREATE STREAMJOB x AS ("insert into out select * from clicks c join or',
     [("orders", -2)]),
    ("\\d cl", [("clicks", -2)]),
])
def test_catalog_name_completion(text, expected):
    assert _offers(text) == expected


def test_describe_offers_kinds_and_every_name():
    offered = [t for t, _ in _offers("DESCRIBE ")]
    assert offered[:4] == ["FUNCTION", "STREAM", "STREAMJOB", "TABLE"]
    assert {"clicks", "agg", "j1"} <= set(offered)


def test_property_names_in_tblproperties_by_object_kind():
    stream = [t for t, _ in _offers('CREATE STREAM s (a int) TBLPROPERTIES("')]
    assert 'topic"' in stream and 'kafka.broker.list"' in stream
    assert 'primary.key"' not in stream  # a table's property
    table = [t for t, _ in _offers("CREATE TABLE t (a int) TBLPROPERTIES(")]
    assert '"primary.key"' in table and '"malformed.policy"' not in table
    assert _offers('CREATE TABLE t (a int) TBLPROPERTIES("conn') == [('connector"', -4)]
    # unquoted as typed; dotted names whole
    assert ("kafka.broker.list", -3) in _offers(
        "create stream s (a int) tblproperties(topic='t', kaf")


def test_property_values_and_job_properties():
    assert _offers('CREATE STREAM s (a int) TBLPROPERTIES("transwarp.consumer.reset.offset.'
                   'strategy"="la') == [('latest"', -2)]
    assert [t for t, _ in _offers(
        'CREATE STREAMJOB j AS ("insert into t select * from s") JOBPROPERTIES("morphling.result')
    ] == ['morphling.result.auto.flush"']
    assert ("morphling.job.checkpoint.interval", -15) in _offers("SET morphling.job.c")
    assert _offers("SET morphling.job.enable.checkpoint = t") == [("true", -1)]
    assert ("transwarp.consumer.reset.offset.strategy", -9) in _offers("SET transwarp")
    assert _offers("RESET morphling.checkpoint.r") == [("morphling.checkpoint.retained", -22)]


def test_meta_command_completion():
    assert [t for t, _ in _offers("\\")][:3] == ["\\?", "\\help", "\\q"]
    assert _offers("\\ti") == [("\\timing", -3)]


def test_nothing_inside_comments_or_after_a_closing_quote():
    assert _offers("SHOW -- sho") == []
    assert _offers("SET x = 'abc'") == []


def test_names_load_from_the_catalog(world):
    ex = world
    names = Names.load(ex.catalog)
    assert names.streams == ["clicks"] and names.tables == ["out"] and names.jobs == ["j"]
    assert [c for c, _ in names.columns["clicks"]] == ["id", "name"]


COLUMNS = Names(streams=["clicks", "sales.events"], tables=["out"], columns={
    "clicks": [("id", "int"), ("name", "string")],
    "sales.events": [("eid", "bigint"), ("amount", "double")],
    "out": [("id", "int"), ("total", "double")]})


def _columns(before, after=""):
    return [(s.text, s.start) for s in suggest(before, COLUMNS, after) if s.meta != "keyword"]


@pytest.mark.parametrize("before, after, expected", [
    # after SELECT, the columns of the FROM typed after the cursor (as pgcli)
    ("SELECT ", " FROM clicks;", [("id", 0), ("name", 0)]),
    ("SELECT id, ", " FROM clicks", [("id", 0), ("name", 0)]),
    ("select * from clicks where n", "", [("name", -1)]),
    ("SELECT * FROM clicks WHERE id = 1 AND ", "", [("id", 0), ("name", 0)]),
    ("SELECT * FROM clicks, out WHERE ", "", [("id", 0), ("name", 0), ("total", 0)]),
    ("SELECT * FROM clicks c JOIN sales.events e ON c.id = e.", "",
     [("eid", 0), ("amount", 0)]),
    ("SELECT * FROM clicks AS c WHERE c.na", "", [("name", -2)]),
    ("SELECT * FROM clicks GROUP BY ", "", [("id", 0), ("name", 0)]),
    ('CREATE STREAMJOB j AS ("insert into out select na', ' from clicks")', [("name", -2)]),
    # no column goes here, or no known object is read
    ("SELECT ", "", []),
    ("SELECT id AS ", " FROM clicks", []),
    ("SELECT * FROM clicks ", "", []),
    ("SELECT * FROM clicks WHERE id", "", []),
    ("SELECT * FROM nope WHERE ", "", []),
    ("SELECT * FROM clicks; SELECT ", "", []),  # another statement's FROM
])
def test_column_completion_in_a_query(before, after, expected):
    assert _columns(before, after) == expected


def test_column_completion_keeps_keywords_and_names_where_they_go():
    offered = [(s.text, s.meta) for s in suggest("select * from clicks where n", COLUMNS)]
    assert ("not", "keyword") in offered and ("null", "keyword") in offered
    assert _offers("select * from o") == [("orders", -1), ("out", -1)]


# --------------------------------------------------------------------------- bare SELECT


@pytest.fixture
def world(tmp_path):
    """A home and catalog with a Kafka stream ``clicks``, a file table ``out`` and a job."""
    from streamjob.client.session import ClientSession

    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    # made through a session without Spark (as `check --offline`): the shell's own CREATE
    # STREAMJOB would start Spark for its streaming analysis (tests/integration/test_shell)
    setup = ClientSession(catalog, home)
    list(setup.execute_script(
        KAFKA + "CREATE TABLE out (id int, name string);\n"
        "CREATE STREAMJOB j AS (\"insert into out select id, name from clicks\");"))
    shell = Shell(catalog, home, interactive=False)
    yield shell
    catalog.close()


def test_is_select():
    assert is_select("SELECT 1") and is_select("  -- c\n(select * from s)")
    assert is_select("with a as (select 1) select * from a")
    assert not is_select("insert into t select 1") and not is_select("selection")


def test_plan_preview_takes_the_limit_and_reads_from_the_reset_strategy(world):
    plan = plan_preview(world.catalog, world.home, "SELECT id FROM clicks WHERE id > 1 LIMIT 3;")
    assert plan.limit == 3 and "LIMIT" not in plan.select.select_sql.upper()
    assert plan.output_mode == "append" and plan.columns == ("id",)
    [src] = plan.sources
    assert src.spec.reset == "earliest" and src.dead_letter is None and src.group_id is None
    assert plan_preview(world.catalog, world.home, "select * from clicks").limit == DEFAULT_LIMIT
    latest = plan_preview(world.catalog, world.home, "select * from clicks", reset="latest")
    assert latest.sources[0].spec.reset == "latest"
    agg = plan_preview(world.catalog, world.home, "select name, count(*) from clicks group by name")
    assert agg.output_mode == "update"
    with pytest.raises(ValidationError, match="names no group"):
        plan_preview(world.catalog, world.home, "select * from clicks", reset="committed")


def test_plan_preview_plans_a_pattern_as_a_job_does(world):
    """A preview's FROM PATTERN is planned (the job's CepPlan, the select over its
    matches, append mode) and bound with the match schema a job's is bound with."""
    from streamjob.planner.bind import bind_preview
    from streamjob.planner.cep import MATCH_VIEW

    plan = plan_preview(world.catalog, world.home, """select e1.id, e2.name from
        pattern(e1=clicks[e1.id > 1] followedby e2=clicks[e2.id = e1.id]) within ('1' minute)
        limit 4""")
    assert plan.limit == 4 and plan.output_mode == "append" and plan.columns == ("id", "name")
    assert plan.select.pattern.key == ("id",) and MATCH_VIEW in plan.select.select_sql
    assert [s.stream.name for s in plan.sources] == ["clicks"]
    q = bind_preview(plan)
    assert q.pattern is plan.select.pattern and q.match_view == MATCH_VIEW
    assert q.match_schema is not None and "e2__name" in q.match_schema


@pytest.mark.parametrize("sql, message, where", [
    ("select e1.id from pattern(e1=clicks[e1.id > 1]) within ('1' minute) "
     "streamwindow w as (length '1' minute slide '1' minute)", "a PATTERN query has no",
     (1, 69)),
    ("select nope from clicks", "unknown column 'nope'", (1, 8)),
    ("select 1", "reads no stream", (1, 1)),
    ("select * from clicks limit x", "LIMIT must be a whole number", (1, 28)),
    ("select * from nowhere", "unknown stream or table 'default.nowhere'", (1, 15)),
])
def test_plan_preview_errors(world, sql, message, where):
    with pytest.raises(ValidationError) as info:
        plan_preview(world.catalog, world.home, sql)
    assert message in info.value.message and (info.value.line, info.value.column) == where


# --------------------------------------------------------------------------- the shell loop


def test_script_runs_statements_and_reports_errors_in_the_script(world, capsys):
    world.script(io.StringIO(
        "SHOW STREAMS;\n"
        "\\l\n"
        "CREATE STREAM bad (a int)\n"
        "  TBLPROPERTIES(\"topik\"=\"x\");\n"
        "select nope from clicks;\n"
        "INSERT OVERWRITE out SELECT * FROM clicks;\n"
        "DROP TABLE out;\n"
        "SHOW TABLES"))  # the last statement may lack its ';'
    out, err = capsys.readouterr()
    assert "clicks" in out and "streamjobs" in out
    lines = [line for line in err.strip().splitlines() if line.startswith("Error: ")]
    assert lines[0].startswith("Error: <stdin>:4:17: ") and "topik" in lines[0]
    assert '  TBLPROPERTIES("topik"="x");\n                ^' in err  # the line, a caret
    assert lines[1].startswith("Error: <stdin>:5:8: unknown column 'nope'")
    # (a bare INSERT INTO starts an implicit job: tests/unit/test_slipstream_forms.py)
    assert lines[2].startswith("Error: <stdin>:6:8: expected INSERT INTO <table> SELECT")
    # no question without a terminal; the table is in use by job j
    assert lines[3].startswith("Error: <stdin>:7:") and "j" in lines[3]
    assert len(lines) == 4 and world.errors == 4
    assert "│ default  │ out   │ files (parquet)" in out.split("tables")[-1]  # SHOW TABLES ran


def test_quit_stops_a_script(world, capsys):
    world.script(io.StringIO("SHOW STREAMS;\nquit\nSHOW TABLES;\n"))
    out, _ = capsys.readouterr()
    assert "streams" in out and "tables" not in out


def test_meta_toggles_and_describe(world, capsys):
    world.run_text("\\json\nSHOW STREAMS;\n\\json\n\\timing\n\\d clicks\n\\d j\n\\nope\n")
    out, err = capsys.readouterr()
    assert '"stream": "clicks"' in out and "Output format is tables." in out
    assert "Timing is on." in out and "Time: " in out
    assert "kafka.broker.list" in out  # DESCRIBE clicks
    assert "insert into out" in out  # DESCRIBE STREAMJOB j
    assert "Error: unknown command \\nope" in err


def test_set_of_the_select_start_is_the_shells_own(world, capsys):
    world.run_text("SET transwarp.consumer.reset.offset.strategy = latest;")
    assert world.previews.reset == "latest" and world.session_props == {}
    world.run_text("SET transwarp.consumer.reset.offset.strategy = soon;")
    world.run_text("RESET;")
    out, err = capsys.readouterr()
    assert "transwarp.consumer.reset.offset.strategy=latest" in out
    assert "Error: 1:1: property 'transwarp.consumer.reset.offset.strategy' must be" in err
    assert world.previews.reset is None


def test_start_with_a_server_only_sets_the_desired_state(world, capsys):
    world.catalog.lease_holder = lambda: SimpleNamespace(server_id="s1", host="h", pid=42)
    world.run_text("START STREAMJOB j;")
    out, err = capsys.readouterr()
    assert err == "" and world.manager is None
    assert "streamjob default.j: desired state RUNNING; server h:42 starts it" in out
    assert world.catalog.get_job("default", "j").desired_state == "RUNNING"


def test_completion_names_follow_the_catalog(world):
    world.run_text("CREATE TABLE more (a int);")
    assert "more" in world.names.tables


def test_help_does_not_import_the_shell_or_spark():
    code = ("import sys; from click.testing import CliRunner; from streamjob.cli import main; "
            "r = CliRunner().invoke(main, ['--help']); assert 'shell' in r.output, r.output; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('prompt_toolkit', 'pyspark')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_shell_reads_stdin_when_it_is_not_a_terminal(tmp_path):
    from pathlib import Path

    exe = str(Path(sys.executable).with_name("streamjob"))
    res = subprocess.run([exe, "--home", str(tmp_path / "h"), "shell"], input=KAFKA + "SHOW STREAMS;\n"
                         "DROP STREAM clicks;\nSHOW STREAMS;\nselect x from clicks;\n",
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 1  # the last statement failed
    assert "streamjob>" not in res.stdout and "[y/N]" not in res.stdout
    assert "stream default.clicks dropped" in res.stdout
    assert res.stderr.strip().splitlines() == [
        "Error: <stdin>:5:15: unknown stream or table 'default.clicks'",
        "select x from clicks;", "              ^"]


def test_row_printer_lines_rows_up_under_a_header_and_stops_at_the_limit():
    import datetime as dt

    from streamjob.client.preview import RowPrinter

    lines: list[str] = []
    p = RowPrinter(["id", "name", "at"], 3, False, lines.append)
    p.print_rows([(1, None, dt.datetime(2024, 1, 2, 3, 4, 5)), (22, "bb", None)])
    p.print_rows([(3, "c", None), (4, "d", None)])  # only one more fits
    assert p.remaining == 0 and p.footer(False) == "3 rows"
    assert lines == ["id | name | at",
                     "---+------+--------------------",
                     "1  | null | 2024-01-02 03:04:05",
                     "22 | bb   | null",
                     "3  | c    | null"]
    out: list[str] = []
    j = RowPrinter(["id", "tags"], 5, True, out.append)
    j.print_rows([(1, ["a"])])
    assert out == ['{"id": 1, "tags": ["a"]}'] and j.footer(True) == "1 row (stopped by Ctrl-C)"


def test_pager_pages_what_does_not_fit_the_terminal():
    from streamjob.shell.pager import too_big

    size = os.terminal_size((20, 5))
    assert not too_big("a\nb\nc\nd\n", size)  # 4 lines and the prompt fit 5 rows
    assert too_big("a\nb\nc\nd\ne\n", size)
    assert too_big("x" * 21, size) and not too_big("\x1b[1m" + "x" * 20 + "\x1b[0m", size)


def test_pager_meta_command(world):
    assert world.context.pager
    world.run_text("\\pager off")
    assert not world.context.pager
    world.run_text("\\pager on")
    assert world.context.pager and world.errors == 0
    world.run_text("\\pager maybe")
    assert world.errors == 1 and world.context.pager


# --------------------------------------------------------------------------- tables that fit

LONG_JOB = ("CREATE STREAMJOB wide_job AS (\"insert into out select id, upper(name) as name "
            "from clicks where id > 100 and name like '%streamjob%' and id < 100000\") "
            "JOBPROPERTIES(\"morphling.job.checkpoint.interval\"=\"5000\");\n")


def _squeezed(text: str) -> str:
    return "".join(text.split())


@pytest.mark.parametrize("width", [80, 100])
def test_list_streamjobs_fits_the_terminal_one_field_per_line(world, capsys, monkeypatch, width):
    """Issue 29 item 8: at 80 and 100 columns LIST STREAMJOBS folded its SQL column to a
    few characters (each job over dozens of lines); a table wider than the terminal is
    now shown expanded (psql's ``\\x auto``): no line is wider than the terminal and
    every field's value is there, whole."""
    from streamjob.client.session import ClientSession

    list(ClientSession(world.catalog, world.home).execute_script(LONG_JOB))
    monkeypatch.setenv("COLUMNS", str(width))
    [(_, result)] = world.session.execute_script("LIST STREAMJOBS")
    world.run_text("LIST STREAMJOBS;")
    out, err = capsys.readouterr()
    assert world.errors == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width, out
    assert "-[ RECORD 1 ]" in out and "-[ RECORD 2 ]" in out and "┃" not in out
    records = out.split("-[ RECORD ")[1:]
    assert len(records) == len(result.rows) == 2
    for record, row in zip(records, result.rows):
        fields: dict[str, str] = {}
        name = None
        for line in record.splitlines()[1:]:
            label, _, value = line.partition(" |")  # "name | value", "name |" when empty
            name = label.strip() or name
            fields[name] = fields.get(name, "") + value[1:]
        assert list(fields) == list(result.columns)
        for column, value in zip(result.columns, row):
            assert _squeezed(fields[column]) == _squeezed("" if value is None else str(value))
    # a narrow table stays a table
    world.run_text("SHOW STREAMS;")
    assert "┃" in capsys.readouterr().out


def test_expanded_display_meta_command(world, capsys, monkeypatch):
    """``\\x`` toggles, ``\\x on|off|auto`` sets; off keeps the table at any width."""
    monkeypatch.setenv("COLUMNS", "80")
    assert world.context.expanded == "auto"
    world.run_text("\\x off\nLIST STREAMJOBS;\n")
    out = capsys.readouterr().out
    assert "Expanded display is off." in out and "┃" in out and "RECORD" not in out
    world.run_text("\\x\nSHOW STREAMS;\n")
    out = capsys.readouterr().out
    assert "Expanded display is on." in out and "-[ RECORD 1 ]" in out and "stream   | clicks" in out
    world.run_text("\\x\n")
    assert world.context.expanded == "off"
    world.run_text("\\x auto\n")
    assert world.context.expanded == "auto" and "used automatically" in capsys.readouterr().out
    world.run_text("\\x sideways\n")
    assert world.errors == 1 and world.context.expanded == "auto"
    assert "\\x takes on, off or auto" in capsys.readouterr().err


def test_output_without_a_terminal_or_columns_keeps_its_tables(world, capsys, monkeypatch):
    """Piped output (no terminal, no ``COLUMNS``) is unchanged: a 200-column table."""
    monkeypatch.delenv("COLUMNS", raising=False)
    world.run_text("LIST STREAMJOBS;")
    out = capsys.readouterr().out
    assert "┃" in out and "RECORD" not in out


def test_expanded_text_wraps_values_and_keeps_their_lines():
    from streamjob.executor import Result
    from streamjob.client.render import expanded_text

    r = Result(columns=("job", "a rather long column name", "sql"),
               rows=[("j", None, "select a,\n  b from s where " + "x" * 90)], title="t")
    text = expanded_text(r, 40)
    lines = text.splitlines()
    assert lines[0] == "t" and lines[1].startswith("-[ RECORD 1 ]-")
    assert max(len(line) for line in lines) <= 40, text
    assert "  b from s where" in text  # the value's own line, indented as written
    assert _squeezed("".join(line.partition(" | ")[2] for line in lines[2:])) == _squeezed(
        "j" + "select a,\n  b from s where " + "x" * 90)


# --------------------------------------------------------------------------- one vocabulary


def test_the_keyword_vocabulary_is_read_from_the_grammar():
    """Issue 29 item 4: the keywords are defined once, in ``streamsql.lark``; the parser's
    errors, the highlighter and the completer all use grammar/lexical.py's lists. The
    old lexer had its own list, which missed SERDE, EARLIEST, LATEST, TIMESTAMP ..."""
    import re as re_

    from streamjob.grammar import lexical
    from streamjob.shell import completion, lexer

    grammar = lexical.GRAMMAR_FILE.read_text(encoding="utf-8")
    spelled = {w.upper() for w in re_.findall(r'"([A-Za-z]+)"i', grammar)}
    assert spelled and spelled <= lexical.GRAMMAR_KEYWORDS <= set(lexical.KEYWORDS)
    assert lexer.KEYWORDS is lexical.KEYWORDS is completion.KEYWORDS
    assert {"SERDE", "SERDEPROPERTIES", "EARLIEST", "LATEST", "CASCADE"} <= set(lexer.KEYWORDS)
    # the statement starts are the grammar's (INSERT from its raw INSERT_STATEMENT
    # terminal), and the shell's previews
    assert lexical.STATEMENT_KEYWORDS == {
        "add", "alter", "create", "desc", "describe", "discard", "drop", "explain", "insert",
        "list", "optimize", "print", "promote", "reset", "set", "show", "start", "stop", "use",
        "vacuum"}
    assert set(lexer.STATEMENT_KEYWORDS) == {k.upper() for k in lexical.STATEMENT_KEYWORDS} | {
        "SELECT", "WITH"}
    for word in sorted(spelled):  # every keyword of the grammar is highlighted and completed
        assert dict((v, t) for t, v in _tokens(f"x {word.lower()} y"))[word.lower()] in Keyword, word
        assert word in [t for t, _ in _offers(f"SHOW STREAMS; x {word[:-1]}")], word


def test_a_keyword_added_to_the_grammar_joins_the_vocabulary():
    """A statement added to the grammar brings its keywords, and its first word becomes
    a statement keyword, with nothing else edited (the vocabulary is derived)."""
    from streamjob.grammar import lexical

    grammar = lexical.GRAMMAR_FILE.read_text(encoding="utf-8")
    grammar = grammar.replace("          | _explain_statement",
                              "          | _explain_statement\n          | freeze", 1)
    grammar += '\nfreeze: "freeze"i "streamjob"i qualified_name "linger"i INT\n'
    vocabulary = lexical.vocabulary_of(grammar)
    assert {"FREEZE", "LINGER"} <= vocabulary.keywords
    assert "FREEZE" in vocabulary.statement_keywords and "LINGER" not in vocabulary.statement_keywords
    assert ("FREEZE", "STREAMJOB") in vocabulary.openings  # a missing ';' before it is found
    assert lexical.statement_start_re(vocabulary).search("select 1\n freeze streamjob j")
    assert not lexical.STATEMENT_START_RE.search("select 1\n freeze streamjob j")
    assert {("CREATE", "STREAM"), ("SHOW", "CREATE"), ("EXPLAIN", "INSERT")} <= (
        lexical.grammar_vocabulary().openings)
    assert {"FREEZE", "LINGER"}.isdisjoint(lexical.GRAMMAR_KEYWORDS)  # the real grammar's


def test_one_tokenizer_under_the_splitter_the_highlighter_and_the_parser_helpers():
    """The splitter's tokens are grammar/lexical.py's; the highlighter lexes with them
    (same boundaries), and the parser's raw-text pieces are built on them too."""
    from streamjob.grammar import lexical
    from streamjob.client import splitter

    text = ("SELECT a<=1, `b``c`, 'it''s' AS s -- note\nFROM t /* x */ WHERE d = \"e\"; "
            "SHOW 'open")
    assert splitter.Token is lexical.SqlToken
    assert splitter.tokenize(text) == lexical.tokenize(text)
    lexed = [(start, value) for start, _, value in StreamSqlLexer().get_tokens_unprocessed(text)]
    assert lexed == [(t.start, t.text) for t in lexical.tokenize(text)]
    kinds = [k for k, _, _ in lexical.iter_pieces("a 'b' `c` -- d\n'e")]
    assert kinds == ["other", "ws", "str", "ws", "name", "ws", "comment", "ws", "other", "other"]


@pytest.mark.parametrize("text, expected", [
    ("start streamjob j1 from ", ["checkpoint", "earliest", "latest", "savepoint", "timestamp"]),
    ("start streamjob j1 from checkpoint ", ["at"]),
    ("stop streamjob j1 ", ["with"]),
    ("CREATE STREAM s (a int) ROW FORMAT ", ["DELIMITED", "SERDE"]),
    ("create table t (a int) row format serde 'x' with ", ["serdeproperties"]),
    ("show checkpoints ", ["for"]),
    ("print s1 ", ["from", "limit"]),
])
def test_keywords_after_a_word_are_the_grammars(text, expected):
    """After a word of a statement the completer offers what the grammar accepts next
    (the old hand-kept table offered stream names after START ... FROM, and no SERDE)."""
    assert [t for t, _ in _offers(text)] == expected


def test_a_statement_added_to_the_grammar_is_completed(monkeypatch):
    """The completer's keywords after a word come from the grammar's parser: a grammar
    with a new statement completes its next keyword with nothing else edited."""
    from lark import Lark

    from streamjob.grammar import lexical, parser

    grammar = lexical.GRAMMAR_FILE.read_text(encoding="utf-8").replace(
        "          | _explain_statement", "          | _explain_statement\n          | freeze", 1)
    grammar += '\nfreeze: "freeze"i "streamjob"i qualified_name "linger"i INT\n'
    monkeypatch.setattr(parser, "_PARSER", Lark(grammar, parser="lalr", lexer="contextual",
                                                 postlex=parser._AlwaysLexNames()))
    monkeypatch.setattr(parser, "_TERMINAL_KEYWORDS", None)
    assert _offers("freeze ") == [("streamjob", 0)]
    assert _offers("freeze streamjob j1 li") == [("linger", -2)]
