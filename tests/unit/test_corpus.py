"""The script corpus: valid scripts pass ``check``; broken ones fail at the right line,
column and words (``-- expect: LINE:COL: words`` on their first line)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamjob.client.check import check_script, scratch_catalog
from streamjob.cli import main
from streamjob.exceptions import StreamJobError
from streamjob.home import Home
from streamjob.script import substitute

from . import example_functions

pytestmark = pytest.mark.unit

CORPUS = Path(__file__).parent.parent / "corpus"
EXAMPLES = Path(__file__).parent.parent.parent / "examples"
VALID = sorted((CORPUS / "valid").glob("*.sql")) + sorted(EXAMPLES.glob("*/*.sql"))
INVALID = sorted((CORPUS / "invalid").glob("*.sql"))
EXPECT = re.compile(r"^-- expect: (\d+):(\d+): (.+)$")


@pytest.fixture(scope="module")
def home(tmp_path_factory):  # with the example functions in its functions/
    return example_functions.install(Home.open(tmp_path_factory.mktemp("home")))


def _text(path: Path, home: Home) -> str:
    variables = {"STREAMJOB_HOME": str(home.root),  # examples/nexmark's files: NEXMARK_DIR
                 "NEXMARK_DIR": str(home.root / "nexmark")}
    return substitute(path.read_text(), variables, source=str(path))


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_scripts_pass_check(path, home):
    report = check_script(_text(path, home), str(path), scratch_catalog(None), home)
    assert report.statements >= 1


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_broken_scripts_fail_at_the_right_place(path, home):
    m = EXPECT.match(path.read_text().splitlines()[0])
    assert m, f"{path.name} has no '-- expect: LINE:COL: words' first line"
    line, column, words = int(m.group(1)), int(m.group(2)), m.group(3)
    with pytest.raises(StreamJobError) as info:
        check_script(_text(path, home), str(path), scratch_catalog(None), home)
    err = info.value
    assert words in err.message
    assert (err.line, err.column) == (line, column), err.message
    assert err.snippet and err.snippet.splitlines()[-1] == " " * (column - 1) + "^"


def test_check_cli_prints_file_line_col_error_and_caret(tmp_path):
    bad = CORPUS / "invalid" / "unknown_job_property.sql"
    result = CliRunner().invoke(main, ["--home", str(tmp_path), "check", "--offline", str(bad)])
    assert result.exit_code == 1
    lines = result.stderr.splitlines() if hasattr(result, "stderr") else result.output.splitlines()
    assert lines[0] == (f"{bad}:9:3: error: unknown job property 'morphling.job.checkpoint."
                        "intervall'; did you mean 'morphling.job.checkpoint.interval'?")
    assert lines[1] == '  "morphling.job.checkpoint.intervall"="1000"'
    assert lines[2] == "  ^"
    assert "Traceback" not in result.output


def test_check_cli_ok_and_catalog_untouched(tmp_path):
    good = CORPUS / "valid" / "slipstream_delimited.sql"
    runner = CliRunner()
    result = runner.invoke(main, ["--home", str(tmp_path), "check", "--offline", "-v", str(good)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("OK (9 statements)")
    listed = runner.invoke(main, ["--home", str(tmp_path), "list", "--json"])
    assert listed.exit_code == 0 and listed.output.strip() == "[]"


def test_submit_then_describe_cli(tmp_path):
    import json

    runner = CliRunner()
    home = ["--home", str(tmp_path)]
    script = CORPUS / "valid" / "derived_and_sql_sinks.sql"
    assert runner.invoke(main, [*home, "submit", str(script)]).exit_code == 0
    out = runner.invoke(main, [*home, "describe", "balances_job", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    props = {p["property"]: (p["value"], p["origin"]) for p in data["properties"]}
    assert props["morphling.job.checkpoint.interval"] == (1000, "SET")
    assert props["morphling.checkpoint.retained"] == (10, "JOBPROPERTIES")
    assert props["morphling.result.auto.flush"] == ("false", "SET")
    assert data["guarantee"] == "exactly-once" and data["desired_state"] == "RUNNING"
    table = json.loads(runner.invoke(main, [*home, "describe", "balances", "--json"]).output)
    assert {p["property"]: p["value"] for p in table["properties"]}["url"] == \
        "postgresql://app:***@db:5432/bank"
    missing = runner.invoke(main, [*home, "describe", "nope"])
    assert missing.exit_code == 1 and "stream or table default.nope does not exist" in missing.output
