"""``python -m streamjob_tools.bench``: the benchmark harness (``make bench``).

Runs the scenarios on a local Tansu broker and local Spark (``local[2]``) in this
process (scenario 4 in ``streamjob run`` child processes), prints one table and writes
the results as JSON (machine, versions, every figure with min/median/max over
``--repeat`` runs, the targets met or missed and by how much, Spark's per-batch duration
breakdown and, when py-spy is installed, a profile of scenario 1's streamjob job).

Scenarios: s1 stateless Kafka->Parquet against a raw consumer and a hand-written job,
s2 stateful aggregation into SQL, s3 checkpoint intervals, s4 recovery after SIGKILL,
s5 many jobs in one manager, s6 control-plane statements, udf a job with one scalar
Python function and one with a Hive UDF beside the same job without one, nexmark the Nexmark queries over Kafka
checked against pandas, flink: Apache Flink beside streamjob on the same
work (whole processes; its own venv). See each module.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

import click

from .. import REPO

SCENARIOS = ("s6", "s1", "udf", "s2", "s3", "s5", "nexmark", "s4", "s7", "flink")
"""Run order: the control plane first (no Spark), the recovery's child processes last
(then Flink beside streamjob, whole processes too)."""


def _module(key: str):
    from . import (checkpoint_cost, control, nexmark, recovery, scale, sharing, stateful,
                   stateless, udf)

    if key == "flink":
        from . import flink

        return flink
    return {"s1": stateless, "s2": stateful, "s3": checkpoint_cost, "s4": recovery,
            "s5": scale, "s6": control, "s7": sharing, "nexmark": nexmark, "udf": udf}[key]


@click.command()
@click.option("--quick", is_flag=True, help="Smaller scenarios, one repeat: under 5 minutes.")
@click.option("--out", "out", type=click.Path(dir_okay=False), default="bench-results.json",
              show_default=True, help="Where the JSON results go.")
@click.option("--only", default="", metavar="S1,S2,...",
              help="Run only these scenarios (s1..s7, udf, nexmark, flink; comma-separated).")
@click.option("--repeat", type=int, default=None,
              help="Runs per figure (default 3, 1 with --quick).")
@click.option("--tiny", is_flag=True, hidden=True, help="A few thousand records (tests).")
@click.option("--compare-source", "compare", default=None, metavar="FILE|GIT-REV",
              help="Also measure another version of the Kafka source side by side in "
                   "scenario 1: a kafka_source.py file, or a git revision of this checkout.")
@click.option("--compare-parser", "compare_parser", is_flag=True,
              help="Also run scenario 1's hand-written job with the source's option "
                   "recordParser=kafka-python (the path before the bulk decoder), side by side.")
@click.option("--profile/--no-profile", default=True, show_default=True,
              help="py-spy profile of scenario 1's streamjob job (if py-spy is installed).")
def main(quick: bool, out: str, only: str, repeat: int | None, tiny: bool,
         compare: str | None, compare_parser: bool, profile: bool) -> None:
    """Benchmark streamjob: throughput, latency, recovery, scale, control plane."""
    from rich.console import Console

    from .harness import QUICK, TINY, Bench, Sizes, render_table, write_json

    console = Console(width=132)
    sizes = TINY if tiny else QUICK if quick else Sizes()
    repeat = repeat or (1 if quick or tiny else 3)
    keys = [k.strip().lower() for k in only.split(",") if k.strip()] or list(SCENARIOS)
    unknown = [k for k in keys if k not in SCENARIOS]
    if unknown:
        raise click.BadParameter(f"unknown scenario(s) {', '.join(unknown)}; use s1..s7, udf, nexmark, flink",
                                 param_hint="--only")
    keys = [k for k in SCENARIOS if k in keys]
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # finally: broker and Spark stop
    def log(message: str) -> None:
        console.print(message, highlight=False)
        sys.stdout.flush()  # progress shows as it happens, also when piped to a file

    bench = Bench(sizes, repeat, log=log)
    bench.legacy_source = _load_source(compare) if compare else None
    bench.compare_parser = compare_parser
    bench.profiler = _profiler(bench, Path(out), profile)
    results = []
    t_all = time.monotonic()
    try:
        for key in keys:
            mod = _module(key)
            log(f"[bold]{key}[/bold] {mod.__doc__.strip().splitlines()[0]}")
            t0 = time.monotonic()
            try:
                res = mod.run(bench)
            except Exception as exc:  # noqa: BLE001 - one scenario's failure is reported
                from .harness import ScenarioResult

                traceback.print_exc()
                res = ScenarioResult(key, key, error=f"{type(exc).__name__}: {exc}")
            res.seconds = time.monotonic() - t0
            res.judge()
            prof = getattr(bench, "profiles", {}).get(key)
            if prof:
                res.details["profile"] = prof
            results.append(res)
            log(f"  {key} done in {res.seconds:.0f} s")
    finally:
        bench.close()
    render_table(results, console)
    for res in results:
        prof = res.details.get("profile")
        if prof:
            console.print(f"[bold]{res.key}[/bold] py-spy ({prof['samples']} samples) by area: "
                          + ", ".join(f"{k} {v:.0%}" for k, v in prof["by_area"].items()))
            console.print("  top functions: " + "; ".join(
                f"{k} {v:.0%}" for k, v in prof["top_functions"][:8]), highlight=False)
    args = {"quick": quick, "tiny": tiny, "repeat": repeat, "only": keys,
            "sizes": sizes.__dict__, "total_seconds": round(time.monotonic() - t_all, 1)}
    write_json(Path(out), results, args)
    console.print(f"results: {out} ({args['total_seconds']:.0f} s in all)")
    if any(r.error for r in results):
        sys.exit(1)


def _profiler(bench, out: Path, enabled: bool):
    """``bench.profiler(key)``: a callable starting py-spy that returns its stopper."""
    from . import profile

    bench.profiles = {}

    def for_scenario(key: str):
        if not enabled or not profile.pyspy():
            return None
        target = out.with_name(out.stem + f"-{key}-pyspy.txt")

        def begin():
            stop = profile.start(target)

            def end():
                if stop:
                    bench.profiles[key] = stop()
            return end
        return begin

    return for_scenario


def _load_source(path: str):
    """The KafkaDataSource class of another version of the Kafka source (a file or a git
    revision), registered under the name ``streamjob_kafka_before``.

    A revision with the ``streamjob/connectors/kafka/`` package: every module of that
    package at that revision, as package ``streamjob_tools.bench._compare_kafka`` (importable by
    Spark's Python workers), so the executor side (``read``, ``fetch``, ``batches``,
    ``decode``, ``formats``) is the revision's too, not only ``source.py``. Older
    revisions and files: that one module as ``streamjob_tools.bench._compare_source``."""
    import subprocess

    root = REPO
    if not Path(path).is_file():
        listed = subprocess.run(["git", "ls-tree", "--name-only", f"{path}:streamjob/connectors/kafka"],
                                cwd=root, capture_output=True, text=True)
        names = [n for n in listed.stdout.split() if n.endswith(".py")]
        if listed.returncode == 0 and "source.py" in names:
            return _load_package(path, names, root)
    target = Path(__file__).with_name("_compare_source.py")
    if Path(path).is_file():
        text = Path(path).read_text()
    else:  # a git revision: read-only `git show` (the module moved in the house issue)
        for rel in ("streamjob/connectors/kafka/source.py", "streamjob/connectors/kafka_source.py"):
            shown = subprocess.run(["git", "show", f"{path}:{rel}"],
                                   cwd=root, capture_output=True, text=True)
            if shown.returncode == 0:
                text = shown.stdout
                break
        else:
            raise SystemExit(f"no Kafka source module in revision {path}")
    text = text.replace("from ..exceptions", "from streamjob.exceptions") \
        .replace("from . import worker", "from streamjob.connectors import worker") \
        .replace("from .kafka_group", "from streamjob.connectors.kafka.group") \
        .replace("from .formats", "from streamjob.connectors.kafka.formats") \
        .replace("from .dead_letter", "from streamjob.connectors.kafka.dead_letter") \
        .replace("from .kafka_decode", "from streamjob.connectors.kafka.decode") \
        .replace("from .kafka_security", "from streamjob.connectors.kafka.security") \
        .replace('SOURCE_NAME = "streamjob_kafka"', 'SOURCE_NAME = "streamjob_kafka_before"')
    target.write_text(text)
    from . import _compare_source

    return _compare_source.KafkaDataSource


def _load_package(rev: str, names: list, root: Path):
    """The revision's ``streamjob/connectors/kafka`` modules ``names``, written to
    ``tools/streamjob_tools/bench/_compare_kafka/`` with their imports of the package renamed."""
    import shutil
    import subprocess

    target = Path(__file__).with_name("_compare_kafka")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    for name in names:
        text = subprocess.run(["git", "show", f"{rev}:streamjob/connectors/kafka/{name}"],
                              cwd=root, capture_output=True, text=True, check=True).stdout
        text = text.replace("streamjob.connectors.kafka", "streamjob_tools.bench._compare_kafka")
        if name == "source.py":
            text = text.replace('SOURCE_NAME = "streamjob_kafka"',
                                'SOURCE_NAME = "streamjob_kafka_before"')
        (target / name).write_text(text)
    (target / "__init__.py").touch()
    from ._compare_kafka import source

    return source.KafkaDataSource


if __name__ == "__main__":
    main()
