"""CEP: Slipstream 5.1's ``FROM PATTERN (...) WITHIN (...)`` (issue 18).

:mod:`.parse` reads the pattern from a job's query text, :mod:`.nfa` matches it per key
(pure Python, the rules written there and in docs/streamsql.md's CEP section), and
:mod:`streamjob.spark.cep` runs the matcher in Spark's arbitrary stateful processing.
"""
