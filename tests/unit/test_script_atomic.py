"""A script is checked whole before anything changes (issue 16): ``submit``, ``run`` and
``-e`` try every statement on a scratch copy of the catalog first (as ``check --offline``
does), so a wrong statement leaves the catalog as it was; a statement failing while the
script is applied after that says which statements took effect. SQLite catalog, no Spark."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from streamjob.catalog import Catalog
from streamjob.cli import main
from streamjob.grammar import parse_statement
from streamjob.client.session import ClientSession

pytestmark = pytest.mark.unit

STREAM = ('CREATE STREAM {name} (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", '
          '"kafka.broker.list"="127.0.0.1:9");')
GOOD = "\n".join([
    STREAM.format(name="s"),
    "CREATE TABLE out (k STRING, v DOUBLE) STORED AS JSON;",
    'CREATE STREAMJOB j AS ("insert into out select k, v from s");',
    "START STREAMJOB j;",
]) + "\n"
#: GOOD with its third statement wrong (column ``w`` does not exist).
BAD = GOOD.replace("select k, v from s", "select k, w from s")


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    return {"home": str(home), "url": f"sqlite:///{home}/catalog.db", "tmp": tmp_path}


def cli(env, *args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False,
                              env={"STREAMJOB_HOME": env["home"], "COLUMNS": "200"})


def objects(env) -> tuple:
    """Every stream, table and job of the catalog, by name."""
    with Catalog(env["url"]) as c:
        return (sorted(s.name for s in c.list_streams()), sorted(t.name for t in c.list_tables()),
                sorted(j.name for j in c.list_jobs()))


def script(env, text: str) -> str:
    path = env["tmp"] / "job.sql"
    path.write_text(text)
    return str(path)


def run_it(env, how: str, text: str):
    if how == "-e":
        return cli(env, "-e", text)
    return cli(env, how, *(["--until-idle"] if how == "run" else []), script(env, text))


@pytest.mark.parametrize("how", ["submit", "run", "-e"])
def test_a_wrong_third_statement_changes_nothing_and_the_fixed_script_applies(env, how):
    cli(env, "-e", "SHOW STREAMS")  # the catalog exists, empty
    from pyspark import SparkContext

    gateway = SparkContext._gateway  # noqa: SLF001 - whether this test launches a JVM
    result = run_it(env, how, BAD)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    where = "line 3, column" if how == "-e" else f"{env['tmp'] / 'job.sql'}:3:"
    assert lines[0].startswith(f"Error: {where}") and "w" in lines[0], lines
    assert lines[1] == BAD.splitlines()[2] and lines[2].strip() == "^"  # located, caret
    assert len(lines) == 3 and result.stdout == ""  # no result printed, no "took effect"
    assert objects(env) == ([], [], [])
    # a refused file starts no Spark either: `run` starts Spark beside the statements
    # only once the whole file passed its check (it launched a JVM here before, whose
    # gateway then made test_spark_log's launch a no-op on the same worker)
    import threading

    assert not [t for t in threading.enumerate() if t.name == "spark-prestart"]
    assert SparkContext._gateway is gateway  # noqa: SLF001

    if how == "run":  # run hosts the job it starts: submit the fixed file instead
        how = "submit"
    result = run_it(env, how, GOOD)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "stream default.s created" in result.stdout
    assert objects(env) == (["s"], ["out"], ["j"])


def test_a_wrong_statement_is_reported_as_check_reports_it(env):
    path = script(env, BAD)
    checked, submitted = cli(env, "check", "--offline", path), cli(env, "submit", path)
    assert checked.exit_code == submitted.exit_code == 1
    # check: "FILE:L:C: error: MSG" + snippet; submit: "Error: FILE:L:C: MSG" + snippet
    head, _, message = checked.stderr.splitlines()[0].partition(" error: ")
    assert submitted.stderr.splitlines()[0] == f"Error: {head} {message}"
    assert submitted.stderr.splitlines()[1:] == checked.stderr.splitlines()[1:]


def test_set_values_are_seen_in_order_by_the_check_and_carry_over_between_e(env):
    create = 'CREATE STREAMJOB j AS ("insert into out select k, v from s");'
    cli(env, "-e", GOOD.split("CREATE STREAMJOB")[0])  # s and out
    result = cli(env, "-e", "SET morphling.job.enable.checkpoint = false",
                 "-e", f"{create}\nSTART STREAMJOB j FROM EARLIEST;")
    assert result.exit_code == 1 and "line 2, column" in result.stderr
    assert "morphling.job.enable.checkpoint=false" in result.stderr
    assert objects(env) == (["s"], ["out"], [])  # the CREATE STREAMJOB did not run


def test_a_failure_while_applying_says_which_statements_took_effect(env, monkeypatch):
    """Another client creates stream c between the check and the apply: the check passed,
    the third CREATE fails on the real catalog."""
    cli(env, "-e", "SHOW STREAMS")
    text = "\n".join([STREAM.format(name="a"), "CREATE TABLE b (k STRING) STORED AS JSON;",
                      "", STREAM.format(name="c"), "CREATE TABLE d (k STRING) STORED AS JSON;"])
    validate = ClientSession.validate

    def then_another_client_creates_c(self, *args, **kwargs):
        validate(self, *args, **kwargs)
        with Catalog(env["url"]) as other:
            ClientSession(other, self.home).execute(parse_statement(STREAM.format(name="c")))

    monkeypatch.setattr(ClientSession, "validate", then_another_client_creates_c)
    result = cli(env, "submit", script(env, text))
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert lines[0] == f"Error: {env['tmp'] / 'job.sql'}:4:15: stream default.c already exists"
    assert lines[1:3] == [text.splitlines()[3], " " * 14 + "^"]
    assert lines[3] == ("2 of 4 statements took effect: stream default.a created, "
                        "table default.b created; nothing after line 4 ran")
    assert objects(env) == (["a", "c"], ["b"], [])  # d was not created
