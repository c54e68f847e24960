"""The options of the Delta stream source ``streamjob_delta`` (:mod:`.source`), named
once: :class:`.stream.DeltaStreamSource` writes its reader's options with them and the
data source reads them back (Spark lower-cases option keys). No Spark import here."""

from __future__ import annotations

import os

SOURCE_NAME = "streamjob_delta"
"""The data source's name: ``spark.readStream.format("streamjob_delta")``."""
PATH, KEY = "path", "key"
STARTING_VERSION, STARTING_TIMESTAMP = "startingVersion", "startingTimestamp"
MAX_FILES, IGNORE_DELETES, IGNORE_CHANGES = "maxFilesPerTrigger", "ignoreDeletes", "ignoreChanges"
SKIP_CHANGE_COMMITS, PARTITIONS = "skipChangeCommits", "partitions"
VERSION_AS_OF = "versionAsOf"
"""The static reader's option: the table version read (time travel, Delta's
``versionAsOf``); without it, the latest version at each read."""


OFFSETS_PREFIX = "delta:"
"""What the key of a Delta table's position in a job's offsets starts with."""


def offsets_key(path: str) -> str:
    """The key of a Delta table's position in a job's offsets: ``delta:<absolute
    path>``."""
    return OFFSETS_PREFIX + os.path.abspath(path)
