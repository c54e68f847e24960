"""The web console in a real browser (issue 15): headless Chromium (Debian's package,
driven by Playwright) against the API served by this process over a job that runs here
on the session's Spark and broker. The job list follows the event stream without a
reload, the job page's charts draw the job's progress samples, and an error in the SQL
editor is marked at its line. The job's savepoints (made with the console's button),
the diff of its two query versions, a shadow's report (promoted from the page) and the
sharing servers (issue 30, issue 33) show,
and a viewer's token sees them with no action offered. Screenshots go to the test's
folder, and to ``$STREAMJOB_SCREENSHOTS`` when set (docs/console.md shows them)."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from streamjob.api import create_app
from streamjob.api.auth import new_token
from streamjob.api.serve import HttpService
from streamjob_tools.dev.broker import create_topic
from streamjob.catalog.records import DesiredState
from streamjob.client.session import ClientSession

from streamjob.executor import shadow_diff, shadow_run

from .test_kafka_source_jobs import World
from .world import close_keeping_spark
from .test_server import Feeder
from .conftest import wait_for

pytestmark = pytest.mark.spark
#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 20

CHROMIUM = os.environ.get("STREAMJOB_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: apt-get install chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _shot(page, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"console-{name}.png"
    page.screenshot(path=str(path))
    if os.environ.get("STREAMJOB_SCREENSHOTS"):
        target = Path(os.environ["STREAMJOB_SCREENSHOTS"])
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target / path.name)


def _compared_shadow(job, query: str) -> dict:
    """A compared shadow's record of ``job`` (as :mod:`streamjob.executor.shadow` writes
    it) whose comparison is :func:`shadow_diff.compare` of two small outputs: one row
    only in the old, two only in the new, one the same (multisets)."""
    old = [{"id": 1, "v": "a"}, {"id": 2, "v": "<b>b</b>"}]
    new = [{"id": 1, "v": "A"}, {"id": 2, "v": "<B>B</B>"}, {"id": 1, "v": "a"}]
    return {"job_uid": job.uid, "job": "default.clicks", "query": query,
            "old_query": job.query, "properties": {}, "status": "compared",
            "at": "2026-01-01 00:00:00", "by": "token:console",
            "change": {"class": "stateless"}, "checkpoint": 3, "batches": [4, 6],
            "run": {"batches_with_input": 3}, "old_table": "seen__shadow_clicks__old",
            "new_table": "seen__shadow_clicks", "old_sink": "default.seen",
            "new_sink": "default.seen", "comparison": shadow_diff.compare(old, new)}


def test_the_console_follows_a_running_job_and_marks_sql_errors(tmp_path, broker, browser,
                                                                 monkeypatch):
    # a progress sample each second, not each 5 s: the charts need two with rates, and
    # a run's first has none (the job runs in this process, so the setting reaches it)
    monkeypatch.setattr("streamjob.manager.progress.SAMPLE_EVERY_S", 1.0)
    world = World(tmp_path, broker.bootstrap)
    topic = f"console_{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, 2)
    feeder = Feeder(broker.bootstrap, topic, every_s=0.02)
    service = session = None
    try:
        world.run(f"""
