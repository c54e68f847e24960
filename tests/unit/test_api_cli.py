"""The command line through the HTTP API (issue 15): ``streamjob --server URL --token T``
runs -e, submit and the job verbs against a real uvicorn server of this process, with
no catalog of its own; ``streamjob token create|list|revoke`` manage the tokens. The
CLI runs in-process (click's CliRunner)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from streamjob.api import create_app
from streamjob.api.auth import new_token
from streamjob.api.serve import HttpService
from streamjob.catalog import Catalog
from streamjob.cli import main
from streamjob.home import Home

pytestmark = pytest.mark.unit  # SQLite and a local HTTP server

STREAM = ('CREATE STREAM s (id BIGINT) TBLPROPERTIES ("topic"="t", '
          '"kafka.broker.list"="127.0.0.1:9", "format"="json")')


@pytest.fixture
def served(tmp_path):
    # the admin lets operators (anonymous here) use the test's directory (issue 28)
    home = Home.open(str(tmp_path / "server-home"), {"streamjob.security.file.roots": str(tmp_path)},
                     None)
    catalog = Catalog(home.catalog_url)
    token = new_token()
    catalog.create_token("cli", "operator", token)
    service = HttpService(create_app(catalog, home), "127.0.0.1:0")
    url = service.start()
    yield {"url": url, "catalog": catalog, "home": str(tmp_path / "server-home"),
           "client_home": str(tmp_path / "client-home"), "tmp": tmp_path, "token": token}
    service.stop()
    catalog.close()


def cli(home: str, *args, **env):
    return CliRunner().invoke(main, list(args), catch_exceptions=False,
                              env={"STREAMJOB_HOME": home, "COLUMNS": "200", **env})


def remote(served, *args, **env):
    """``streamjob --server URL ...`` from the client's home, with the operator token."""
    return cli(served["client_home"], "--server", served["url"], *args,
               **{"STREAMJOB_TOKEN": served["token"], **env})


def test_a_client_with_server_needs_no_catalog(served):
    client = served["client_home"]
    out = remote(served, "-e", STREAM + "; SHOW STREAMS")
    assert out.exit_code == 0, out.output
    assert "stream default.s created" in out.stdout
    assert [s.name for s in served["catalog"].list_streams()] == ["s"]

    script = served["tmp"] / "job.sql"
    script.write_text(
        "SET streamjob.trigger.interval = '2s';\n"
        f"CREATE TABLE out (id BIGINT) TBLPROPERTIES (\"connector\"=\"sql\", "
        f"\"url\"=\"sqlite:///{served['tmp']}/out.db\");\n"
        "CREATE STREAMJOB j AS (\"insert into out select id from s\");\n"
        "START STREAMJOB j;\n")
    out = remote(served, "submit", str(script))
    assert out.exit_code == 0, out.output
    job = served["catalog"].require_job("default", "j")
    assert job.desired_state == "RUNNING"
    assert job.session_properties == {"streamjob.trigger.interval": "2s"}  # SET carried over

    listed = remote(served, "list", "--json")
    assert [j["job"] for j in json.loads(listed.stdout)] == ["default.j"]
    status = remote(served, "status", "--json")
    assert [j["job"] for j in json.loads(status.stdout)["jobs"]] == ["default.j"]
    described = remote(served, "describe", "s")
    assert described.exit_code == 0 and "columns" in described.stdout
    assert remote(served, "stop", "j").exit_code == 0
    assert served["catalog"].require_job("default", "j").desired_state == "STOPPED"
    assert remote(served, "drop", "j").exit_code == 0
    assert served["catalog"].get_job("default", "j") is None

    # nothing of it touched the client's home: it has no catalog at all
    assert not (served["tmp"] / "client-home" / "catalog.db").exists()
    [who] = {e.principal for e in served["catalog"].statement_log(100)}
    assert who == "token:cli"


def test_errors_through_the_server_are_located_in_the_file(served):
    script = served["tmp"] / "bad.sql"
    script.write_text(f"{STREAM};\n\nCREATE STREAM s2 (id BIGINT) TBLPROPERTIES "
                      "(\"topic\"=\"t\", \"kafka.broker.lst\"=\"x\");\n")
    out = remote(served, "submit", str(script))
    assert out.exit_code == 1
    first = out.stderr.splitlines()[0]
    column = script.read_text().splitlines()[2].index('"kafka.broker.lst"') + 1
    assert first.startswith(f"Error: {script}:3:{column}: ")
    assert "kafka.broker.list" in first  # did you mean
    assert "Traceback" not in out.output

    down = cli(served["client_home"], "--server", "http://127.0.0.1:9", "list")
    assert down.exit_code == 1
    assert "cannot reach the streamjob server at http://127.0.0.1:9" in down.stderr
    assert "Traceback" not in down.output
    refused = remote(served, "token", "list")
    assert refused.exit_code == 1 and "works on the catalog directly" in refused.stderr


