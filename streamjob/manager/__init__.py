"""The job manager: supervision, failover and idleness of running jobs (DESIGN §5, §8),
and the job manager service with its lease (``streamjob server``, :mod:`.server`)."""

from .runner import JobManager, JobRunner
from .server import JobServer

__all__ = ["JobManager", "JobRunner", "JobServer"]
