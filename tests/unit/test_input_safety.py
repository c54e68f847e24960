"""Issue 13, points 9 and 14: variables are values, and hostile input (deep nesting,
bytes that are not UTF-8, a multi-megabyte line) gets a located error, never an internal
one. Each test here failed on the main of 2026-11-23 (RecursionError, UnicodeDecodeError,
or a `--var` value that ran an extra statement)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from streamjob.catalog import Catalog
from streamjob.cli import main
from streamjob.exceptions import ParseError
from streamjob.grammar import parse_script
from streamjob.grammar.limits import MAX_LINE_CHARS, MAX_NESTING
from streamjob.script import read_script, substitute

pytestmark = pytest.mark.unit

SETUP = ('CREATE STREAM s (k STRING, v BIGINT) TBLPROPERTIES ("topic"="t", '
         '"kafka.broker.list"="127.0.0.1:9");\n'
         'CREATE TABLE t (k STRING, v BIGINT) STORED AS JSON;\n')


def cli(tmp_path, *args):
    home = tmp_path / "home"
    return CliRunner().invoke(main, list(args), catch_exceptions=False,
                              env={"STREAMJOB_HOME": str(home), "COLUMNS": "200"})


def catalog(tmp_path) -> Catalog:
    return Catalog(f"sqlite:///{tmp_path / 'home' / 'catalog.db'}")


# ----------------------------------------------------------------- point 9: values


JOB = SETUP + ('CREATE STREAMJOB j AS ("insert into t select k, v from s where k = \'${KEY}\' '
               'and v > ${LIMIT}");\n')


@pytest.mark.parametrize("var, value", [
    ("KEY", "x'); DROP STREAMJOB j; --"),           # ends the query's literal
    ("KEY", 'x"); CREATE STREAM evil (a INT) TBLPROPERTIES ("topic"="e", "kafka.broker.list"="h:1"); --'),
    ("LIMIT", "0 or 1=1"),                          # adds tokens where a number stood
    ("LIMIT", '0"); DROP TABLE t; --'),             # ends the job's query string
    ("KEY", "a\nb"),                                # a line break inside a literal
])
def test_a_value_that_would_change_the_statement_is_refused(tmp_path, var, value):
    values = {"KEY": "k1", "LIMIT": "10", var: value}
    column = JOB.splitlines()[2].index(f"${{{var}}}") + 1
    with pytest.raises(ParseError) as e:
        substitute(JOB, values, source="job.sql")
    assert (e.value.line, e.value.column) == (3, column)
    assert f"${{{var}}}" in str(e.value)
    assert value not in str(e.value)  # a value may be a secret: never echoed

    path = tmp_path / "job.sql"
    path.write_text(JOB)
    args = ["submit", str(path)] + [a for k, v in values.items() for a in ("--var", f"{k}={v}")]
    result = cli(tmp_path, *args)
    assert result.exit_code == 1 and "job.sql:3:" in result.stderr
    # Nothing of the script ran: the whole file is refused before any statement.
    cat = catalog(tmp_path)
    assert cat.list_jobs() == [] and cat.list_streams() == [] and cat.list_tables() == []


def test_values_fill_their_token_whatever_they_hold_inside_quotes():
    out = substitute(JOB + 'CREATE TABLE u (a INT) TBLPROPERTIES ("connector"="sql", "url"="${URL}");',
                     {"KEY": "it is; (a) -- not a comment", "LIMIT": "-2.5e3",
                      "URL": "postgresql://u:p@h:5432/db?sslmode=require"})
    statements = parse_script(out)
    assert "k = 'it is; (a) -- not a comment' and v > -2.5e3" in statements[2].query
    assert dict(statements[3].properties)["url"] == "postgresql://u:p@h:5432/db?sslmode=require"


def test_secret_references_pass_through_untouched():
    text = '"password"="${env:PG_PASSWORD}", "key"="${file:/run/secrets/key}"'
    assert substitute(text, {}) == text


# ------------------------------------------------------------ point 14: hostile input


def test_invalid_utf8_in_a_file_is_located(tmp_path):
    path = tmp_path / "latin1.sql"
    path.write_bytes(SETUP.encode() + b"-- caf\xe9 au lait\nCREATE TABLE u (a INT);\n")
    with pytest.raises(ParseError) as e:
        read_script(path)
    assert (e.value.line, e.value.column) == (3, 7)
    assert "0xE9" in str(e.value) and "UTF-8" in str(e.value)
    result = cli(tmp_path, "check", "--offline", str(path))
    assert result.exit_code == 1
    assert "latin1.sql:3:7: error: invalid UTF-8 byte 0xE9" in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_invalid_utf8_in_dash_e_is_located(tmp_path):
    # What Python makes of `streamjob -e $'select \xff'` (surrogateescape).
    result = cli(tmp_path, "-e", "SHOW STREAMS;\nselect \udcff")
    assert result.exit_code == 1
    assert "line 2, column 8: invalid UTF-8 byte 0xFF" in result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.parametrize("where", ["job", "derived", "set"])
def test_deep_nesting_is_located_not_a_recursion_error(tmp_path, where):
    n = 60
    nested = "abs(" * n + "v" + ")" * n
    statement = {
        "job": f'CREATE STREAMJOB j AS ("insert into t select k, {nested} from s");',
        "derived": f"CREATE STREAM d AS SELECT k, {nested} AS v FROM s;",
        "set": f"SET x = {'(' * n}{')' * n};",
    }[where]
    path = tmp_path / "deep.sql"
    path.write_text(SETUP + statement + "\n")
    result = cli(tmp_path, "check", "--offline", str(path))
    assert result.exit_code == 1, result.stdout
    # The error points at the parenthesis that opens level MAX_NESTING + 1.
    opened = [i for i, c in enumerate(statement) if c == "("]
    column = opened[MAX_NESTING] + 1
    assert f"deep.sql:3:{column}: error: the script nests parentheses more than {MAX_NESTING}" \
        in result.stderr
    assert "RecursionError" not in result.stderr


def test_nesting_up_to_the_limit_is_fine(tmp_path):
    n = MAX_NESTING - 2  # the call of the job body and abs(...) levels
    path = tmp_path / "ok.sql"
    path.write_text(SETUP + 'CREATE STREAMJOB j AS ("insert into t select k, '
                    + "abs(" * n + "v" + ")" * n + ' from s");\n')
    result = cli(tmp_path, "check", "--offline", str(path))
    assert result.exit_code == 0, result.stderr


def test_a_multi_megabyte_line_is_located_and_not_echoed_whole(tmp_path):
    path = tmp_path / "long.sql"
    path.write_text(SETUP + 'CREATE TABLE u (a INT) TBLPROPERTIES ("connector"="sql", "url"="'
                    + "x" * (3 * MAX_LINE_CHARS) + '");\n')
    result = cli(tmp_path, "check", "--offline", str(path))
    assert result.exit_code == 1
    assert f"long.sql:3:{MAX_LINE_CHARS + 1}: error: line 3 is longer than" in result.stderr
    assert len(result.stderr) < 2_000
