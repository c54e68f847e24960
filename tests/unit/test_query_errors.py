"""Syntax errors inside a job's quoted query (and a derived stream's query) read as the
statements' errors do (issue 16): ``unexpected 'FORM'``, at the offending token's line and
column in the whole script with a caret under it, and a did-you-mean for a misspelt SQL
keyword. sqlglot often stops one token late (``select id FORM s`` is read as ``id AS FORM``
and fails at ``s``): the misspelt token is reported. No Spark."""

from __future__ import annotations

import pytest

from streamjob.client.check import check_script, scratch_catalog
from streamjob.exceptions import StreamJobError
from streamjob.home import Home

pytestmark = pytest.mark.unit

HEAD = (
    'CREATE STREAM s (id BIGINT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="127.0.0.1:9");\n'
    'CREATE TABLE t (id BIGINT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:////tmp/x.db");\n'
)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return Home.open(tmp_path_factory.mktemp("home"))


def error_of(script: str, home: Home) -> StreamJobError:
    with pytest.raises(StreamJobError) as info:
        check_script(script, "q.sql", scratch_catalog(None), home)
    return info.value


def job(query: str) -> str:
    return HEAD + f'CREATE STREAMJOB j AS ("{query}");\n'


def caret(err: StreamJobError) -> str:
    return err.snippet.splitlines()[-1]


@pytest.mark.parametrize("query, column, text, keyword", [
    ("insert into t select id FORM s", 49, "FORM", "FROM"),         # sqlglot stops at 's'
    ("insert into t select id, id FORM s where id > 1", 53, "FORM", "FROM"),
    ("insert into t select count(*) FORM s", 55, "FORM", "FROM"),   # after ')'
    ("insert into t select id as x FORM s", 54, "FORM", "FROM"),    # sqlglot stops at it
    ("insert into t SELEC id FROM s", 39, "SELEC", "SELECT"),
    ("insert into t select id from s whre id > 1", 56, "whre", "WHERE"),  # stops at 'id'
    ("insert into t select id from s where id > 1 oder by id", 69, "oder", "ORDER"),
    ("insert into t select case when id > 1 then 2 edn from s", 70, "edn", "END"),
])
def test_misspelt_keyword_in_the_query(home, query, column, text, keyword):
    err = error_of(job(query), home)
    assert (err.line, err.column, err.text) == (3, column, text)
    assert err.message == f"unexpected '{text}' in the job's query (did you mean {keyword}?)"
    assert str(err) == f"q.sql:3:{column}: {err.message}"
    assert caret(err) == " " * (column - 1) + "^"


def test_query_error_has_the_statement_errors_form(home):
    statement = error_of("CREAT STREAM s (id BIGINT);\n", home)
    query = error_of(job("insert into t select id FORM s"), home)
    assert statement.message.startswith("unexpected 'CREAT'")
    assert statement.message.endswith("(did you mean CREATE?)")
    assert query.message.startswith("unexpected 'FORM'")
    assert query.message.endswith("(did you mean FROM?)")


def test_multiline_query_points_into_its_line(home):
    err = error_of(HEAD + 'CREATE STREAMJOB j AS ("insert into t\n  select id\n  FORM s");\n', home)
    assert (err.line, err.column, err.text) == (5, 3, "FORM")
    assert err.message == "unexpected 'FORM' in the job's query (did you mean FROM?)"
    assert err.snippet == '  FORM s");\n  ^'


def test_query_opening_on_its_own_line(home):
    # the query starts after AS (\n    " : its first line's columns count from there
    err = error_of(HEAD + 'CREATE STREAMJOB j AS (\n    "insert into t select id frm s");\n', home)
    assert (err.line, err.column, err.text) == (4, 30, "frm")
    assert err.message == "unexpected 'frm' in the job's query (did you mean FROM?)"
    assert caret(err) == " " * 29 + "^"


def test_missing_closing_parenthesis_at_the_end(home):
    err = error_of(job("insert into t select id from s where (id > 1"), home)
    assert (err.line, err.column, err.text) == (3, 69, "")
    assert err.message == "unexpected end of the job's query, expected ')'"
    assert caret(err) == " " * 68 + "^"


def test_missing_closing_parenthesis_before_a_clause(home):
    err = error_of(HEAD + 'CREATE STREAMJOB j AS ("insert into t\n'
                   '  select id from s where (id > 1 group by id");\n', home)
    assert (err.line, err.column, err.text) == (4, 34, "group by")
    assert err.message == "unexpected 'group by' in the job's query, expected ')'"


def test_no_suggestion_for_a_word_far_from_any_keyword(home):
    err = error_of(job("insert into t select id from s )"), home)
    assert (err.line, err.column, err.text) == (3, 56, ")")
    assert err.message == "unexpected ')' in the job's query"


def test_derived_stream_query(home):
    err = error_of(HEAD + "CREATE STREAM d AS SELECT id FORM s;\n", home)
    assert (err.line, err.column, err.text) == (3, 30, "FORM")
    assert err.message.startswith("unexpected 'FORM' in the ")
    assert err.message.endswith("(did you mean FROM?)")
