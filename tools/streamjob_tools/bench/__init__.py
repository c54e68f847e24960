"""The benchmark harness (``make bench``, ``python -m streamjob_tools.bench``): see
``__main__`` for the scenarios and docs/performance.md for the latest results."""
