"""The Kafka source's JSON decoder against another version of it, on the same Nexmark
bids, in one process: ``_decoder`` of :mod:`streamjob.connectors.kafka.decode` and of
an older ``decode.py`` given as a file, alternating, so the ratio says something even
on a loaded machine (docs/results/2026-11-25.md, "JSON keys in another case").

    git show <commit>:streamjob/connectors/kafka/decode.py > /tmp/decode_old.py
    python -m streamjob_tools.bench.json_decode /tmp/decode_old.py [--records 50000] [--runs 5]

Prints min/median/max wall seconds per slice of each, the median CPU seconds of the
process (``time.process_time``: all threads; steadier than wall time on a loaded machine)
and the ratios of the medians; the two batches must be equal (else it exits with
status 1)."""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time

BID_DDL = [("auction", "long"), ("bidder", "long"), ("price", "long"), ("channel", "string"),
           ("url", "string"), ("datetime", "timestamp"), ("extra", "string")]
"""The bid stream of examples/nexmark/streams_kafka.sql as the catalog stores it
(unquoted ``dateTime`` is ``datetime``)."""


def bid_slice(records: int, lower_keys: bool = False):
    """A :class:`.formats.RecordSlice` of the first ``records`` bids of seed 19, as
    ``python -m streamjob_tools.dev nexmark`` writes them (keys as Nexmark's DDL)."""
    from streamjob.connectors.kafka.formats import RecordSlice
    from ..dev.nexmark.generator import NexmarkConfig, generate
    from ..dev.nexmark.output import json_lines

    values = json_lines(generate(NexmarkConfig(seed=19), 0, records * 50 // 46 + 100),
                        lower_keys)["bid"][:records]
    n = len(values)
    return RecordSlice("nexmark_bid", 0, list(range(n)), values, [None] * n, [0] * n)


def main(argv=None) -> int:
    """Run the comparison; returns the exit status (0, or 1 if the batches differ)."""
    from pyspark.sql.types import StructField, StructType, _parse_datatype_json_value

    from streamjob.connectors.kafka.decode import _decoder

    ap = argparse.ArgumentParser(prog="python -m streamjob_tools.bench.json_decode")
    ap.add_argument("old", help="an older decode.py")
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lower-keys", action="store_true", help="bids with lower-case keys")
    args = ap.parse_args(argv)
    spec = importlib.util.spec_from_file_location("decode_old", args.old)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    schema = StructType([StructField(n, _parse_datatype_json_value(t)) for n, t in BID_DDL])
    records = bid_slice(args.records, args.lower_keys)
    decoders = {"old": old._decoder(schema, "json", ",", None),
                "new": _decoder(schema, "json", ",", None)}
    if decoders["old"](records) != decoders["new"](records):
        print("the old and the new decoder give different batches", file=sys.stderr)
        return 1
    times: dict[str, list[float]] = {"old": [], "new": []}
    cpu: dict[str, list[float]] = {"old": [], "new": []}
    for i in range(args.runs):
        for name in (("old", "new") if i % 2 == 0 else ("new", "old")):
            t0, c0 = time.perf_counter(), time.process_time()
            decoders[name](records)
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    for name, ts in times.items():
        print(f"{name}: min {min(ts):.3f} s, median {statistics.median(ts):.3f} s, "
              f"max {max(ts):.3f} s per slice of {len(records.values):,} bids; "
              f"CPU median {statistics.median(cpu[name]):.3f} s")
    med = statistics.median
    print(f"old/new (medians): wall {med(times['old']) / med(times['new']):.1f}, "
          f"CPU {med(cpu['old']) / med(cpu['new']):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
