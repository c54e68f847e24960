"""Delta Lake tables (``STORED AS DELTA``) as exactly-once sinks, written through
delta-rs (the ``deltalake`` package): :mod:`.spec` what the declaration means,
:mod:`.sink` how micro-batches are committed with Delta app transactions."""
