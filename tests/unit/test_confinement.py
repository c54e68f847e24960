"""Issue 28 points 2 and 3, as an attacker would try them on main at 0761648: an operator
(an API operator token; anonymous counts as one) reached any file, variable, host and the
catalog itself through what streamjob resolves and connects to for a job. Each finding is
a test through the real executor with an OPERATOR-role session (ADMIN where the rule
holds for everyone), a real TCP listener standing in for the host a URL names, and real
FIFOs and devices.

On main at 0761648 every test here fails: the listener received the file's content,
``/proc/self/environ`` resolved, a FIFO hung the request, a binary file raised
UnicodeDecodeError (HTTP 500), LOCATION '<home>/catalog.db' and ``"table"="api_tokens"``
on the catalog were accepted, webhooks posted anywhere, literal secrets sat in plain
text in the catalog.
"""

from __future__ import annotations

import concurrent.futures
import os
import socket
import stat
import struct
import threading

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import Role
from streamjob.exceptions import ConnectorError, PropertyError, StreamJobError, ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.security.resolve import resolve, resolve_url
from streamjob.security import PolicyError

pytestmark = pytest.mark.component

SECRET = "TOP-SECRET-CONTENT-4815162342"
#: an event-driven bound on any one resolution: a hang fails the test, not the run
NO_HANG_S = 10


