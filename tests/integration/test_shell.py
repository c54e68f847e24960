"""``streamjob shell`` through a real terminal: pexpect runs it in a pseudo-terminal
(TERM=xterm, 40x140) and pyte, a terminal emulator, keeps the screen it draws, so that
what a user would see (the prompt, the line being edited, a completion) is checked on the
screen, and printed results in the transcript. Waits are event-driven: each read blocks
until the shell writes something, up to a deadline. The tests that need Spark in the shell
(a SELECT preview, a job the shell runs) take turns in one shell process (:func:`spark_shell`):
one JVM start, not two.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

import pexpect
import pyte
import pytest

pytestmark = pytest.mark.system
#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 70

STREAMJOB = str(Path(sys.executable).with_name("streamjob"))
ROWS, COLS = 40, 140
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|[\x07\x08\x0e\x0f]")
PROMPT = "streamjob> "
UP = "\x1b[A"


class Terminal:
    """``streamjob --home HOME shell`` in a pseudo-terminal, its screen emulated."""

    def __init__(self, home: Path, rows: int = ROWS, cols: int = COLS, **environ: str) -> None:
        env = dict(os.environ, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS=str(cols),
                   LINES=str(rows), **environ)
        for name in ("STREAMJOB_HOME", "PAGER", "LESS"):  # the shell's own defaults
            if name not in environ:
                env.pop(name, None)
        self.home = home
        self.child = pexpect.spawn(STREAMJOB, ["--home", str(home), "shell"], env=env,
                                   dimensions=(rows, cols), encoding="utf-8",
                                   codec_errors="replace")
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.Stream(self.screen)
        self.raw = ""  # everything the shell wrote
        self.mark = 0  # transcript offset after which `output` looks

    # -- reading -------------------------------------------------------------------

    def _pump(self, timeout: float) -> bool:
        """Read what the shell wrote within ``timeout`` s; False at its exit."""
        try:
            data = self.child.read_nonblocking(65536, timeout=max(timeout, 0.01))
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.raw += data
        self.stream.feed(data)
        return True

    @property
    def transcript(self) -> str:
        """The output without escape sequences and carriage returns."""
        return ANSI.sub("", self.raw).replace("\r", "")

    def output(self) -> str:
        """The transcript since the last :meth:`send`."""
        return ANSI.sub("", self.raw[self.mark:]).replace("\r", "")

    def lines(self) -> list[str]:
        """The screen, one string per row, right-trimmed."""
        return [line.rstrip() for line in self.screen.display]

    def cursor_line(self) -> str:
        """The screen row the cursor is on."""
        return self.screen.display[self.screen.cursor.y].rstrip()

    def wait(self, predicate, what: str, timeout: float = 30.0) -> None:
        """Read until ``predicate()`` holds; fail naming ``what`` with the screen."""
        deadline = time.monotonic() + timeout
        while not predicate():
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"timed out after {timeout} s waiting for {what}; screen:\n"
                            + "\n".join(self.lines()) + "\n--- output:\n" + self.output()[-3000:])
            if not self._pump(min(left, 1.0)) and not predicate():
                pytest.fail(f"the shell exited while waiting for {what}; output:\n"
                            + self.output()[-3000:])

    def expect(self, pattern: str, timeout: float = 30.0) -> re.Match:
        """Wait until the output since the last send matches ``pattern`` (a regex)."""
        found: list[re.Match] = []

        def match() -> bool:
            m = re.search(pattern, self.output())
            if m:
                found.append(m)
            return m is not None

        self.wait(match, f"output matching {pattern!r}", timeout)
        return found[0]

    def expect_screen(self, pattern: str, timeout: float = 30.0) -> None:
        """Wait until the cursor's row on the screen matches ``pattern``."""
        self.wait(lambda: re.search(pattern, self.cursor_line()) is not None,
                  f"the cursor line to match {pattern!r}", timeout)

    def prompt(self, timeout: float = 30.0) -> None:
        """Wait for an empty prompt on the cursor's row."""
        self.wait(lambda: self.cursor_line() == PROMPT.rstrip()
                  and self.screen.cursor.x == len(PROMPT), "the prompt", timeout)

    # -- writing -------------------------------------------------------------------

    def send(self, keys: str) -> None:
        """Type ``keys`` (``\\r`` is Enter, ``\\t`` Tab); output after this is new."""
        self.mark = len(self.raw)
        self.child.send(keys)

    def complete(self, typed: str, item: str, timeout: float = 30.0) -> None:
        """Type ``typed``, wait for the completion menu (which opens while typing) to
        offer ``item``, and press Tab, as a user would."""
        self.send(typed)
        self.wait(lambda: any(line.strip().startswith(item) for line in
                              self.lines()[self.screen.cursor.y + 1:]),
                  f"the completion menu to offer {item!r}", timeout)
        self.send("\t")

    def run(self, statement: str, timeout: float = 30.0) -> str:
        """Type a one-line statement and Enter; wait for the next prompt; its output."""
        self.send(statement + "\r")
        self.expect(r"\n", timeout)
        self.prompt(timeout)
        return self.output()

    def exit(self, keys: str = "\\q\r", timeout: float = 60.0) -> None:
        """Quit (``\\q``, or ``keys``) and wait for the process to end."""
        self.send(keys)
        self.wait(lambda: not self.child.isalive(), "the shell to exit", timeout)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


