"""What a shadow run costs the live job (issue 30 point 4; docs/upgrades.md "Shadow
runs"): the live job's throughput without and with its shadow beside it, side by side.

    python -m streamjob_tools.bench.shadow_cost [--records N] [--window S]

One process, as a server runs jobs: a local Tansu broker, a fresh home with its SQLite
catalog, an in-process job manager (Spark ``local[2]``). A stateless Kafka -> SQLite job
(``insert into out select id, name, v from events``, ``morphling.job.max.records.per.batch``
2000) copies a backlog of ``N`` records, so it is never idle while measured:

1. **alone**: the live job's rows per second of wall time over ``window`` seconds (the
   rows of the micro-batches that completed in the window, from its query's progress);
2. **with its shadow**: the job is stopped, ``N`` more records produced, the job started
   again, and ``ALTER STREAMJOB ... WITH SHADOW JOBPROPERTIES('shadow.duration'=window)``
   runs a changed query (a filter and a computed column) from the same checkpoint beside
   it, over the same backlog; the live job's rate is measured over the shadow's window.

Prints one JSON line: both rates, their ratio, the shadow's own batches and the time its
comparison (the old query's replay and the diff) took after the window.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path


def _rate(query, since_ms: float, until_ms: float) -> tuple[float, int]:
    """Rows/s of wall time of ``query``'s micro-batches that ended in the window."""
    from datetime import datetime

    rows = 0
    for p in query.recentProgress:
        end = datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp() * 1000
        end += p["durationMs"].get("triggerExecution", 0)
        if since_ms <= end <= until_ms:
            rows += p["numInputRows"]
    return rows / ((until_ms - since_ms) / 1000), rows


def main(argv: list[str]) -> None:
    """Measure (module docstring)."""
    from streamjob.catalog import Catalog
    from streamjob.executor import Executor
    from streamjob.grammar import parse_script
    from streamjob.home import Home
    from streamjob.manager import JobManager

    from ..dev.broker import LocalBroker, create_topic
    from ..dev.flights import replay

    records = int(argv[argv.index("--records") + 1]) if "--records" in argv else 100_000
    window = float(argv[argv.index("--window") + 1]) if "--window" in argv else 20.0
    broker = LocalBroker.start()
    try:
        with tempfile.TemporaryDirectory(prefix="shadow-cost-") as tmp:
            home_dir = Path(tmp) / "home"
            home_dir.mkdir()
            (home_dir / "streamjob.conf").write_text(
                "spark.master=local[2]\nspark.sql.shuffle.partitions=2\n")
            home = Home.open(home_dir)
            catalog = Catalog(home.catalog_url)
            manager = JobManager(catalog, home)
            ex = Executor(catalog, home, manager, principal="local:bench")
            topic = f"events_{uuid.uuid4().hex[:6]}"
            create_topic(broker.bootstrap, topic, 2)

            def produce(start: int) -> None:
                replay(broker.bootstrap, topic, [json.dumps(
                    {"id": i, "name": f"n{i}", "v": i * 0.5}).encode()
                    for i in range(start, start + records)], 2)

            def sql(text: str):
                return [ex.execute(s) for s in parse_script(text)][-1]

            sql(f"""CREATE STREAM events (id INT, name STRING, v DOUBLE) TBLPROPERTIES(
                      "topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
                    CREATE TABLE out (id INT, name STRING, v DOUBLE)
                      TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{tmp}/sink.db");
                    CREATE STREAMJOB j AS ("insert into out select id, name, v from events")
                      JOBPROPERTIES ("morphling.job.max.records.per.batch"="2000",
                                     "morphling.job.checkpoint.interval"="0");""")
            produce(0)
            sql("START STREAMJOB j;")
            uid = catalog.get_job("default", "j").uid
            query = None
            while query is None or not query.recentProgress:
                runner = manager.runners.get(uid)
                query = runner.query if runner is not None else None
                time.sleep(0.2)
            t0 = time.time() * 1000
            time.sleep(window)
            alone, alone_rows = _rate(query, t0, time.time() * 1000)
            sql("STOP STREAMJOB j;")

            produce(records)
            sql("START STREAMJOB j;")
            query = None
            while query is None or not query.recentProgress:
                runner = manager.runners.get(uid)
                query = runner.query if runner is not None else None
                time.sleep(0.2)
            out: dict = {}

            def shadow() -> None:
                out["result"] = sql(
                    "ALTER STREAMJOB j AS (\"insert into out select id, upper(name), v * 2 "
                    "from events where id % 3 <> 0\") WITH SHADOW "
                    f"JOBPROPERTIES('shadow.duration'='{int(window)}s');")
                out["done"] = time.time() * 1000

            t1 = time.time() * 1000
            thread = threading.Thread(target=shadow)
            thread.start()
            time.sleep(window)
            beside, beside_rows = _rate(query, t1, time.time() * 1000)
            thread.join()
            record = out["result"].data
            sql("DISCARD SHADOW FOR STREAMJOB j;")
            sql("STOP STREAMJOB j;")
            print(json.dumps({
                "window_s": window, "records_per_backlog": records,
                "live_rows_per_s_alone": round(alone), "live_rows_alone": alone_rows,
                "live_rows_per_s_with_shadow": round(beside), "live_rows_with_shadow": beside_rows,
                "ratio": round(beside / alone, 3) if alone else None,
                "shadow_batches": record["batches"], "shadow_run": record["run"],
                "shadow_rows_new": record["comparison"]["new_rows"],
                "comparison_after_window_s": round((out["done"] - t1) / 1000 - window, 1),
            }))
            manager.shutdown()
            catalog.close()
    finally:
        broker.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
