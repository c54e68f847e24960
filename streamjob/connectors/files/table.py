"""Reading what a file table holds, honouring Spark's file-sink manifest.

Spark's file sink (exactly-once, DESIGN §6) writes data files first and lists them in
``_spark_metadata/<batch>`` only when the batch commits; files of a batch that crashed
are on disk but not in the manifest. Readers must take only the listed files — Spark's
batch reader does, and so does :func:`committed_files` for tools without Spark.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote, urlparse


def committed_files(location: str) -> list[Path]:
    """The data files the manifest lists as added (and not deleted), sorted.

    A location without ``_spark_metadata`` (not written by a streaming job) yields
    every non-hidden file under it.
    """
    root = Path(urlparse(location).path if location.startswith("file:") else location)
    meta = root / "_spark_metadata"
    if not meta.is_dir():
        return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(("_", ".")))
    logs = sorted((p for p in meta.iterdir() if p.name.split(".")[0].isdigit()),
                  key=lambda p: int(p.name.split(".")[0]))
    compact = [p for p in logs if p.name.endswith(".compact")]
    if compact:  # a compact file holds everything up to its batch
        start = int(compact[-1].name.split(".")[0])
        logs = [compact[-1]] + [p for p in logs if int(p.name.split(".")[0]) > start]
    files: dict[str, bool] = {}
    for log in logs:
        for line in log.read_text().splitlines()[1:]:  # first line is the version
            if not line.strip():
                continue
            entry = json.loads(line)
            path = unquote(urlparse(entry["path"]).path)
            files[path] = entry.get("action", "add") == "add"
    return sorted(Path(p) for p, present in files.items() if present)


def read_table(location: str, fmt: str = "parquet"):
    """The committed rows of a Parquet file table as one Arrow table (no Spark)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if fmt != "parquet":
        raise ValueError("read_table reads Parquet tables")
    files = committed_files(location)
    if not files:
        return pa.table({})
    return pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")