class PgListener:
    """A TCP listener on 127.0.0.1 speaking just enough of PostgreSQL's protocol to ask
    for a cleartext password (as a hostile server would), recording every byte a client
    sends it up to its answer to that request, then closing the connection. ``connected``
    is set when a client has connected."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.data = bytearray()
        self.connected = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while True:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.connected.set()
            with conn:
                conn.settimeout(5)
                try:
                    head = conn.recv(8)
                    self.data += head
                    if len(head) == 8 and struct.unpack("!II", head)[1] == 80877103:  # SSLRequest
                        conn.sendall(b"N")
                        head = conn.recv(8)
                        self.data += head
                    if len(head) >= 4:
                        length = struct.unpack("!I", head[:4])[0]
                        rest = length - len(head)
                        while rest > 0:
                            chunk = conn.recv(rest)
                            if not chunk:
                                break
                            self.data += chunk
                            rest -= len(chunk)
                    conn.sendall(b"R" + struct.pack("!II", 8, 3))  # cleartext password, please
                    # the client's answer, one message (type, length, body), read whole;
                    # then the connection ends (a client that answers waits for the next
                    # message: reading on would wait for conn's timeout)
                    answer = bytearray()
                    while len(answer) < 5 or len(answer) < 1 + struct.unpack("!I", answer[1:5])[0]:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        answer += chunk
                        self.data += chunk
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener():
    lst = PgListener()
    yield lst
    lst.close()


@pytest.fixture
def home(tmp_path):
    return Home.open(tmp_path / "home", {})


def _executor(home: Home, role: Role) -> Executor:
    return Executor(Catalog(home.catalog_url), home, role=role)


def _run(ex: Executor, text: str):
    out = None
    for stmt in parse_script(text):
        out = ex.execute(stmt)
    return out


def _outside(tmp_path):
    path = tmp_path / "outside.txt"
    path.write_text(SECRET + "\n")
    return path


# ---------------------------------------------------------------- secret references


def test_a_file_reference_in_a_sql_url_never_reaches_the_listener(tmp_path, home, listener):
    """The finding: a SQL table whose URL holds ``${file:/any/path}`` was resolved at
    START and the file's content sent to the host the URL names. Now the operator's
    CREATE is refused at the url's value, and a row written before (straight into the
    catalog) is refused at START, even for an admin: nothing of the file reaches it."""
    outside = _outside(tmp_path)
    url = f"postgresql+psycopg://u:${{file:{outside}}}@127.0.0.1:{listener.port}/db"
    op = _executor(home, Role.OPERATOR)
    _run(op, "CREATE STREAM s (value BIGINT) TBLPROPERTIES(\"source\"=\"rate\");")
    with pytest.raises(PolicyError) as e:
        _run(op, f'CREATE TABLE t (a INT)\nTBLPROPERTIES("connector"="sql",\n"url"="{url}");')
    assert "outside the admin's secret directories" in str(e.value)
    assert "streamjob.security.secret.dirs" in str(e.value)
    assert e.value.line == 3  # at the url's value
    # a row written before this change: START resolves nothing outside the secret dirs
    op.catalog.create_table("default", "t", [{"name": "a", "type": "int"}],
                            {"connector": "sql", "url": url}, None)
    admin = _executor(home, Role.ADMIN)
    with pytest.raises(StreamJobError):
        _run(admin, "CREATE STREAMJOB j AS (\"insert into t select value from s\");"
                    "START STREAMJOB j;")
    with pytest.raises(PolicyError):
        resolve_url(url, "test")
    listener.close()
    assert SECRET.encode() not in bytes(listener.data)


def test_the_listener_did_receive_the_file_before(tmp_path, home, listener):
    """The same URL with the file inside the admin's secret directory: the password
    reaches the (allowed, loopback) host — proving the listener would see a leak."""
    (home.root / "secrets" / "pg").write_text(SECRET + "\n")
    url = f"postgresql+psycopg://u:${{file:pg}}@127.0.0.1:{listener.port}/db"
    from streamjob.connectors.sql.engine import engine_for

    with pytest.raises(Exception):  # noqa: B017 - the fake server ends the handshake
        with engine_for(url).connect():
            pass
    listener.close()
    listener.thread.join(NO_HANG_S)
    assert SECRET.encode() in bytes(listener.data)


def test_a_reference_in_the_host_part_is_refused(tmp_path, home):
    """A reference may stand only for a URL's password: in the host, the database or a
    parameter it would choose where the secret goes."""
    (home.root / "secrets" / "host").write_text("127.0.0.1")
    for url in ("postgresql+psycopg://u:p@${file:host}:5432/db",
                "postgresql+psycopg://u:p@127.0.0.1:5432/${env:STREAMJOB_SECRET_DB}",
                "postgresql+psycopg://u@127.0.0.1:5432/db?password=${file:host}"):
        with pytest.raises(PolicyError) as e:
            _run(_executor(home, Role.ADMIN),
                 f'CREATE TABLE t (a INT) TBLPROPERTIES("connector"="sql", "url"="{url}");')
        assert "only for the URL's password" in str(e.value)
        with pytest.raises(PolicyError):
            resolve_url(url, "test")


def _no_hang(fn, *args):
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result(timeout=NO_HANG_S)


def test_proc_environ_a_fifo_a_device_and_a_binary_file_are_clear_errors(tmp_path):
    """``/proc/self/environ`` (and a symlink to it inside the secret directory),
    ``/dev/zero``, a FIFO, a binary file, a directory and an oversized file: each a
    ConnectorError or PolicyError naming the reference, none a hang or a 500."""
    home = Home.open(tmp_path / "home", {"streamjob.security.secret.dirs": f"secrets,/dev"})
    secrets = home.root / "secrets"
    (secrets / "environ").symlink_to("/proc/self/environ")
    os.mkfifo(secrets / "fifo")
    (secrets / "binary").write_bytes(b"\xff\xfe\x00\x01binary")
    (secrets / "big").write_bytes(b"x" * (64 * 1024 + 1))
    (secrets / "dir").mkdir()
    cases = {
        "/proc/self/environ": (PolicyError, "outside the admin's secret directories"),
        "environ": (PolicyError, "outside the admin's secret directories"),
        "/dev/zero": (ConnectorError, "not a regular file"),
        "fifo": (ConnectorError, "not a regular file"),
        "binary": (ConnectorError, "not UTF-8 text"),
        "big": (ConnectorError, "larger than 64 KiB"),
        "dir": (ConnectorError, "not a regular file"),
        "../streamjob.conf": (PolicyError, "outside the admin's secret directories"),
        "missing": (ConnectorError, "cannot be read"),
    }
    for name, (kind, words) in cases.items():
        ref = f"${{file:{name}}}"
        with pytest.raises(kind) as e:
            _no_hang(resolve, ref, '"kafka.sasl.password"')
        assert ref in str(e.value) and words in str(e.value), (name, str(e.value))
        assert isinstance(e.value, StreamJobError)


def test_env_references_only_match_the_admins_pattern(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAMJOB_SECRET_PG", SECRET)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-" + SECRET)
    home = Home.open(tmp_path / "home", {})
    assert resolve("${env:STREAMJOB_SECRET_PG}", "test") == SECRET
    with pytest.raises(PolicyError) as e:
        resolve("${env:AWS_SECRET_ACCESS_KEY}", "test")
    assert "STREAMJOB_SECRET_*" in str(e.value) and "streamjob.security.secret.env" in str(e.value)
    op = _executor(home, Role.OPERATOR)
    with pytest.raises(PolicyError) as e:
        _run(op, 'CREATE STREAM k (a INT) TBLPROPERTIES("topic"="t", '
                 '"kafka.broker.list"="127.0.0.1:9092", "kafka.security.protocol"="SASL_PLAINTEXT",'
                 '\n"kafka.sasl.mechanism"="PLAIN", "kafka.sasl.username"="u",\n'
                 '"kafka.sasl.password"="${env:AWS_SECRET_ACCESS_KEY}");')
    assert e.value.line == 3
    Home.open(tmp_path / "home", {"streamjob.security.secret.env": "AWS_*"})
    assert resolve("${env:AWS_SECRET_ACCESS_KEY}", "test") == "aws-" + SECRET


def test_the_default_secret_directory_is_owner_only(home):
    assert stat.S_IMODE((home.root / "secrets").stat().st_mode) == 0o700


def test_the_policy_s_defaults_are_the_property_registry_s(tmp_path):
    """The admin's settings are engine properties: their names, defaults and meanings are
    registered once (properties/definitions.py, docs/properties.md), and the policy of a
    home reads its defaults from there; the home builds its policy (no import back)."""
    from streamjob.properties.definitions import ENGINE
    from streamjob.security import policy

    home = Home.open(tmp_path / "h", {policy.KAFKA_HOSTS: "kafka.corp:9092"})
    assert set(policy.DEFAULTS) == {p.name for p in ENGINE
                                    if p.name.startswith("streamjob.security.")}
    for key, default in policy.DEFAULTS.items():
        # every setting has a default but the installed packages functions may come from
        assert (default is None) == (key == policy.FUNCTION_PACKAGES), key
        assert default == ENGINE.get(key).default
        expected = "kafka.corp:9092" if key == policy.KAFKA_HOSTS else default
        assert home.policy.setting(key) == expected
    assert home.policy.home == home.root and home.policy.catalog_url == home.catalog_url


def test_a_process_that_opened_no_home_resolves_no_reference(home, monkeypatch):
    """Secret references are resolved by the rules of the home this process opened; with
    none opened there are no rules, and the reference is refused, named (before, a second
    copy of the home's layout in the security package stood in for the default home)."""
    from streamjob.security import policy

    monkeypatch.setenv("STREAMJOB_SECRET_T", SECRET)
    assert resolve("${env:STREAMJOB_SECRET_T}", "test") == SECRET
    monkeypatch.setattr(policy, "_ACTIVE", None)
    with pytest.raises(ConnectorError, match="opened none"):
        resolve("${env:STREAMJOB_SECRET_T}", "test")
    assert resolve("plain", "test") == "plain"  # no reference: no rules needed


def test_an_existing_open_home_is_made_owner_only(tmp_path):
    root = tmp_path / "home"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    for name in ("catalog.db", "streamjob.conf"):
        (root / name).touch()
        (root / name).chmod(0o644)
    Home.open(root, {})
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    for name in ("catalog.db", "streamjob.conf"):
        assert stat.S_IMODE((root / name).stat().st_mode) == 0o600


# ---------------------------------------------------------------- the home and the catalog


@pytest.mark.parametrize("role", [Role.OPERATOR, Role.ADMIN])
def test_the_homes_state_is_never_a_location(home, role):
    ex = _executor(home, role)
    for where in ("catalog.db", "catalog.db-wal", "streamjob.conf", "secret.key", "secrets/x",
                  "logs", "checkpoints/default", ".", ".."):
        with pytest.raises(ValidationError) as e:  # (the checkpoint root: its own words)
            _run(ex, f"CREATE TABLE t (a INT) STORED AS CSV\nLOCATION '{home.root}/{where}';")
        assert (e.value.line, e.value.column) == (2, 10), where
        with pytest.raises(PolicyError):
            _run(ex, f'CREATE STREAM s (a INT) TBLPROPERTIES("source"="files", '
                     f'"path"="{home.root}/{where}");')
    assert ex.catalog.list_tables() == [] and ex.catalog.list_streams() == []


@pytest.mark.parametrize("role", [Role.OPERATOR, Role.ADMIN])
def test_the_catalog_database_is_never_a_sql_table(home, role):
    """``"table"="api_tokens"`` on the catalog would let a job mint tokens."""
    ex = _executor(home, role)
    for url in (home.catalog_url, f"sqlite:///{home.root}/catalog.db-wal",
                f"sqlite:///{home.root}/../home/catalog.db"):
        with pytest.raises(PolicyError) as e:
            _run(ex, f'CREATE TABLE tok (name STRING) TBLPROPERTIES("connector"="sql", '
                     f'"url"="{url}", "table"="api_tokens");')
        assert "catalog" in str(e.value)


def test_a_server_catalog_is_never_a_sql_table(tmp_path):
    """The catalog on PostgreSQL: the same server and database under another spelling."""
    from tests.unit.conftest import PG_URL

    home = Home.open(tmp_path / "home", {}, catalog_url=PG_URL)
    ex = Executor.__new__(Executor)  # no catalog needed for the check itself
    policy = home.policy
    for url in (PG_URL, PG_URL.replace("127.0.0.1", "localhost"),
                PG_URL.replace("127.0.0.1:5432", "[::1]:5432")):
        with pytest.raises(PolicyError):
            policy.check_sql_url(url, "t", operator=False)
    policy.check_sql_url(PG_URL.replace("/test", "/other"), "t", operator=False)
    del ex


def test_a_job_over_a_row_written_before_is_refused_at_start(home):
    """A row written before these rules (straight into the catalog): the plan's check at
    CREATE/START STREAMJOB refuses it, for any role."""
    ex = _executor(home, Role.ADMIN)
    _run(ex, 'CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");')
    ex.catalog.create_table("default", "t", [{"name": "a", "type": "int"}], {}, None,
                            stored_as="csv", location=str(home.root))
    with pytest.raises(PolicyError) as e:
        _run(ex, 'CREATE STREAMJOB j AS ("insert into t select value from s");')
    assert "streamjob home" in str(e.value)


# ---------------------------------------------------------------- operator allowlists


def test_operator_paths_lie_under_the_file_roots(tmp_path, home):
    op = _executor(home, Role.OPERATOR)
    for where in ("/etc", str(tmp_path / "elsewhere"), f"file://{tmp_path}/elsewhere",
                  "hdfs://nn/data"):
        with pytest.raises(PolicyError) as e:
            _run(op, f"CREATE TABLE t (a INT) STORED AS CSV LOCATION '{where}';")
        assert "streamjob.security.file.roots" in str(e.value)
    for where in (f"{home.root}/data/../flights", f"{home.root}/data/{{a,../../etc}}"):
        with pytest.raises(PolicyError) as e:  # a Hadoop glob expands after any check
            _run(op, f'CREATE STREAM g (a INT) TBLPROPERTIES("source"="files", "path"="{where}");')
        assert "'..'" in str(e.value)
    (tmp_path / "link").symlink_to("/etc")
    (home.root / "data").mkdir()
    (home.root / "data" / "etc").symlink_to("/etc")
    with pytest.raises(PolicyError):
        _run(op, f"CREATE TABLE t (a INT) STORED AS CSV LOCATION '{home.root}/data/etc/x';")
    _run(op, f"CREATE TABLE a (a INT) STORED AS CSV LOCATION '{home.root}/data/airlines';")
    _run(op, f"CREATE TABLE w (a INT) STORED AS PARQUET LOCATION '{home.root}/warehouse/default/w';")
    _run(op, "CREATE TABLE d (a INT) STORED AS PARQUET;")  # the warehouse default
    # the admin is not confined by the allowlists
    _run(_executor(home, Role.ADMIN), f"CREATE TABLE e (a INT) STORED AS CSV LOCATION '{tmp_path}/e';")
    # the admin widens the roots
    wide = Home.open(home.root, {"streamjob.security.file.roots": f"data,{tmp_path}/shared,hdfs://nn/data"})
    op2 = _executor(wide, Role.OPERATOR)
    _run(op2, f"CREATE TABLE s1 (a INT) STORED AS CSV LOCATION '{tmp_path}/shared/x';")
    _run(op2, "CREATE TABLE s2 (a INT) STORED AS CSV LOCATION 'hdfs://nn/data/x';")
    with pytest.raises(PolicyError):
        _run(op2, "CREATE TABLE s3 (a INT) STORED AS CSV LOCATION 'hdfs://nn/data/../etc';")


def test_operator_sql_urls_come_from_the_allowlists(home):
    op = _executor(home, Role.OPERATOR)
    refused = {
        "postgresql+psycopg://u@10.1.2.3:5432/db": "streamjob.security.sql.hosts",
        "postgresql+psycopg://u@db.example.com/db": "streamjob.security.sql.hosts",
        "postgresql+psycopg://u@127.0.0.1/db?host=10.1.2.3": "may name another host",
        "postgresql+psycopg://u@127.0.0.1/db?passfile=/etc/passwd": "may name another host",
        "sqlite:////etc/passwd": "streamjob.security.file.roots",
        f"sqlite:///{home.root}/flights.db": "streamjob.security.file.roots",
    }
    for url, words in refused.items():
        with pytest.raises(PolicyError) as e:
            _run(op, f'CREATE TABLE t (a INT) TBLPROPERTIES("connector"="sql", "url"="{url}");')
        assert words in str(e.value), url
    _run(op, 'CREATE TABLE ok1 (a INT) TBLPROPERTIES("connector"="sql", '
             '"url"="postgresql+psycopg://postgres@127.0.0.1:5432/test");')
    _run(op, f'CREATE TABLE ok2 (a INT) TBLPROPERTIES("connector"="sql", '
             f'"url"="sqlite:///{home.root}/data/x.db");')
    # a driver outside the admin's list (an installed one: an uninstalled driver is
    # refused before, as a property value)
    narrow = Home.open(home.root, {"streamjob.security.sql.drivers": "sqlite"})
    with pytest.raises(PolicyError) as e:
        _run(_executor(narrow, Role.OPERATOR), 'CREATE TABLE t (a INT) TBLPROPERTIES('
             '"connector"="sql", "url"="postgresql+psycopg://postgres@127.0.0.1:5432/test");')
    assert "streamjob.security.sql.drivers" in str(e.value)
    # the demo's SQLite file beside the catalog is data for the admin
    _run(_executor(home, Role.ADMIN), f'CREATE TABLE ok3 (a INT) TBLPROPERTIES("connector"="sql", '
                                      f'"url"="sqlite:///{home.root}/flights.db");')


def test_operator_kafka_hosts_come_from_the_allowlist(home):
    op = _executor(home, Role.OPERATOR)
    for brokers in ("10.0.0.1:9092", "127.0.0.1:9092,evil.example.com:9092"):
        with pytest.raises(PolicyError) as e:
            _run(op, f'CREATE STREAM k (a INT) TBLPROPERTIES("topic"="t",\n'
                     f'"kafka.broker.list"="{brokers}");')
        assert "streamjob.security.kafka.hosts" in str(e.value) and e.value.line == 2
    _run(op, 'CREATE STREAM k (a INT) TBLPROPERTIES("topic"="t", "kafka.broker.list"="127.0.0.1:9092");')
    with pytest.raises(PolicyError):
        _run(op, 'CREATE TABLE kt (a INT) TBLPROPERTIES("topic"="t", "kafka.broker.list"="10.0.0.1:9092");')
    with pytest.raises(PolicyError):  # a client key read from anywhere
        _run(op, 'CREATE STREAM k2 (a INT) TBLPROPERTIES("topic"="t", "kafka.broker.list"="127.0.0.1:9092",'
                 '"kafka.security.protocol"="SSL", "kafka.ssl.key.location"="/etc/ssl/private/k.pem");')
    wide = Home.open(home.root, {"streamjob.security.kafka.hosts": "*.kafka.internal:9092"})
    _run(_executor(wide, Role.OPERATOR), 'CREATE STREAM k3 (a INT) TBLPROPERTIES("topic"="t", '
                                         '"kafka.broker.list"="b1.kafka.internal:9092");')


def test_operator_webhooks_come_from_the_allowlist(home):
    op = _executor(home, Role.OPERATOR)
    with pytest.raises(PolicyError) as e:
        _run(op, "SET streamjob.alert.webhook=https://collector.example.com/hook;")
    assert "streamjob.security.webhook.hosts" in str(e.value)
    _run(op, 'CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");'
             f"CREATE TABLE t (a INT) STORED AS PARQUET;")
    with pytest.raises(PolicyError) as e:
        _run(op, 'CREATE STREAMJOB j AS ("insert into t select value from s")\n'
                 'JOBPROPERTIES("streamjob.alert.webhook"="http://169.254.169.254/latest");')
    assert e.value.line == 2
    _run(op, 'CREATE STREAMJOB j AS ("insert into t select value from s") '
             'JOBPROPERTIES("streamjob.alert.webhook"="http://127.0.0.1:9/hook");')
    with pytest.raises(PolicyError):
        _run(op, 'ALTER STREAMJOB j SET JOBPROPERTIES("streamjob.alert.webhook"="http://10.0.0.1/h");')
    # the admin is not confined
    _run(_executor(home, Role.ADMIN), "SET streamjob.alert.webhook=https://collector.example.com/hook;")


def test_no_session_sets_the_admins_settings(home):
    for role in (Role.OPERATOR, Role.ADMIN):
        ex = _executor(home, role)
        with pytest.raises(PropertyError) as e:
            _run(ex, "SET streamjob.security.file.roots=/;")
        assert "engine property" in str(e.value)
        _run(ex, 'CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");'
                 "CREATE TABLE IF NOT EXISTS t (a INT) STORED AS PARQUET;")
        with pytest.raises(PropertyError):
            _run(ex, 'CREATE STREAMJOB j AS ("insert into t select value from s") '
                     'JOBPROPERTIES("streamjob.security.sql.hosts"="*");')
        _run(ex, "DROP STREAM s;")


# ---------------------------------------------------------------- literal secrets at rest


def test_literal_secrets_are_sealed_in_the_catalog(home, monkeypatch):
    """A password written literally is stored encrypted under the admin's key (0600),
    shown masked, and unsealed only when a connection is made."""
    from streamjob.connectors.sql.engine import engine_for

    ex = _executor(home, Role.ADMIN)
    pw = "lit3ral-" + SECRET
    _run(ex, f'CREATE TABLE t (a INT) TBLPROPERTIES("connector"="sql", '
             f'"url"="postgresql+psycopg://postgres:{pw}@127.0.0.1:5432/test");'
             f'CREATE STREAM k (a INT) TBLPROPERTIES("topic"="t", "kafka.broker.list"="127.0.0.1:9092",'
             f'"kafka.security.protocol"="SASL_PLAINTEXT", "kafka.sasl.mechanism"="PLAIN",'
             f'"kafka.sasl.username"="u", "kafka.sasl.password"="{pw}");')
    raw = b"".join(p.read_bytes() for p in home.root.glob("catalog.db*"))
    assert pw.encode() not in raw and b"${sealed:" in raw
    key = home.root / "secret.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    stored = ex.catalog.get_table("default", "t").properties["url"]
    assert engine_for(stored).url.password == pw  # unsealed when a connection is made
    kafka = ex.catalog.get_stream("default", "k").properties["kafka.sasl.password"]
    assert resolve(kafka, "test") == pw
    shown = str(_run(ex, "SHOW CREATE TABLE t;")) + str(_run(ex, "SHOW CREATE STREAM k;"))
    assert pw not in shown and "sealed" not in shown
    # a copied sealed token is refused in a statement (it would open towards another host)
    with pytest.raises(PolicyError):
        _run(_executor(home, Role.OPERATOR),
             f'CREATE TABLE t2 (a INT) TBLPROPERTIES("connector"="sql", '
             f'"url"="postgresql+psycopg://postgres:{stored.split(":", 2)[2].split("@")[0]}@127.0.0.1:9/x");')
    # without the key, a clear error; a row written before (plain) still works
    key.rename(key.with_suffix(".gone"))
    with pytest.raises(ConnectorError) as e:
        resolve(kafka, '"kafka.sasl.password"')
    assert "key file" in str(e.value) and pw not in str(e.value)
    assert resolve("plain-old", "test") == "plain-old"


def test_check_dry_run_seals_nothing_and_makes_no_key(home):
    ex = Executor(Catalog(home.catalog_url), home, dry_run=True)
    _run(ex, 'CREATE TABLE t (a INT) TBLPROPERTIES("connector"="sql", '
             '"url"="postgresql+psycopg://postgres:pw@127.0.0.1:5432/test");')
    assert not (home.root / "secret.key").exists()


def test_the_defaults_keep_the_demo_working(tmp_path):
    """examples/flights/flights.sql as the local admin runs it (and as an operator: its
    data and warehouse paths are under the default roots; only the SQLite file beside the
    catalog is the admin's)."""
    from pathlib import Path

    from streamjob.script import substitute

    home = Home.open(tmp_path / "home", {})
    text = Path(__file__).resolve().parents[2].joinpath("examples/flights/flights.sql").read_text()
    text = substitute(text, {"STREAMJOB_HOME": str(home.root)})
    text = text[:text.index("CREATE STREAMJOB")]
    _run(_executor(home, Role.ADMIN), text)
    op_text = text.replace(f"sqlite:///{home.root}/flights.db", f"sqlite:///{home.root}/data/flights.db")
    _run(_executor(Home.open(tmp_path / "home2", {}), Role.OPERATOR),
         op_text.replace(str(home.root), str(tmp_path / "home2")))


def test_errors_are_statement_errors_never_a_crash(home):
    """Every refusal is a located StreamJobError (the API answers 400, never 500)."""
    op = _executor(home, Role.OPERATOR)
    with pytest.raises(ValidationError) as e:
        _run(op, "CREATE TABLE t (a INT) STORED AS CSV LOCATION '/etc';")
    assert e.value.line == 1


def test_an_operator_names_no_kafka_host_outside_the_list_in_show_topics_or_print(home):
    op = _executor(home, Role.OPERATOR)
    for text in ("SHOW TOPICS FROM '10.0.0.1:9092';", "PRINT 'x' FROM '10.0.0.1:9092' LIMIT 1;"):
        with pytest.raises(PolicyError) as e:
            _run(op, text)
        assert "streamjob.security.kafka.hosts" in str(e.value)


def test_a_preview_over_a_row_written_before_is_refused(home):
    """A SELECT preview reads declared objects as a job does: the same rules for everyone."""
    from streamjob.planner.preview import plan_preview

    catalog = Catalog(home.catalog_url)
    catalog.create_stream("default", "s", [{"name": "a", "type": "int"}],
                          {"source": "files", "path": str(home.root / "logs")}, None)
    with pytest.raises(PolicyError) as e:
        plan_preview(catalog, home, "select a from s")
    assert "own state" in str(e.value)


@pytest.mark.parametrize("catalog_url", ["sqlite"], indirect=True)
def test_through_the_http_api_a_refusal_is_a_located_400_never_a_500(tmp_path, catalog_url):
    """An operator token against a real server (uvicorn on 127.0.0.1): the file reference,
    /proc/self/environ and the catalog as a table are 400s naming the rule; a FIFO in the
    secret directory at START neither hangs nor 500s."""
    from streamjob.api.auth import new_token
    from tests.unit.test_api import Api

    api = Api(tmp_path, catalog_url)
    try:
        token = new_token()
        api.catalog.create_token("ops", "operator", token)
        os.mkfifo(api.home.root / "secrets" / "fifo")
        for url, words in ((f"postgresql+psycopg://u:${{file:{_outside(tmp_path)}}}@127.0.0.1:9/db",
                            "secret directories"),
                           ("postgresql+psycopg://u:${file:/proc/self/environ}@127.0.0.1:9/db",
                            "secret directories"),
                           (api.home.catalog_url, "catalog's own database")):
            r = api.sql(f'CREATE TABLE t (value BIGINT)\nTBLPROPERTIES("connector"="sql", "url"="{url}");',
                        token)
            assert r.status_code == 400, r.text
            error = r.json()["error"]
            assert error["type"] == "PolicyError" and words in error["message"]
            assert error["line"] == 2 and SECRET not in r.text
        r = api.sql('CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");'
                    'CREATE TABLE t (value BIGINT) TBLPROPERTIES("connector"="sql", '
                    '"url"="postgresql+psycopg://u:${file:fifo}@127.0.0.1:9/db");'
                    'CREATE STREAMJOB j AS ("insert into t select value from s");'
                    "START STREAMJOB j;", token)
        assert r.status_code == 200, r.text  # START's schema check names the FIFO, the job retries
    finally:
        api.close()


def test_a_webhooks_password_is_sealed_and_still_sent_as_basic_auth(tmp_path):
    """``streamjob.alert.webhook`` with ``user:password``: sealed in the catalog, the
    receiver (a real HTTP server) still gets the decoded basic auth."""
    import base64

    from streamjob.alerts import AlertEvaluator, WebhookSender
    from tests.unit.test_alerts import Receiver, at, deliver, evaluate

    home = Home.open(tmp_path / "home", {})
    ex = _executor(home, Role.ADMIN)
    receiver, sender = Receiver(), WebhookSender(retries=0, backoff_s=0.01, timeout_s=5)
    try:
        _run(ex, 'CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");'
                 "CREATE TABLE t (value BIGINT) STORED AS PARQUET;"
                 f"SET streamjob.alert.webhook='{receiver.url(userinfo='alice:pa%40' + SECRET + '@')}';"
                 'CREATE STREAMJOB j AS ("insert into t select value from s");')
        raw = b"".join(p.read_bytes() for p in home.root.glob("catalog.db*"))
        assert SECRET.encode() not in raw
        ex.catalog.update_job("default", "j", status="FAILED")
        deliver(sender, evaluate(AlertEvaluator(), ex.catalog, at(0)))
        (post,) = receiver.wait_for(1)
        assert post["auth"] == "Basic " + base64.b64encode(f"alice:pa@{SECRET}".encode()).decode()
    finally:
        sender.close()
        receiver.close()


def test_an_operators_zookeeper_is_checked_before_it_is_asked(home):
    """``"kafka.zookeeper"`` (old scripts) makes the spec ask ZooKeeper for brokers: a host
    outside the list is refused before any connection (a listener sees nothing)."""
    lst = socket.create_server(("127.0.0.1", 0))
    lst.settimeout(0)
    wide = Home.open(home.root, {"streamjob.security.kafka.hosts": "localhost"})
    try:
        with pytest.raises(PolicyError) as e:
            _run(_executor(wide, Role.OPERATOR),
                 f'CREATE STREAM k (a INT) TBLPROPERTIES("topic"="t",\n'
                 f'"kafka.zookeeper"="127.0.0.1:{lst.getsockname()[1]}");')
        assert e.value.line == 2 and "kafka.zookeeper" in str(e.value)
        with pytest.raises(BlockingIOError):
            lst.accept()  # nobody connected
    finally:
        lst.close()


def test_a_query_password_is_sealed_too(home):
    from streamjob.connectors.sql.engine import engine_for

    ex = _executor(home, Role.ADMIN)
    _run(ex, 'CREATE TABLE q (a INT) TBLPROPERTIES("connector"="sql", '
             f'"url"="postgresql+psycopg://127.0.0.1:5432/test?user=postgres&password={SECRET}");')
    stored = ex.catalog.get_table("default", "q").properties["url"]
    assert SECRET not in stored and "password=${sealed:" in stored
    assert engine_for(stored).url.query["password"] == SECRET