CREATE STREAM events (id INT, v STRING)
TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
CREATE TABLE seen (id INT, v STRING) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{tmp_path}/seen.db");
CREATE STREAMJOB clicks AS ("insert into seen
select id, v
from events")
JOBPROPERTIES ("morphling.job.checkpoint.interval"="1000");
CREATE STREAMJOB idle AS ("insert into seen select id, v from events");
""")
        job = world.catalog.require_job("default", "clicks")
        # hosted here as `streamjob run` or the shell would: registered, heartbeating,
        # following STOP from other clients (the console's stop button)
        session = ClientSession(world.catalog, world.home, host_jobs=True)
        [(_, started)] = session.execute_script("START STREAMJOB clicks;")
        assert started.runs_in == "here"
        token = new_token()
        world.catalog.create_token("console", "operator", token)
        service = HttpService(create_app(world.catalog, world.home), "127.0.0.1:0")
        url = service.start()
        # two progress samples (one each second here) with rates for the charts (a run's
        # first batch has no input rate: the chart leaves unknown rates out)
        wait_for(lambda: len([s for s in world.catalog.progress_samples(job.uid)
                              if s.input_rows_per_s is not None
                              and s.lag_records is not None]) >= 2, 90,
                 "two progress samples of the running job")

        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(url + "/")
        page.fill("#token", token)
        page.dispatch_event("#token", "change")
        state = page.locator('tr[data-job="default.clicks"] td.state')
        state.filter(has_text="RUNNING").wait_for(timeout=30_000)
        rate = page.locator('tr[data-job="default.clicks"] td.input-rate')
        wait_for(lambda: rate.inner_text().strip(), 30, "the job's input rate in the list")
        _shot(page, tmp_path, "jobs")
        page.evaluate("window.__notReloaded = true")

        # the job page: SQL, properties with origins, charts with the samples
        page.click('a[href="#/jobs/default.clicks"]')
        page.locator("#job-sql").filter(has_text="insert into seen").wait_for(timeout=30_000)
        page.locator("#properties td", has_text="morphling.job.checkpoint.interval").first \
            .wait_for(timeout=10_000)
        points = page.locator("#chart-rate polyline").first.get_attribute("points")
        assert len(points.split()) >= 2, points
        lag_points = page.locator("#chart-lag polyline").first.get_attribute("points")
        assert len(lag_points.split()) >= 2, lag_points
        assert page.locator("#checkpoints tbody tr").count() >= 1
        assert page.locator("#chart-checkpoint-rows polyline").count() == 2
        page.locator("#job-facts dd", has_text="exactly-once").wait_for(timeout=10_000)
        _shot(page, tmp_path, "job")

        # stop from the job page; back on the list the row changes without a reload
        page.click("#job-stop")
        page.click('header a[href="#/"]')
        state.filter(has_text="STOPPED").wait_for(timeout=60_000)
        assert page.evaluate("window.__notReloaded") is True

        # the SQL editor marks an error at its line
        page.click('header a[href="#/sql"]')
        page.fill("#sql", "SHOW STREAMS;\nSHOW STREAMJOBZ;\nSHOW TABLES;")
        page.click("#run")
        error = page.locator("#sql-error")
        error.filter(has_text="line 2").wait_for(timeout=30_000)
        assert error.get_attribute("data-line") == "2"
        assert page.locator("#gutter .bad").inner_text() == "2"
        assert "STREAMJOBS" in error.inner_text()  # did you mean
        _shot(page, tmp_path, "sql-error")
        page.fill("#sql", "SHOW STREAMJOBS;")
        page.click("#run")
        page.locator("#sql-results td", has_text="default.clicks").wait_for(timeout=30_000)
        assert page.locator("#sql-error").is_hidden()

        # savepoints (issue 30): the operator keeps the stopped job's last checkpoint
        page.goto(url + "/#/jobs/default.clicks/savepoints")
        page.locator("#whoami", has_text="operator").wait_for(timeout=10_000)
        page.fill("#savepoint-name", "before_v2")
        page.click("#savepoint-create")
        row = page.locator('#savepoints tr[data-savepoint="before_v2"]')
        row.wait_for(timeout=30_000)
        [kept] = world.catalog.list_savepoints(job.uid)
        assert row.locator("td").nth(1).inner_text() == str(kept.checkpoint_id)
        assert topic in row.locator("td.offsets").inner_text()
        assert row.locator("td", has_text="token:console").count() == 1
        assert row.locator("button.savepoint-start").is_visible()
        _shot(page, tmp_path, "savepoints")
        page.fill("#savepoint-name", "bad name")  # refused here, before any statement
        page.click("#savepoint-create")
        page.locator("#savepoints-error", has_text="savepoint name").wait_for(timeout=10_000)

        # query versions (issue 30): a second version, the diff of the two
        [(_, altered)] = session.execute_script(
            'ALTER STREAMJOB clicks AS ("insert into seen\n'
            'select id, concat(v, \'<i>x</i>\')\nfrom events");')
        assert altered.to_json()["change"]["class"] == "stateless", altered.to_json()
        page.click("#savepoints-view a.tab-versions")
        page.locator("#versions tbody tr").nth(1).wait_for(timeout=30_000)
        diff = page.locator("#version-diff")
        assert diff.locator(".diff-del").all_inner_texts() == ["- select id, v"]
        # the query is text in the page, never markup
        assert diff.locator(".diff-add").all_inner_texts() == \
            ["+ select id, concat(v, '<i>x</i>')"]
        assert diff.locator("i").count() == 0
        assert diff.locator(".diff-same").all_inner_texts() == \
            ["  insert into seen", "  from events"]
        page.select_option("#diff-from", "2")  # the same version both sides: no change
        assert diff.locator(".diff-add, .diff-del").count() == 0
        page.select_option("#diff-from", "1")
        _shot(page, tmp_path, "versions")

        # the shadow report (issue 30): a compared shadow as ALTER ... WITH SHADOW leaves
        # its record (the comparison by shadow_diff.compare; tests/integration/
        # test_shadow*.py run real ones); the operator promotes it from the page
        v3 = "insert into seen\nselect id, upper(v)\nfrom events"
        shadow_at = shadow_run.folder(world.home, "default", "clicks")
        compared = _compared_shadow(job, v3)
        shadow_run.write_record(shadow_at, compared)
        page.on("dialog", lambda dialog: dialog.accept())
        page.click("#versions-view a.tab-shadow")
        only_new = page.locator('#shadow-counts tr[data-difference="only_new"] td').nth(1)
        only_new.filter(has_text="2").wait_for(timeout=30_000)
        assert page.locator('#shadow-counts tr[data-difference="only_old"] td').nth(1) \
            .inner_text() == "1"
        assert page.locator('#shadow-counts tr[data-difference="changed"] td').nth(1) \
            .inner_text() == "0"
        assert page.locator("#shadow-only-new tbody tr").all_inner_texts() == \
            ["1\tA", "2\t<B>B</B>"]  # sorted samples, the markup as text
        assert page.locator("#shadow-only-old tbody tr").all_inner_texts() == ["2\t<b>b</b>"]
        assert page.locator("#shadow-view b, #shadow-view B").count() == 0
        assert "upper(v)" in page.locator("#shadow-sql").inner_text()
        assert page.locator("#shadow-promote").is_visible()
        _shot(page, tmp_path, "shadow")
        page.click("#shadow-promote")
        page.locator("#shadow-none").wait_for(state="visible", timeout=60_000)
        assert world.catalog.require_job("default", "clicks").query == v3
        assert shadow_run.read_record(shadow_at) is None
        shadow_run.write_record(shadow_at, _compared_shadow(job, v3))  # for the viewer

        # servers (issue 33): a sharing server as its process records itself in the
        # catalog (registered, its share declared, holding the lease of job idle)
        sid = "console-test-host:4242:5e7ef00d"
        world.catalog.register_server(sid, "console-test-host", 4242, "local[2]")
        world.catalog.declare_share(sid, 4, ["eu", "gpu"], cores=4, memory_mb=2048)
        idle = world.catalog.require_job("default", "idle")
        assert world.catalog.acquire_job_lease(idle.uid, sid, 60_000, 15_000) is not None
        # and clicks, meant to run (no lease), waits for a server, as placement records
        # it; status lists only jobs meant to run (clicks is stopped after PROMOTE)
        world.catalog.update_job("default", "clicks", desired_state=DesiredState.RUNNING)
        world.catalog.set_job_waiting(job.uid, "no live sharing server has labels gpu2")
        page.click('header a[href="#/servers"]')
        server_row = page.locator(f'#servers tr[data-server="{sid}"]')
        server_row.wait_for(timeout=30_000)
        assert server_row.locator("td.jobs a").all_inner_texts() == ["default.idle"]
        assert "1 of 4" in server_row.inner_text() and "eu, gpu" in server_row.inner_text()
        # its capacity: declared, used by idle's driver (1 core, 128 MiB), free
        assert server_row.locator("td.cores").inner_text() == "1 of 4 used, 3 free"
        assert server_row.locator("td.memory").inner_text() == \
            "128 MiB of 2048 MiB used, 1920 MiB free"
        assert page.locator("#servers-waiting tbody tr").all_inner_texts() == \
            ["default.clicks\tno live sharing server has labels gpu2"]
        _shot(page, tmp_path, "servers")
        world.catalog.set_job_waiting(job.uid, None)
        world.catalog.update_job("default", "clicks", desired_state=DesiredState.STOPPED)

        # a viewer sees the savepoints and versions, and no action anywhere
        viewer = new_token()
        world.catalog.create_token("watcher", "viewer", viewer)
        page.goto(url + "/#/jobs/default.clicks/savepoints")
        page.fill("#token", viewer)
        page.dispatch_event("#token", "change")
        page.locator("#whoami", has_text="viewer").wait_for(timeout=10_000)
        row.wait_for(timeout=30_000)
        for view, shown in (("/savepoints", "#savepoints tbody tr"), ("", "#job-facts dd"),
                            ("/versions", "#versions tbody tr"),
                            ("/shadow", '#shadow-counts tr[data-difference="only_new"]')):
            page.goto(url + "/#/jobs/default.clicks" + view)
            page.locator(shown).first.wait_for(timeout=30_000)
            assert page.locator("main button:visible, main input:visible").count() == 0, view
            assert page.locator(".savepoint-drop, .savepoint-start").count() == 0
        assert page.locator('#shadow-counts tr[data-difference="only_new"] td').nth(1) \
            .inner_text() == "2"  # the viewer sees the report, without the buttons
    finally:
        if service is not None:
            service.stop()
        if session is not None:
            close_keeping_spark(session)
        feeder.stop()
        world.close()
