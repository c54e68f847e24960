"""CEP: Slipstream 5.1's ``FROM PATTERN (...) WITHIN (...)`` (issue 18).

:mod:`streamjob.planner.pattern` reads the pattern from a job's query text (planning,
so this package imports nothing of the planner's), :mod:`.nfa` matches it per key
(pure Python, the rules written there and in docs/streamsql.md's CEP section), and
:mod:`streamjob.spark.cep` runs the matcher in Spark's arbitrary stateful processing.
"""
