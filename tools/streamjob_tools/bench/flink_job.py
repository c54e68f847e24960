"""The Flink side of the Flink comparison (:mod:`streamjob_tools.bench.flink`): the job text
(Flink SQL) and the runner that executes it.

This module is imported by the bench (for the job text) and also run as a script by the
Python of the Flink venv (``.venv-flink/bin/python flink_job.py SPEC.json``), which has
PyFlink but not streamjob: its top level imports the standard library only.

The runner creates a PyFlink ``TableEnvironment`` in streaming mode (a local mini-cluster
in the process's JVM), executes the spec's statements in order, submits its inserts as
one statement set and waits for the job to finish (the filesystem source is bounded: it
reads the files present at start and ends, Flink's ``FileSystemTableSource`` without
``source.monitor-interval``). Options follow Nexmark's Flink configuration
(``nexmark-flink/conf``: mini-batch 2 s / 5,000 rows, split distinct aggregates) with
the parallelism of the machine's cores given by the bench.

Spec (JSON): ``{"statements": [...DDL...], "inserts": [...], "options": {k: v}}``.
The print sink of the aggregation writes the changelog to the process's stdout as
``+I[AA, 1, 1234, 5.6]`` / ``-U[...]`` / ``+U[...]`` (Flink's ``print`` connector,
``RowData`` rendered by ``RowKind.shortString``); :func:`final_rows` folds it into the
final table.
"""

from __future__ import annotations

import json
import sys

FLINK_OPTIONS = {
    "table.exec.mini-batch.enabled": "true",
    "table.exec.mini-batch.allow-latency": "2 s",
    "table.exec.mini-batch.size": "5000",
    "table.optimizer.distinct-agg.split.enabled": "true",
}
"""Nexmark's Flink SQL settings (nexmark-flink/conf/sql-client-defaults.yaml)."""

FLIGHTS_DDL = (
    "`year` INT, `month` INT, `day` INT, dep_time INT, dep_delay DOUBLE, arr_time INT, "
    "arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, "
    "dest STRING, air_time DOUBLE, distance DOUBLE")
"""The flights' columns in Flink SQL (streamjob's FLIGHT_COLUMNS; year, month, day
quoted: reserved words in Flink SQL)."""

AGG_SELECT = ("SELECT carrier, `month`, COUNT(*) AS flights, AVG(dep_delay) AS avg_dep_delay "
              "FROM flights GROUP BY carrier, `month`")
"""Workload A's aggregation in Flink SQL: carrier x month count and average delay."""


def flights_spec(csv_dir: str, parallelism: int) -> dict:
    """Workload A for Flink: the CSV files of ``csv_dir`` (no header, columns by position,
    empty fields NULL) aggregated by carrier and month into the ``print`` sink (to stdout:
    the changelog, folded by :func:`final_rows`)."""
    return {
        "statements": [
            f"CREATE TABLE flights ({FLIGHTS_DDL}) WITH ('connector'='filesystem', "
            f"'path'='{_q(csv_dir)}', 'format'='csv', 'csv.null-literal'='')",
            "CREATE TABLE carrier_month (carrier STRING, `month` INT, flights BIGINT, "
            "avg_dep_delay DOUBLE, PRIMARY KEY (carrier, `month`) NOT ENFORCED) "
            "WITH ('connector'='print')",
        ],
        "inserts": [f"INSERT INTO carrier_month {AGG_SELECT}"],
        "options": {**FLINK_OPTIONS, "parallelism.default": str(parallelism)},
    }


NEXMARK_BID_DDL = ("auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, "
                   "`dateTime` TIMESTAMP(3), extra STRING, "
                   "WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND")
"""Nexmark's bid table (nexmark-flink ddl_views.sql: the bid view's columns and its
4-second watermark)."""

