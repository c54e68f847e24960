"""The job manager: supervision, failover and idleness of running jobs (DESIGN §5, §8),
and the job manager service with its lease (``streamjob server``, :mod:`.server`)."""

from .job_manager import JobManager
from .runner import JobRunner
from .server import JobServer

__all__ = ["JobManager", "JobRunner", "JobServer"]
