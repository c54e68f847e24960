"""Fixtures of the integration tests: the flights replayed into the session's broker,
the expected results computed in batch with pandas, and a runner for the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import create_topic

ROOT = Path(__file__).resolve().parents[2]
FLIGHTS_SQL = ROOT / "examples" / "flights" / "flights.sql"
STREAMJOB = str(Path(sys.executable).with_name("streamjob"))
PARTITIONS = 2


ZOOKEEPER_CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"

# The longest process scenarios (1-2.5 min each), mostly second variants, are marked
# `slow` on the tests themselves (test_server's PostgreSQL variants, the standby
# takeover, the flights crash-resume runs, the Hadoop-URI cluster run): `make test` runs
# most scenarios once, `make test-slow` (and CI) the rest. `--durations=25` in setup.cfg
# prints the longest calls of every run.


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory):
    """A standalone ZooKeeper (Debian package ``zookeeper``) on 127.0.0.1 and a free port,
    with its own data dir, for the whole session (TESTING.md); yields ``host:port``.

    Ready once it answers ``ruok`` with ``imok`` (polled; a dead server fails at once)."""
    import shutil
    import socket

    from streamjob_tools.dev.broker import free_port

    java = shutil.which("java") or (os.environ.get("JAVA_HOME", "") + "/bin/java")
    if not Path("/usr/share/java/zookeeper.jar").exists():
        pytest.fail("ZooKeeper is not installed: apt-get install zookeeper (TESTING.md)")
    base = tmp_path_factory.mktemp("zookeeper")
    port = free_port()
    (base / "data").mkdir()
    (base / "zoo.cfg").write_text(
        f"tickTime=2000\ndataDir={base / 'data'}\nclientPort={port}\n"
        "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
        "4lw.commands.whitelist=ruok\nmaxClientCnxns=0\n")
    with open(base / "zookeeper.log", "wb") as log:
        proc = subprocess.Popen(
            [java, "-cp", ZOOKEEPER_CLASSPATH, "org.apache.zookeeper.server.ZooKeeperServerMain",
             "zoo.cfg"], cwd=base, stdout=log, stderr=subprocess.STDOUT)

    def answers() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"ruok")
                return s.recv(4) == b"imok"
        except OSError:
            return False

    deadline = time.monotonic() + 60
    while not answers():
        try:
            code = proc.wait(timeout=0.1)  # the poll interval; returns early if it died
        except subprocess.TimeoutExpired:
            code = None
        if code is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"ZooKeeper did not come up on 127.0.0.1:{port} (exit {code}); "
                        f"see {base / 'zookeeper.log'}")
    yield f"127.0.0.1:{port}"
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="session")
def flights_df():
    return nyc.flights()


@pytest.fixture(scope="session")
def flights_topic(broker, flights_df):
    """Topic ``flights`` (2 partitions) holding every flight once, as JSON."""
    create_topic(broker.bootstrap, "flights", PARTITIONS)
    nyc.replay(broker.bootstrap, "flights", nyc.flight_records(flights_df), PARTITIONS)
    return "flights"


@pytest.fixture(scope="session")
def expected(flights_df):
    """carrier_delays and late_flights computed in batch by pandas over the same data."""
    import pandas as pd

    airlines = pd.read_csv(nyc.data_dir() / "airlines.csv")
    joined = flights_df.merge(airlines, on="carrier")
    delays = (joined.groupby(["carrier", "name", "month"])
              .agg(flights=("year", "size"), avg_dep_delay=("dep_delay", "mean"),
                   max_arr_delay=("arr_delay", "max"))
              .reset_index().rename(columns={"name": "airline"}))
    late = flights_df[flights_df["arr_delay"] > 60][
        ["year", "month", "day", "carrier", "flight", "origin", "dest", "dep_delay", "arr_delay"]]
    return {"carrier_delays": delays, "late_flights": late.reset_index(drop=True)}


@dataclass
class Cli:
    """Runs the ``streamjob`` command as a user would, against one home."""

    home: Path
    bootstrap: str

    def env(self, **extra) -> dict:
        env = dict(os.environ)
        env.update({"STREAMJOB_HOME": str(self.home), "FLIGHTS_BROKER": self.bootstrap})
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def run(self, *args, timeout=600, **env) -> subprocess.CompletedProcess:
        return subprocess.run([STREAMJOB, *args], env=self.env(**env), capture_output=True,
                              text=True, timeout=timeout)

    def popen(self, *args, **env) -> subprocess.Popen:
        return subprocess.Popen([STREAMJOB, *args], env=self.env(**env),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)

    def json(self, *args) -> list | dict:
        res = self.run(*args, "--json")
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    def prepare_home(self) -> None:
        nyc.copy_airlines(self.home / "data" / "airlines")

    def last_checkpoints(self) -> dict[str, int | None]:
        """Each job's ``last_checkpoint`` as ``streamjob list --json`` shows it (its
        latest checkpoint id, None before one): ``{"db.name": id}``, read from the home's
        SQLite catalog in this process, {} before a process made it or while it cannot be
        read. For polls: one query, where a ``streamjob list`` costs a Python start (about
        1.5 s of CPU, taken from the Spark job under test on a 2-core host)."""
        from sqlalchemy.exc import SQLAlchemyError

        from streamjob.catalog import Catalog
        from streamjob.exceptions import CatalogError

        db = self.home / "catalog.db"
        if not db.is_file():
            return {}
        try:
            with Catalog(f"sqlite:///{db}") as catalog:
                latest = {job.qualified_name: catalog.latest_checkpoint(job.uid)
                          for job in catalog.list_jobs()}
        except (CatalogError, SQLAlchemyError):
            return {}
        return {name: cp.checkpoint_id if cp else None for name, cp in latest.items()}


@pytest.fixture
def cli(tmp_path, broker, flights_topic) -> Cli:
    c = Cli(tmp_path / "home", broker.bootstrap)
    c.prepare_home()
    return c


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):
    """Poll ``predicate`` (a catalog read) until true; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def children(pid: int) -> dict[int, str]:
    """The processes whose parent is ``pid``: {pid: command name} (from /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                found[int(entry.name)] = stat[stat.index("(") + 1:stat.rindex(")")]
    return found


def kill_group(proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
    os.killpg(proc.pid, sig)
    proc.wait(60)
