"""What Spark's Hive support costs a streamjob process (docs/functions.md, "Where Hive
support is switched on"): one fresh process per run, so compare runs side by side.

    python -m streamjob_tools.dev.hive_cost hive|plain [--udf]

``plain`` is a home with ``streamjob.security.functions.jars=none`` (no Hive support),
``hive`` the default (jars admitted: Hive support on). Prints one line: seconds from the
process's start to the Spark session, of the first query (a ``group by`` over a
temporary view of 100 rows), of the first Hive function (``--udf``: the example
GenericUDF compiled and registered, which starts the metastore), and the driver JVM's
resident memory (``VmRSS``) once the session is ready and at the end, in MiB.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

START = time.monotonic()


def _rss_mib() -> int:
    from pyspark import SparkContext

    pid = SparkContext._gateway.proc.pid
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return -1


def main(argv: list[str]) -> None:
    """Run one measurement (see the module doc)."""
    from streamjob.home import Home
    from streamjob.spark.guard import create_hive_function
    from streamjob.spark.session import spark_session, stop_spark

    from .hive_jar import build_jar

    mode, udf = argv[0], "--udf" in argv
    with tempfile.TemporaryDirectory(prefix="hive-cost-") as tmp:
        jar = None
        if udf:
            example = Path(__file__).resolve().parents[3] / "examples" / "functions"
            jar = build_jar(sorted(example.glob("*.java")), Path(tmp) / "home" / "functions" / "u.jar")
        conf = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2"}
        if mode == "plain":
            conf["streamjob.security.functions.jars"] = "none"
        begin = time.monotonic() if udf else START  # javac's time left out
        spark = spark_session(Home.open(Path(tmp) / "home", conf))
        ready, rss_ready = time.monotonic(), _rss_mib()
        session = spark.newSession()
        session.range(100).selectExpr("id", "cast(id as string) s").createOrReplaceTempView("v")
        session.sql("select upper(s), count(*) from v group by 1").collect()
        queried = time.monotonic()
        registered = queried
        if jar is not None:
            create_hive_function(session, "reverse_text", "com.example.udf.Reverse", str(jar))
            session.sql("select reverse_text(s) from v").collect()
            registered = time.monotonic()
        print(f"{mode}: session {ready - begin:.2f}s first-query {queried - ready:.2f}s "
              f"first-hive-function {registered - queried:.2f}s jvm-rss-ready {rss_ready}MiB "
              f"jvm-rss-end {_rss_mib()}MiB", flush=True)
        stop_spark()


if __name__ == "__main__":
    main(sys.argv[1:])
