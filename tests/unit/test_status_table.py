"""``streamjob status`` fits the terminal (issue 16): one line per job at 80 columns
(lower-priority columns dropped, long names and errors cut with "…"), every column at
200. Real CLI (click's CliRunner), real SQLite catalog; the width is ``COLUMNS``, which
rich reads as a terminal's."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from click.testing import CliRunner

from streamjob.catalog import Catalog
from streamjob.cli import main
from streamjob.client.render import STATUS_COLUMNS

pytestmark = pytest.mark.component

LONG = "a_rather_long_job_name_for_an_eighty_column_terminal"
SETUP = f"""
CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="127.0.0.1:9");
CREATE TABLE out (k STRING, v DOUBLE) STORED AS JSON;
CREATE STREAMJOB j AS ("insert into out select k, v from s");
CREATE STREAMJOB {LONG} AS ("insert into out select k, v from s");
"""


def streamjob(home, *args, columns: int) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False,
                                env={"STREAMJOB_HOME": str(home), "COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def home(tmp_path):
    """Two jobs: default.j RUNNING on a live job manager with its progress, the long-named
    one FAILED with a long error."""
    home = tmp_path / "home"
    streamjob(home, "-e", SETUP, columns=200)
    catalog = Catalog(f"sqlite:///{home}/catalog.db")
    catalog.register_server("node1:4242:0badcafe", "node1", 4242, "local[*]")
    running = catalog.update_job("default", "j", status="RUNNING", desired_state="RUNNING",
                                 owner="node1:4242:0badcafe")
    catalog.update_progress(running.uid, {
        "batch_id": 1234, "input_rows_per_s": 13000.0, "processed_rows_per_s": 12345.5,
        "lag_records": 4_200_000, "last_checkpoint_at": datetime.now(timezone.utc).isoformat(),
        "updated_at": datetime.now(timezone.utc).isoformat()})
    catalog.update_job("default", LONG, status="FAILED",
                       last_error="Kafka topic flights is missing from the broker's metadata "
                                  "after 30 s (kafka.request.timeout.ms); " + "x" * 150)
    return home


def _table(out: str) -> tuple[str, list[str]]:
    """The header line and the job lines of the status table."""
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("┃"))
    return header, [line for line in lines if line.startswith("│")]


def test_status_at_80_columns_is_one_line_per_job_with_the_first_columns(home):
    out = streamjob(home, "status", columns=80)
    assert max(len(line) for line in out.splitlines()) <= 80
    header, rows = _table(out)
    assert len(rows) == 2, out  # one line per job
    shown = [c.strip() for c in header.strip("┃").split("┃")]
    assert shown[:2] == ["job", "state"] and {"rows/s", "lag"} <= set(shown), out
    assert "desired" not in shown  # the lowest priority goes first
    running = next(r for r in rows if "default.j " in r)
    assert "RUNNING" in running and "12,345.5" in running and "4200000" in running
    failed = next(r for r in rows if r is not running)
    assert "default.a_rather" in failed and "…" in failed and "FAILED" in failed


def test_status_at_200_columns_shows_every_column(home):
    out = streamjob(home, "status", columns=200)
    header, rows = _table(out)
    assert [c.strip() for c in header.strip("┃").split("┃")] == [c for c, _ in STATUS_COLUMNS]
    assert len(rows) == 2, out
    assert any(f"default.{LONG}" in r for r in rows)  # whole: there is room
    assert any("Kafka topic flights is missing" in r for r in rows)


def test_status_without_jobs_is_one_line(tmp_path):
    """No jobs: one line saying so, not an empty bordered table (issue 16)."""
    out = streamjob(tmp_path / "empty", "status", columns=80)
    assert out.splitlines()[0] == "no streamjobs", out
    assert "┏" not in out and "└" not in out


def test_a_job_whose_job_manager_is_gone_keeps_its_whole_state_at_100_columns(tmp_path):
    """The guide's section 7 at 100 columns: ``RUNNING (job manager gone)`` was cut to
    ``RUNNING (job mana…`` while the empty desired, rows/s, lag and error columns stayed.
    The state is the one column that must read whole: a lower-priority column goes
    first."""
    home = tmp_path / "home"
    streamjob(home, "-e", SETUP, columns=200)
    catalog = Catalog(f"sqlite:///{home}/catalog.db")
    catalog.update_job("default", "j", status="RUNNING", desired_state="RUNNING",
                       owner="node9:31268:11b83fb1")  # no such live job manager
    out = streamjob(home, "status", columns=100)
    assert max(len(line) for line in out.splitlines()) <= 100
    header, rows = _table(out)
    gone = next(r for r in rows if "default.j " in r)
    assert "RUNNING (job manager gone)" in gone, out
    assert "desired" not in header, out  # the lowest priority gave way instead
