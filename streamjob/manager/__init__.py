"""The job manager: supervision, failover and idleness of running jobs (DESIGN §5, §8)."""

from .runner import JobManager, JobRunner

__all__ = ["JobManager", "JobRunner"]