def test_token_verbs_and_a_client_with_a_token(served):
    home = served["home"]
    created = cli(home, "token", "create", "ops", "--role", "operator")
    assert created.exit_code == 0, created.output
    token = created.stdout.strip()
    assert token.startswith("sjt_") and "shown only now" in created.stderr
    viewer = cli(home, "token", "create", "ci", "--role", "viewer").stdout.strip()
    assert cli(home, "token", "create", "ci", "--role", "viewer").exit_code == 1  # exists

    listed = cli(home, "token", "list", "--json")
    assert {t["name"]: t["role"] for t in json.loads(listed.stdout)} == \
        {"ci": "viewer", "ops": "operator", "cli": "operator"}
    assert token not in listed.stdout and viewer not in listed.stdout
    with served["catalog"]._tx() as session:  # only hashes are stored
        from sqlalchemy import text

        stored = " ".join(str(v) for row in session.execute(text("SELECT * FROM api_tokens"))
                          for v in row)
    assert token not in stored and viewer not in stored

    client = served["client_home"]
    anonymous = cli(client, "--server", served["url"], "-e", STREAM)
    assert anonymous.exit_code == 1 and "(401)" in anonymous.stderr
    as_viewer = remote(served, "--token", viewer, "-e", STREAM)
    assert as_viewer.exit_code == 1 and "(403)" in as_viewer.stderr
    assert remote(served, "-e", STREAM, STREAMJOB_TOKEN=token).exit_code == 0
    [entry] = [e for e in served["catalog"].statement_log(100) if e.kind == "CreateStream"]
    assert entry.principal == "token:ops"

    assert cli(home, "token", "revoke", "ops").exit_code == 0
    again = remote(served, "--token", token, "list")
    assert again.exit_code == 1 and "(401)" in again.stderr
    assert cli(home, "token", "revoke", "ops").exit_code == 1

    admin = cli(home, "token", "create", "root", "--role", "admin")
    assert admin.exit_code == 0 and "(admin)" in admin.stderr
    assert remote(served, "-e", "CREATE DATABASE d", STREAMJOB_TOKEN=admin.stdout.strip()).exit_code == 0
    for name in ("ci", "cli", "root"):  # revoking every token leaves the API closed
        assert cli(home, "token", "revoke", name).exit_code == 0
    assert "lets no one in" in cli(home, "token", "list").stdout
    closed = cli(client, "--server", served["url"], "list")
    assert closed.exit_code == 1 and "(401)" in closed.stderr


def test_the_shell_through_the_server(served):
    script = f"{STREAM};\nSHOW STREAMS;\nSELECT * FROM s LIMIT 1;\n\\d s\n{STREAM};\n"
    out = CliRunner().invoke(main, ["--server", served["url"], "shell"], input=script,
                             catch_exceptions=False,
                             env={"STREAMJOB_HOME": served["client_home"], "COLUMNS": "200",
                                  "STREAMJOB_TOKEN": served["token"]})
    assert out.exit_code == 1  # two errors: the preview and the duplicate
    assert "stream default.s created" in out.stdout
    assert "SELECT previews run Spark in this shell" in out.stderr
    assert "Error: <stdin>:5:" in out.stderr and "already exists" in out.stderr
    assert "Traceback" not in out.output
    assert "columns" in out.stdout  # \d s through the API
    assert [s.name for s in served["catalog"].list_streams()] == ["s"]
    assert not (served["tmp"] / "client-home" / "catalog.db").exists()

    from streamjob.api.client import RemoteSession
    from streamjob.home import Home as ClientHome
    from streamjob.shell.app import Shell

    session = RemoteSession(served["url"], served["token"])
    shell = Shell(None, ClientHome.open(served["client_home"], {}, None), interactive=False,
                  session=session)
    try:
        assert shell.names.streams == ["s"]  # completion's names come from the API
    finally:
        shell.close()


def test_a_script_through_the_server_is_checked_whole_then_applied(served, monkeypatch):
    from streamjob.grammar import parse_statement
    from streamjob.client.session import ClientSession

    script = served["tmp"] / "three.sql"
    table = "CREATE TABLE t{n} (id BIGINT) STORED AS JSON;"
    script.write_text(f"{STREAM};\n{table.format(n=1)}\nCREATE TABLE t2 (id BIGINT) "
                      "STORED AS JSON TBLPROPERTIES (\"nope\"=\"1\");\n")
    out = remote(served, "submit", str(script))
    assert out.exit_code == 1 and out.stderr.startswith(f"Error: {script}:3:"), out.output
    assert out.stdout == "" and served["catalog"].list_streams() == []  # nothing applied

    # another client creates t2 after the server's check: s and t1 took effect
    script.write_text(f"{STREAM};\n{table.format(n=1)}\n{table.format(n=2)}\n")
    validate = ClientSession.validate

    def then_t2_appears(self, *args, **kwargs):
        validate(self, *args, **kwargs)
        self.execute(parse_statement(table.format(n=2)))

    monkeypatch.setattr(ClientSession, "validate", then_t2_appears)
    out = remote(served, "submit", str(script))
    assert out.exit_code == 1, out.output
    assert "stream default.s created" in out.stdout and "table default.t1 created" in out.stdout
    lines = out.stderr.splitlines()
    assert lines[0] == f"Error: {script}:3:14: table default.t2 already exists"
    assert lines[-1] == ("2 of 3 statements took effect: stream default.s created, "
                         "table default.t1 created")