@pytest.fixture(scope="module")
def spark_shell(tmp_path_factory):
    """The module's one shell that starts Spark, for the tests that need Spark in the
    shell (a SELECT preview, a job the shell runs): a JVM and a Python start each cost
    10-20 s on the project's hosts, so the tests take turns in one process, each with
    its own names. A call returns the running shell when it waits at an empty prompt,
    else (the first call, or a test before left it elsewhere) a new one; its home is
    ``terminal.home``, its temporary directory (preview checkpoints) ``terminal.tmp``."""
    terminals: list[Terminal] = []

    def get() -> Terminal:
        if terminals:
            t = terminals[-1]
            if t.child.isalive():
                t._pump(0.01)
                if t.cursor_line() == PROMPT.rstrip() and t.screen.cursor.x == len(PROMPT):
                    return t
            t.close()
        root = tmp_path_factory.mktemp("spark_shell")
        tmp = root / "tmp"
        tmp.mkdir()
        t = Terminal(root / "home", TMPDIR=str(tmp))
        t.tmp = tmp
        terminals.append(t)
        t.prompt()
        return t

    yield get
    for t in terminals:
        t.close()


@pytest.fixture
def term_factory(tmp_path):
    terminals: list[Terminal] = []

    def spawn(home: Path | None = None, rows: int = ROWS, cols: int = COLS,
              **environ: str) -> Terminal:
        t = Terminal(home or tmp_path / "home", rows, cols, **environ)
        terminals.append(t)
        return t

    yield spawn
    for t in terminals:
        t.close()


KAFKA_STREAM = ('CREATE STREAM {name} (id int, name string) TBLPROPERTIES("topic"="{topic}", '
                '"kafka.broker.list"="{bootstrap}", "format"="json")')


