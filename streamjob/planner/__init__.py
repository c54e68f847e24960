"""The planner: a job's inner query resolved against the catalog, turned into a Spark query."""
