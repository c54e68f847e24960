"""The options of the Iceberg stream source ``streamjob_iceberg`` (:mod:`.source`), named
once: :class:`.stream.IcebergStreamSource` writes its reader's options with them and
the data source reads them back (Spark lower-cases option keys). No Spark import here."""

from __future__ import annotations

import os

SOURCE_NAME = "streamjob_iceberg"
"""The data source's name: ``spark.readStream.format("streamjob_iceberg")``."""
CATALOG, NAMESPACE, TABLE, PATH, KEY = "catalog", "namespace", "table", "path", "key"
STARTING, PARTITIONS = "starting", "partitions"
SNAPSHOT_ID = "snapshotid"
"""A static read's snapshot (time travel of a preview); without it, the current one."""

OFFSETS_PREFIX = "iceberg:"
"""What the key of an Iceberg table's position in a job's offsets starts with."""


def offsets_key(path: str) -> str:
    """The key of an Iceberg table's position in a job's offsets: ``iceberg:<absolute
    path of the table's directory>``."""
    return OFFSETS_PREFIX + os.path.abspath(path)