def test_editing_completion_confirmation_and_errors(term_factory):
    """Prompt, multi-line input, completion of a keyword, a catalog name and a property
    name, DROP confirmation, meta commands, and a one-line error after which the shell
    goes on."""
    t = term_factory()
    t.prompt()
    assert "no job manager is running: jobs started here run in this shell" in t.transcript

    # a statement over two lines: Enter before the ';' continues it
    t.send("CREATE STREAM clicks (id int, name string)\r")
    t.expect_screen(r"^\s*->$")
    t.send(' TBLPROPERTIES("topic"="clicks", "kafka.broker.list"="127.0.0.1:9", "format"="json");\r')
    t.expect(r"stream default\.clicks created")
    t.prompt()

    # keyword completion
    t.complete("SHOW STREAMJ", "STREAMJOBS")
    t.expect_screen(r"^streamjob> SHOW STREAMJOBS$")
    t.send(";\r")
    t.expect(r"streamjobs")
    t.prompt()

    # catalog name completion (the stream created above)
    t.complete("DESCRIBE STREAM cli", "clicks")
    t.expect_screen(r"^streamjob> DESCRIBE STREAM clicks$")
    t.send(";\r")
    t.expect(r"kafka\.broker\.list")
    t.prompt()

    # property name completion inside TBLPROPERTIES(
    t.complete('CREATE TABLE sink (id int, name string) TBLPROPERTIES("conn', "connector")
    t.expect_screen(r'TBLPROPERTIES\("connector"$')
    t.send('="console");\r')
    t.expect(r"table default\.sink created")
    t.prompt()

    # DROP asks; "n" keeps the stream
    t.send("DROP STREAM clicks;\r")
    t.expect(r"Drop stream clicks\? \[y/N\]")
    t.send("n\r")
    t.expect(r"stream clicks not dropped")
    t.prompt()
    assert "clicks" in t.run("SHOW STREAMS;")

    # an error: one red line with line:col inside the statement, the offending line with
    # a caret under the column, then the prompt again
    t.send("CREATE STREAM bad (id int)\r")
    t.expect_screen(r"->$")
    t.send('TBLPROPERTIES("topik"="x");\r')
    m = t.expect(r"Error: (\d+):(\d+): ([^\n]*)\n")
    assert (m.group(1), m.group(2)) == ("2", "15"), m.group(0)
    assert "topik" in m.group(3) and "did you mean 'topic'" in m.group(3)
    t.prompt()
    after = t.output()[m.end():]
    assert "Traceback" not in t.transcript, t.transcript
    assert after.strip().splitlines() == ['TBLPROPERTIES("topik"="x");', " " * 14 + "^",
                                          PROMPT.strip()], after
    assert "bad" not in t.run("SHOW STREAMS;")

    # USE: completion of a database name, the prompt names the current database, and
    # unqualified names resolve in it; SHOW CREATE completes the new keywords and names
    assert "database sales created" in t.run("CREATE DATABASE sales;")
    t.complete("USE sa", "sales")
    t.expect_screen(r"^streamjob> USE sales$")
    t.send(";\r")
    t.expect(r"using database sales")
    t.expect_screen(r"^streamjob:sales>$")
    t.send("CREATE TABLE here (id int) TBLPROPERTIES('connector'='console');\r")
    t.expect(r"table sales\.here created")
    t.expect_screen(r"^streamjob:sales>$")
    t.complete("SHOW CREATE TA", "TABLE")
    t.send(" default.sink;\r")
    t.expect(r"CREATE TABLE default\.sink \(")
    t.expect_screen(r"^streamjob:sales>$")
    t.send("USE default;\r")
    t.prompt()

    # meta commands
    assert "Meta commands" in t.run("\\help")
    assert "streamjobs" in t.run("\\l")
    assert "Output format is JSON" in t.run("\\json")
    out = t.run("SHOW TABLES;")
    assert json.loads(out[out.index("["):out.rindex("]") + 1])[0]["table"] == "sink"
    t.exit()
    assert t.child.exitstatus == 0


def test_history_persists_across_sessions(term_factory, tmp_path):
    """A statement of one session is recalled with Up in the next (``<home>/shell_history``)."""
    home = tmp_path / "hist"
    first = term_factory(home)
    first.prompt()
    assert "streams" in first.run("SHOW STREAMS;")
    first.exit("\x04")  # Ctrl-D
    assert (home / "shell_history").exists()

    second = term_factory(home)
    second.prompt()
    second.send(UP)
    second.expect_screen(r"^streamjob> SHOW STREAMS;$")
    second.send("\r")
    second.expect(r"streams")
    second.prompt()
    second.exit()
    assert first.child.exitstatus == second.child.exitstatus == 0


