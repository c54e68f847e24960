"""Apache Iceberg tables (``STORED AS ICEBERG``) through pyiceberg: :mod:`.spec` what the
declaration means, :mod:`.catalog` which Iceberg catalog holds the table, :mod:`.sink`
how micro-batches commit exactly once (snapshot summary properties), :mod:`.source` and
:mod:`.stream` a table's snapshots read as a stream."""
