"""streamjob: StreamSQL (Transwarp Slipstream) jobs as checkpointed Spark Structured
Streaming queries, with a catalog of streams, tables, jobs, runs and checkpoints."""

__version__ = "0.1.0"