def _produce(bootstrap: str, topic: str, records: list[dict]) -> None:
    """Produce JSON records, the last alone and flushed (the broker reports the end
    offset as the last batch's base offset + 1, see tools/streamjob_tools/dev/flights.py)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1)
    try:
        for r in records[:-1]:
            producer.send(topic, json.dumps(r).encode())
        producer.flush()
        producer.send(topic, json.dumps(records[-1]).encode())
        producer.flush()
    finally:
        producer.close()


#: What must never reach a user's terminal without --debug (issue 16).
NOISE = re.compile(r"Exception|Traceback|^\s*at org\.apache|StackOverflowError|Py4J", re.M)
FLIGHTS = ("CREATE STREAM flights (year INT, month INT, day INT, carrier STRING, flight INT, "
           "origin STRING, dest STRING, dep_delay DOUBLE, arr_delay DOUBLE) TBLPROPERTIES "
           '("topic"="{topic}", "kafka.broker.list"="{bootstrap}", "format"="json");')


def test_select_shows_rows_of_a_kafka_stream(spark_shell, broker, flights_topic):
    """SELECT ... LIMIT 3 prints three rows as they arrive and returns to the prompt; a
    SELECT that finds nothing waits until Ctrl-C, which stops it cleanly even while its
    micro-batch runs (issue 16: a 1,000-line java.lang.StackOverflowError), and the next
    SELECT works. Nothing of Spark, the JVM or pyspark's Python workers reaches the
    terminal (a BrokenPipeError traceback of pyspark's worker daemon followed successful
    previews): it goes to <home>/logs/spark.log. The shell is the module's Spark shell
    (:func:`spark_shell`): the next test runs a job in it and checks its exit."""
    from streamjob_tools.dev.broker import create_topic

    topic = f"shell_{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    _produce(broker.bootstrap, topic, [{"id": i, "name": f"n{i}"} for i in range(1, 6)])
    t = spark_shell()
    home, tmp = t.home, t.tmp  # tmp: the shell's temporary directory (preview checkpoints)
    t.run(KAFKA_STREAM.format(name="s", topic=topic, bootstrap=broker.bootstrap) + ";")
    t.send("SELECT id, name FROM s LIMIT 3;\r")
    m = t.expect(r"(?s)id +\| name\n-+\+-+\n(.*?)\n3 rows\n", timeout=120)
    rows = [r.split("|") for r in m.group(1).splitlines()]
    assert [(a.strip(), b.strip()) for a, b in rows] == [("1", "n1"), ("2", "n2"), ("3", "n3")]
    t.prompt()
    # Spark started on this first SELECT; the JVM's banner went to its log, not the screen
    log = home / "logs" / "spark.log"
    assert f"starting Spark (its log: {log})" in t.transcript
    assert "Setting default log level" not in t.transcript

    # Ctrl-C while the first micro-batch (all 336,776 flights) runs: its offsets are
    # written (offsets/0 in the preview's checkpoint), its commit is not
    t.run(FLIGHTS.format(topic=flights_topic, bootstrap=broker.bootstrap))
    t.send("SELECT * FROM flights WHERE carrier = 'ZZ' LIMIT 1;\r")
    t.expect(r"Ctrl-C stops", timeout=60)
    t.wait(lambda: any(tmp.glob("streamjob-select-*/offsets/0")), "batch 0 to start", 60)
    assert not any(tmp.glob("streamjob-select-*/commits/0")), "batch 0 ended too soon"
    t.send("\x03")
    t.expect(r"\n0 rows \(stopped by Ctrl-C\)\n")
    t.prompt()
    assert not any(tmp.glob("streamjob-select-*")), "the preview's checkpoint is left"
    out = t.run("SELECT name FROM s WHERE id = 5 LIMIT 1;", timeout=60)  # the session still works
    assert re.search(r"(?s)name\n-+\nn5\n1 row\n", out), out
    noise = [line for line in t.transcript.splitlines() if NOISE.search(line)]
    assert not noise, t.transcript  # and again after the shell's exit, in the next test
    assert "StackOverflowError" not in log.read_text()  # not just hidden: gone


def _rows(directory: Path) -> int:
    """Rows in the JSON files of a file table."""
    return sum(len(f.read_text().splitlines()) for f in directory.glob("*.json"))


def test_start_without_a_server_runs_the_job_in_the_shell(spark_shell, broker, tmp_path):
    """START with no job manager running: the shell runs the job, says so, and stops it
    (after asking) when it exits. The shell is the module's Spark shell (:func:`spark_shell`,
    after the previews of the test before when it ran): nothing of Spark, the JVM or
    pyspark's Python workers reached the terminal, the exit included."""
    topic = f"shell_{uuid.uuid4().hex[:8]}"
    from streamjob_tools.dev.broker import create_topic

    create_topic(broker.bootstrap, topic, 1)
    _produce(broker.bootstrap, topic, [{"id": 1, "name": "a"}])
    t = spark_shell()
    t.run(KAFKA_STREAM.format(name="src", topic=topic, bootstrap=broker.bootstrap) + ";")
    out = tmp_path / "out"
    t.run(f"CREATE TABLE t (id int, name string) STORED AS JSON LOCATION '{out}';")
    assert "created" in t.run('CREATE STREAMJOB j AS ("insert into t select id, name from src") '
                               'JOBPROPERTIES("morphling.job.checkpoint.interval"="1000");')
    t.send("START STREAMJOB j;\r")
    t.expect(r"no job manager is running: this shell runs streamjob default\.j; it stops "
             r"when the shell exits", timeout=120)
    t.prompt()
    # Ctrl-C of a SELECT stops the SELECT only, not the job the shell hosts
    t.send("SELECT * FROM src WHERE id < 0;\r")
    t.expect(r"Ctrl-C stops", timeout=60)
    t.send("\x03")
    t.expect(r"0 rows \(stopped by Ctrl-C\)")
    t.prompt()
    _produce(broker.bootstrap, topic, [{"id": 2, "name": "b"}])
    t.wait(lambda: _rows(out) >= 2,
           "the job to write both records", 60)
    jobs = t.run("\\l")
    # wider than 140 columns: one field per line (\x auto)
    assert re.search(r"job +\| default\.j\nstatus +\| RUNNING\n", jobs), jobs
    assert "Interrupted" not in t.transcript and "failed" not in t.transcript
    assert "Setting default log level" not in t.transcript
    t.send("\\q\r")
    t.expect(r"streamjob default\.j runs in this shell and stops when it exits\. Exit\? \[y/N\]")
    t.send("y\r")
    t.expect(r"stopping default\.j")
    t.wait(lambda: not t.child.isalive(), "the shell to exit", 60)
    noise = [line for line in t.transcript.splitlines() if NOISE.search(line)]
    assert not noise, t.transcript


PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


def test_pasted_text_keeps_its_indentation_and_long_results_are_paged(term_factory, tmp_path):
    """A multi-line statement pasted (the terminal's bracketed paste) is kept as pasted,
    not re-indented line by line, on the screen and in the history; a result taller
    than the terminal goes through less (LESS=-SRXF, as pgcli), ``\\pager off`` prints
    it whole."""
    home = tmp_path / "paste"
    t = term_factory(home, rows=16)
    t.prompt()
    pasted = ["CREATE STREAM pasted (", "    id int,", "        name string",
              ') TBLPROPERTIES("topic"="p", "kafka.broker.list"="127.0.0.1:9");']
    t.send(PASTE_START + "\r".join(pasted) + PASTE_END)
    t.wait(lambda: any(line.endswith("->         name string") for line in t.lines()),
           "the pasted lines on the screen")
    screen = [line.strip() for line in t.lines()]
    assert ["-> " + line for line in pasted[1:]] == [
        line for line in screen if line.startswith("->")], screen
    t.send("\r")
    t.expect(r"stream default\.pasted created")
    t.prompt()
    history = (home / "shell_history").read_text().splitlines()
    assert [line[1:] for line in history if line.startswith("+")][-4:] == pasted

    # the pasted stream's columns are completed in a query over it (Ctrl-C clears the line)
    t.complete("SELECT * FROM pasted WHERE na", "name")
    t.expect_screen(r"^streamjob> SELECT \* FROM pasted WHERE name$")
    t.send("\x03")
    t.prompt()

    # SET lists 18 job properties: taller than 16 rows, so less shows the first 15
    t.send("SET;\r")
    t.wait(lambda: t.lines()[-1] == ":", "less's prompt on the last row")
    assert "session properties" in t.transcript and "streamjob.alert.lag.for" not in t.lines()
    t.send("q")
    t.prompt()
    assert "Pager is off" in t.run("\\pager off")
    out = t.run("SET;")
    assert "session properties" in out and "streamjob.alert.lag.for" in out  # printed whole
    t.exit()
    assert t.child.exitstatus == 0


