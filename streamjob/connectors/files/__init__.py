"""File tables: reading a table's files back (tests, the benchmark), and static
file tables read at every micro-batch. Writing goes through Spark's file sink."""
