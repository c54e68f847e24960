"""Everything that talks to Spark, and nothing else does: the process's session and its
quiet py4j gateway (:mod:`.session`), the Spark home mirror the workers run from
(:mod:`.home`), a job's query built and started from its plan (:mod:`.query`), the
observed metrics attached to its sources (:mod:`.observe`), and Spark's own streaming
analysis of a planned query (:mod:`.analysis`). The planner above it needs only the
catalog (statement + catalog -> plan); the job manager supervises what this starts."""