def test_e_runs_a_select_preview_and_the_statements_around_it(tmp_path):
    """``streamjob -e "...; SELECT ... LIMIT 3; ..."`` prints the preview's rows as the
    shell does (a rate stream: no broker), then runs the statements after it."""
    import subprocess

    env = dict(os.environ, STREAMJOB_HOME=str(tmp_path / "home"))
    res = subprocess.run(
        [STREAMJOB, "-e", "CREATE STREAM r (`timestamp` TIMESTAMP, value BIGINT) "
         "TBLPROPERTIES('source'='rate', 'rows.per.second'='20');\n"
         "SELECT value, value * 10 AS ten FROM r WHERE value < 100 LIMIT 3; SHOW STREAMS"],
        env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    m = re.search(r"(?s)value +\| ten\n-+\+-+\n(.*?)\n3 rows\n", res.stdout)
    assert m, res.stdout
    rows = [tuple(int(c) for c in r.split("|")) for r in m.group(1).splitlines()]
    assert len(rows) == 3 and all(ten == value * 10 for value, ten in rows), rows
    assert res.stdout.index("stream default.r created") < m.start()
    assert res.stdout.index("streams") >= m.end()  # SHOW STREAMS ran after the preview
    assert "Traceback" not in res.stderr


WIDE_JOBS = (
    "CREATE STREAM clicks (id int, name string) TBLPROPERTIES(\"topic\"=\"clicks\", "
    "\"kafka.broker.list\"=\"127.0.0.1:9\", \"format\"=\"json\");\n"
    "CREATE TABLE out (id int, name string);\n"
    "CREATE STREAMJOB wide AS (\"insert into out select id, upper(name) as name from clicks "
    "where id > 100 and name like '%streamjob%' and id < 100000\");\n"
    "CREATE STREAMJOB narrow AS (\"insert into out select * from clicks\");\n")


def _catalog_with_jobs(home: Path) -> list[tuple[str, ...]]:
    """Make ``home``'s catalog hold :data:`WIDE_JOBS` (through a session without Spark,
    as ``check --offline``: the shell's CREATE STREAMJOB would start Spark); the rows
    of LIST STREAMJOBS as strings."""
    from streamjob.catalog import Catalog
    from streamjob.home import Home
    from streamjob.client.session import ClientSession

    h = Home.open(home)
    catalog = Catalog(h.catalog_url)
    try:
        session = ClientSession(catalog, h)
        list(session.execute_script(WIDE_JOBS))
        [(_, result)] = session.execute_script("LIST STREAMJOBS")
        return [tuple("" if v is None else str(v) for v in row) for row in result.rows]
    finally:
        catalog.close()


def _fields(text: str) -> list[list[str]]:
    """The records of expanded output, each the values of its fields (continuation
    lines joined, blanks removed)."""
    records = []
    for record in text.split("-[ RECORD ")[1:]:
        values: list[str] = []
        for line in record.splitlines()[1:]:
            label, bar, value = line.partition(" |")
            if not bar:
                break
            if label.strip():
                values.append("")
            values[-1] += "".join(value.split())
        records.append(values)
    return records


@pytest.mark.parametrize("cols", [80, 100])
def test_list_streamjobs_fits_the_terminal(term_factory, tmp_path, cols):
    """Issue 29 item 8, as a new user in an 80- or 100-column terminal: LIST STREAMJOBS
    (and ``streamjob -e``) show the jobs one field per line, no line wider than the
    terminal, every value whole; ``\\x off`` brings the folded table back."""
    home = tmp_path / "home"
    rows = _catalog_with_jobs(home)
    t = term_factory(home, cols=cols)
    t.prompt()
    out = t.run("LIST STREAMJOBS;")
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= cols, out
    assert [list(map(lambda v: "".join(v.split()), row)) for row in rows] == _fields(out), out
    t.run("\\pager off")  # the folded table is taller than the terminal at 80 columns
    assert "Expanded display is off." in t.run("\\x off")
    assert "┃" in t.run("LIST STREAMJOBS;")
    t.exit()

    child = pexpect.spawn(STREAMJOB, ["--home", str(home), "-e", "LIST STREAMJOBS"],
                          env=dict(os.environ, TERM="xterm", COLUMNS=str(cols)),
                          dimensions=(ROWS, cols), encoding="utf-8")
    child.expect(pexpect.EOF, timeout=120)
    out = ANSI.sub("", child.before).replace("\r", "")
    assert max(len(line) for line in out.splitlines()) <= cols, out
    assert [list(map(lambda v: "".join(v.split()), row)) for row in rows] == _fields(out), out
