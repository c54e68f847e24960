"""``-e`` as a session: what SET says about where it lasts, and bare SELECTs (previews)
among the statements: located errors, refused through ``--server``. No Spark: every
SELECT here fails before Spark would start (the preview's rows are shown by
tests/integration/test_shell.py)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from streamjob.catalog import Catalog
from streamjob.cli import main

pytestmark = pytest.mark.unit

STREAM = ('CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", '
          '"kafka.broker.list"="127.0.0.1:9")')
TABLE = "CREATE TABLE out (k STRING, v DOUBLE) STORED AS JSON"
ENDS = "nothing follows it in this command, so it applies to nothing"


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def cli(home, *args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False,
                              env={"STREAMJOB_HOME": str(home), "COLUMNS": "200"})


def test_set_says_what_it_is_for_and_when_nothing_follows_it(home):
    alone = cli(home, "-e", "SET morphling.checkpoint.retained = 7")
    assert alone.exit_code == 0, alone.stderr
    assert alone.stdout.strip() == (
        "morphling.checkpoint.retained=7 (for streamjobs created later in this session; "
        f"existing streamjobs keep theirs); {ENDS} (SET lasts for the statements after it in "
        "the same -e or file, or a shell session)")

    # followed in the same -e, or by a later -e of the same invocation: it lasts, and says so
    res = cli(home, "-e", f"{STREAM}; {TABLE}; SET morphling.checkpoint.retained = 7",
              "-e", 'CREATE STREAMJOB j AS ("insert into out select k, v from s"); '
                    "SET morphling.job.checkpoint.interval = 1000; SHOW STREAMS")
    assert res.exit_code == 0, res.stderr
    assert "morphling.checkpoint.retained=7 (for streamjobs created later" in res.stdout
    assert "morphling.job.checkpoint.interval=1000 (for streamjobs" in res.stdout
    assert ENDS not in res.stdout
    job = Catalog(f"sqlite:///{home}/catalog.db").get_job("default", "j")
    assert job.session_properties == {"morphling.checkpoint.retained": "7"}  # captured

    # the last statement of the last -e: nothing follows
    res = cli(home, "-e", "SHOW STREAMS", "-e", "RESET morphling.checkpoint.retained; "
              "SET spark.sql.shuffle.partitions=4")
    assert res.exit_code == 0, res.stderr
    assert "morphling.checkpoint.retained reset: streamjobs created later in this session " \
           "take its default" in res.stdout
    assert ("spark.sql.shuffle.partitions=4 (for streamjobs created later in this session "
            f"and its SELECT previews; existing streamjobs keep theirs); {ENDS}") in res.stdout


def test_a_select_of_e_is_a_preview_whose_errors_are_located_in_the_text(home):
    res = cli(home, "-e", f"{STREAM};\nSELECT k,\n  vv FROM s LIMIT 2;\nSHOW STREAMS")
    assert res.exit_code == 1
    assert "stream default.s created" in res.stdout  # the statements before it ran
    assert "streams" not in res.stdout  # those after it did not
    lines = res.stderr.splitlines()
    assert lines[0].startswith("Error: line 3, column 3: unknown column 'vv'"), lines
    assert "did you mean 'v'" in lines[0]
    assert lines[1:] == ["  vv FROM s LIMIT 2;", "  ^"]
    assert "Traceback" not in res.stderr


def test_a_select_through_server_is_refused_before_anything_is_sent(home):
    # nothing listens on port 1: any request would fail with "cannot reach"
    res = cli(home, "--server", "http://127.0.0.1:1", "-e", "SELECT k FROM s LIMIT 5")
    assert res.exit_code == 1
    assert res.stderr.startswith(
        "Error: line 1, column 1: a SELECT preview runs Spark in this process over the "
        "catalog; through --server http://127.0.0.1:1 it is refused (the server runs no "
        "previews)"), res.stderr
    assert "cannot reach" not in res.stderr
