import pytest

from streamjob.exceptions import ParseError
from streamjob.script import substitute

pytestmark = pytest.mark.unit


def test_vars_env_defaults_and_comments(monkeypatch):
    monkeypatch.setenv("SJ_FROM_ENV", "env")
    text = "-- ${NOT_SET}\nselect '${A}', \"${SJ_FROM_ENV}\", ${B:-dflt} /* ${ALSO_NOT} */"
    assert substitute(text, {"A": "cli"}) == (
        "-- ${NOT_SET}\nselect 'cli', \"env\", dflt /* ${ALSO_NOT} */")


def test_cli_value_beats_environment(monkeypatch):
    monkeypatch.setenv("X", "env")
    assert substitute("${X}", {"X": "cli"}) == "cli"


def test_missing_variable_names_line_and_column():
    with pytest.raises(ParseError) as e:
        substitute("a\n  b ${MISSING_VAR_ZZ}", {}, source="f.sql")
    assert (e.value.line, e.value.column) == (2, 5)
    assert str(e.value).startswith("f.sql:2:5: variable ${MISSING_VAR_ZZ} has no value")
    assert e.value.snippet.splitlines()[1] == "    ^"
