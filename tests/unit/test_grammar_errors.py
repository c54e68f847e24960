"""Unit tests of the StreamSQL parser's errors and robustness (fuzzing); no Spark."""

from __future__ import annotations

import random

import pytest

from streamjob.exceptions import ParseError
from streamjob.grammar import parse_script

from .test_grammar import SLIPSTREAM_SCRIPT, error_of

pytestmark = pytest.mark.unit

# --------------------------------------------------------------------------- errors


def test_error_misspelled_keyword_on_line_three():
    err = error_of("show streams;\nshow tables;\nSTART STREAMJOB delays FORM CHECKPOINT 3;")
    assert (err.line, err.column, err.text) == (3, 24, "FORM")
    assert err.message.startswith("unexpected 'FORM', expected one of: FROM")
    assert "did you mean FROM?" in err.message
    assert err.source == "test.sql"
    assert str(err).startswith("test.sql:3:24: unexpected 'FORM'")
    assert err.snippet == "START STREAMJOB delays FORM CHECKPOINT 3;\n" + " " * 23 + "^"


def test_error_misspelled_statement_keyword():
    err = error_of("CRATE STREAM s (a int);")
    assert (err.line, err.column, err.text) == (1, 1, "CRATE")
    assert "did you mean CREATE?" in err.message
    assert "__ANON" not in err.message and "LPAR" not in err.message


def test_error_keyword_glued_to_a_word():
    err = error_of("CREATE STREAMX s (a int)")
    assert (err.line, err.column, err.text) == (1, 8, "STREAMX")
    assert "expected one of: DATABASE, FUNCTION, OR, SAVEPOINT, STREAM, STREAMJOB, ..." in err.message


def test_error_missing_closing_paren_of_columns():
    err = error_of("CREATE STREAM s (\n  a int,\n  b string\nTBLPROPERTIES('topic'='t');")
    assert (err.line, err.column, err.text) == (4, 1, "TBLPROPERTIES")
    assert "expected one of:" in err.message and "')'" in err.message and "','" in err.message


def test_error_missing_comma_between_columns():
    err = error_of("create table t (\n  a int\n  b string)")
    assert (err.line, err.column, err.text) == (3, 3, "b")
    assert err.message.startswith("unexpected 'b', expected one of:")
    assert "','" in err.message


def test_error_unterminated_string():
    err = error_of("show streams;\ncreate streamjob j as (\"insert into t\n select * from s);\n")
    assert (err.line, err.column) == (2, 24)
    assert err.message == "unterminated string starting here"
    assert err.text == '"insert into t'


def test_error_unterminated_comment_and_quoted_name():
    err = error_of("show streams; /* never closed\nshow tables;")
    assert (err.line, err.column, err.message) == (1, 15, "unterminated comment starting here")
    err = error_of("drop table `oops;")
    assert (err.line, err.column, err.message) == (1, 12, "unterminated quoted name starting here")


def test_error_missing_semicolon_between_statements():
    err = error_of("START STREAMJOB a\nSTOP STREAMJOB b;")
    assert (err.line, err.column, err.text) == (2, 1, "STOP")
    assert err.message.startswith("missing ';' between statements")


def test_error_missing_semicolon_after_raw_query():
    err = error_of("create stream v as select * from s\n  CREATE TABLE t (a int);")
    assert (err.line, err.column, err.text) == (2, 3, "CREATE")
    assert err.message.startswith("missing ';' between statements")
    err = error_of("set a.b = 1\nstart streamjob j;")
    assert (err.line, err.column, err.text) == (2, 1, "start")


def test_error_unexpected_end_of_script():
    err = error_of("CREATE STREAM s (a int, b string")
    assert (err.line, err.column, err.text) == (1, 33, "")
    assert err.message.startswith("unexpected end of script, expected one of:")


def test_error_unquoted_streamjob_query():
    err = error_of("create streamjob j as (insert into t select 1)")
    assert (err.line, err.column, err.text) == (1, 24, "insert")
    assert "quoted string" in err.message


def test_error_bad_character_and_bad_property_value():
    err = error_of("describe @x")
    assert (err.line, err.column, err.text) == (1, 10, "@")
    assert "a name" in err.message
    err = error_of("create stream s (a int) tblproperties('watermark.delay' = 10 seconds)")
    assert (err.line, err.column, err.text) == (1, 62, "seconds")
    assert "expected one of: ',', ')'" in err.message


def test_error_duplicate_clause_and_column():
    err = error_of("create table t (a int) location 'x' location 'y'")
    assert (err.line, err.column, err.message) == (1, 37, "duplicate LOCATION clause")
    err = error_of("create table t (a int, A string)")
    assert (err.line, err.column) == (1, 24)
    assert "declared twice" in err.message


def test_error_create_stream_as_needs_a_query():
    err = error_of("create stream v as foo")
    assert (err.line, err.column, err.text) == (1, 20, "foo")
    assert "query" in err.message
    err = error_of("create stream v as (select 1")
    assert (err.line, err.column) == (1, 20)
    assert "missing ')'" in err.message


def test_error_set_without_equals():
    err = error_of("set a.b 1")
    assert (err.line, err.column, err.text) == (1, 9, "1")
    assert err.message == "unexpected '1', expected '='"


def test_non_string_input_is_a_type_error():
    with pytest.raises(TypeError):
        parse_script(b"show streams")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- speed and robustness


def test_fifty_statement_script_parses():
    assert len(parse_script(SLIPSTREAM_SCRIPT * 7)) == 56


FUZZ_SEED = SLIPSTREAM_SCRIPT + r"""
set a.b = 'x;y' -- c
; reset; desc `A`.b; create stream v as (select ';' from s) ;
create table t (a array<string>, m map<string,int>, c struct<a:int>) row format delimited
  fields terminated by '\001' stored as json location "/x" tblproperties(k=v,);
alter streamjob j set jobproperties('a'='1'); show checkpoints for streamjob j; drop table if exists t;
"""
FUZZ_ALPHABET = "abcSELECTcreate;()'\"`,.=<>:-/*\\\n \t@#019\u00e9\ufeff\x00\r"


def test_fuzz_only_parse_errors_escape():
    rng = random.Random(20240601)
    for _ in range(400):
        chars = list(FUZZ_SEED)
        for _ in range(rng.randint(1, 6)):
            op, pos = rng.random(), rng.randrange(len(chars) + 1)
            if op < 0.33:
                chars.insert(pos, rng.choice(FUZZ_ALPHABET))
            elif chars and op < 0.66:
                del chars[min(pos, len(chars) - 1)]
            elif chars:
                chars[min(pos, len(chars) - 1)] = rng.choice(FUZZ_ALPHABET)
        if rng.random() < 0.2:
            start = rng.randrange(len(chars))
            chars = chars[start : start + rng.randrange(300)]
        text = "".join(chars)
        try:
            parse_script(text)
        except ParseError as err:
            assert err.line is not None and 1 <= err.line <= text.count("\n") + 1
            assert err.column is not None and err.column >= 1
            assert err.snippet is not None and err.snippet.endswith("^")
            assert err.message and "__ANON" not in err.message and "$END" not in err.message


def test_random_garbage_only_parse_errors():
    rng = random.Random(7)
    for _ in range(200):
        text = "".join(rng.choice(FUZZ_ALPHABET + "xyz ") for _ in range(rng.randrange(60)))
        try:
            parse_script(text)
        except ParseError:
            pass
