"""A job's query is planned once per statement (issue 29, item 2): a script's check on
the scratch catalog and its execution share their plans (:mod:`streamjob.planner.memo`),
unless an object the plan read changed in between. Plans are counted at the planner's
entry point (every ``plan_job`` analyzes its query once)."""

from __future__ import annotations

import pytest

from streamjob.catalog import Catalog
from streamjob.home import Home
from streamjob.planner import plan as plan_module
from streamjob.planner.memo import PlanMemo
from streamjob.client.session import ClientSession

pytestmark = pytest.mark.unit

SCRIPT = """
CREATE STREAM s (timestamp TIMESTAMP, value BIGINT) TBLPROPERTIES ("source"="rate");
CREATE TABLE t (v BIGINT) STORED AS PARQUET;
CREATE STREAMJOB j AS ("insert into t select value from s");
START STREAMJOB j;
"""


@pytest.fixture
def planned(monkeypatch) -> list[str]:
    """The queries planned from now on (the real planner runs)."""
    calls: list[str] = []
    real = plan_module.analyze

    def counting(query, *args, **kw):
        calls.append(query)
        return real(query, *args, **kw)
    monkeypatch.setattr(plan_module, "analyze", counting)
    return calls


@pytest.fixture
def session(tmp_path):
    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    yield ClientSession(catalog, home)
    catalog.close()


def test_create_and_start_in_one_script_plan_the_job_once_each(session, planned):
    results = [r for _s, r in session.execute_script(SCRIPT)]
    assert "desired state RUNNING" in results[-1].message
    # checked on the scratch catalog, then executed: 4 plans before the memo
    assert planned == ["insert into t select value from s"] * 2


def test_a_statement_alone_plans_once_and_the_next_script_plans_afresh(session, planned):
    list(session.execute_script(SCRIPT))
    list(session.execute_script("STOP STREAMJOB j;"))
    list(session.execute_script("START STREAMJOB j;"))
    assert len(planned) == 3


def test_the_memo_plans_again_when_an_object_the_plan_read_changed(session, planned):
    list(session.execute_script(SCRIPT.split("CREATE STREAMJOB")[0]))
    memo = PlanMemo()
    args = (session.catalog, session.home, "default", "j", "insert into t select value from s", {})
    first = memo.plan(*args)
    assert memo.plan(*args) is first and len(planned) == 1
    list(session.execute_script("DROP TABLE t; CREATE TABLE t (v BIGINT) STORED AS JSON;"))
    again = memo.plan(*args)
    assert len(planned) == 2 and again is not first
    assert again.sink.stored_as.upper() == "JSON" and memo.plan(*args) is again
