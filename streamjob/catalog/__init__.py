"""The catalog: streams, tables, jobs, runs and retained checkpoints in one database.

Use :class:`Catalog`; it returns the frozen records defined in
:mod:`streamjob.catalog.records`.
"""

from streamjob.catalog.api import Catalog
from streamjob.catalog.records import (
    CHECKPOINT_STATUSES,
    DEPENDENCY_KINDS,
    DEPENDENCY_ROLES,
    DESIRED_STATES,
    JOB_STATUSES,
    RUN_STATUSES,
    CheckpointInfo,
    JobInfo,
    JobLeaseInfo,
    RunInfo,
    ServerInfo,
    ShareServer,
    StreamInfo,
    TableInfo,
)

__all__ = [
    "Catalog",
    "CheckpointInfo",
    "JobInfo",
    "JobLeaseInfo",
    "ShareServer",
    "RunInfo",
    "ServerInfo",
    "StreamInfo",
    "TableInfo",
    "CHECKPOINT_STATUSES",
    "DEPENDENCY_KINDS",
    "DEPENDENCY_ROLES",
    "DESIRED_STATES",
    "JOB_STATUSES",
    "RUN_STATUSES",
]