NEXMARK_QUERIES = {
    # nexmark-flink queries/q0.sql .. q2.sql, q7.sql; sinks as there (blackhole)
    "q0": ("auction BIGINT, bidder BIGINT, price BIGINT, `dateTime` TIMESTAMP(3), extra STRING",
           "SELECT auction, bidder, price, `dateTime`, extra FROM bid"),
    "q1": ("auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), `dateTime` TIMESTAMP(3), "
           "extra STRING",
           "SELECT auction, bidder, 0.908 * price AS price, `dateTime`, extra FROM bid"),
    "q2": ("auction BIGINT, price BIGINT",
           "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0"),
    # q7 as nexmark-flink writes it (join with each window's maximum price)
    "q7": ("auction BIGINT, bidder BIGINT, price BIGINT, `dateTime` TIMESTAMP(3), extra STRING",
           "SELECT B.auction, B.price, B.bidder, B.`dateTime`, B.extra FROM bid B JOIN ("
           "SELECT MAX(price) AS maxprice, window_end AS `dateTime` FROM TABLE(TUMBLE("
           "TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) "
           "GROUP BY window_start, window_end) B1 ON B.price = B1.maxprice "
           "WHERE B.`dateTime` BETWEEN B1.`dateTime` - INTERVAL '10' SECOND AND B1.`dateTime`"),
}
"""Nexmark queries in Flink SQL: query -> (sink columns, SELECT), from nexmark-flink's
``queries/`` (q7's insert swaps price and bidder there too; see examples/nexmark/q7.sql)."""


def nexmark_spec(bid_dir: str, query: str, parallelism: int, out_dir: str | None = None) -> dict:
    """A Nexmark query for Flink over the JSON bid files of ``bid_dir``: into a
    ``blackhole`` sink (as nexmark-flink), or with ``out_dir`` into JSON files there
    (Flink's filesystem sink; append-only queries only), to count the rows."""
    columns, select = NEXMARK_QUERIES[query]
    sink = ("'connector'='blackhole'" if out_dir is None else
            f"'connector'='filesystem', 'path'='{_q(out_dir)}', 'format'='json'")
    return {
        "statements": [
            f"CREATE TABLE bid ({NEXMARK_BID_DDL}) WITH ('connector'='filesystem', "
            f"'path'='{_q(bid_dir)}', 'format'='json', 'json.timestamp-format.standard'='SQL')",
            f"CREATE TABLE nexmark_{query} ({columns}) WITH ({sink})",
        ],
        "inserts": [f"INSERT INTO nexmark_{query} {select}"],
        "options": {**FLINK_OPTIONS, "parallelism.default": str(parallelism)},
    }


def _q(text: str) -> str:
    """``text`` as the body of a Flink SQL string literal (quotes doubled)."""
    return text.replace("'", "''")


def final_rows(lines) -> dict[tuple, list[str]]:
    """Fold a print sink's changelog (lines ``+I[a, b, c]``, ``-U[...]``, ``+U[...]``,
    ``-D[...]``, optionally prefixed ``task> ``) into the final rows keyed by their first
    two fields: {(carrier, month): [fields as text]}. Other lines are ignored."""
    rows: dict[tuple, list[str]] = {}
    for line in lines:
        line = line.strip()
        if "> " in line and not line[:2] in ("+I", "-U", "+U", "-D"):
            line = line.split("> ", 1)[1]
        kind = line[:2]
        if kind not in ("+I", "-U", "+U", "-D") or not line.endswith("]") or line[2] != "[":
            continue
        fields = [f.strip() for f in line[3:-1].split(",")]
        key = tuple(fields[:2])
        if kind in ("+I", "+U"):
            rows[key] = fields
        elif kind == "-D":
            rows.pop(key, None)
    return rows


def main(spec_path: str) -> int:
    """Run the spec's job in a local mini-cluster; returns the exit status."""
    import time

    t0 = time.monotonic()
    from pyflink.table import EnvironmentSettings, TableEnvironment

    with open(spec_path) as fh:
        spec = json.load(fh)
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    for key, value in spec.get("options", {}).items():
        conf.set(key, value)
    for stmt in spec["statements"]:
        env.execute_sql(stmt)
    t1 = time.monotonic()
    sset = env.create_statement_set()
    for stmt in spec["inserts"]:
        sset.add_insert_sql(stmt)
    sset.execute().wait()
    t2 = time.monotonic()
    print(json.dumps({"flink_setup_s": round(t1 - t0, 3), "flink_job_s": round(t2 - t1, 3)}),
          file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
