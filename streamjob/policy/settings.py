"""Which ``spark.sql.*`` settings a job may give its Spark session (SET, JOBPROPERTIES).

A job's ``spark.sql.*`` settings are applied to its own session clone, inside the job
manager's JVM. Some of Spark's SQL settings turn its safety off or load code: the
redaction of secrets in plans and logs (``spark.sql.redaction.string.regex``), variable
substitution in SQL text (``spark.sql.variable.substitute``: ``${env:SECRET}`` in a
query read the job manager's environment), classes and listeners to load
(``spark.sql.extensions``, ``spark.sql.catalog.*``, ``spark.sql.queryExecutionListeners``,
``spark.sql.streaming.streamingQueryListeners``), paths (``spark.sql.warehouse.dir``,
``spark.sql.streaming.checkpointLocation``), and the settings streamjob decides itself
(checkpoint retention, ``spark.sql.streaming.minBatchesToRetain``). So only the settings
of :data:`ALLOWED` (tuning: partitions, adaptive execution, joins, state store,
time zone and parsing behaviour) and those under :data:`ALLOWED_PREFIXES` (RocksDB
state store tuning) are accepted, each in Spark's spelling; anything else is refused
with the nearest allowed name. Values of :data:`VALUES` are checked too (the state
store provider is a class name: only Spark's two).
"""

from __future__ import annotations


from ..exceptions import PropertyError
from ..nearest import nearest

__all__ = ["ALLOWED", "ALLOWED_PREFIXES", "VALUES", "allowed_spark_setting",
           "check_spark_setting"]

_PROVIDERS = frozenset({
    "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
})

#: The ``spark.sql.*`` settings a job may set, in Spark's spelling.
ALLOWED: frozenset[str] = frozenset({
    "spark.sql.shuffle.partitions",
    "spark.sql.session.timeZone",
    "spark.sql.ansi.enabled",
    "spark.sql.adaptive.enabled",
    "spark.sql.adaptive.coalescePartitions.enabled",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.sql.adaptive.skewJoin.enabled",
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.codegen.wholeStage",
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.files.openCostInBytes",
    "spark.sql.legacy.timeParserPolicy",
    "spark.sql.mapKeyDedupPolicy",
    "spark.sql.decimalOperations.allowPrecisionLoss",
    "spark.sql.jsonGenerator.ignoreNullFields",
    "spark.sql.execution.arrow.maxRecordsPerBatch",
    "spark.sql.parquet.compression.codec",
    "spark.sql.orc.compression.codec",
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.stateStore.maintenanceInterval",
    "spark.sql.streaming.stateStore.compression.codec",
    "spark.sql.streaming.noDataMicroBatches.enabled",
    "spark.sql.streaming.multipleWatermarkPolicy",
    "spark.sql.streaming.statefulOperator.checkCorrectness.enabled",
    "spark.sql.streaming.sessionWindow.merge.sessions.in.local.partition",
    "spark.sql.streaming.numRecentProgressUpdates",
    "spark.sql.streaming.stateStore.stateSchemaCheck",
})
#: Families of settings a job may set (any name under them).
ALLOWED_PREFIXES: tuple[str, ...] = ("spark.sql.streaming.stateStore.rocksdb.",)
#: Settings whose value is checked too: name -> the values allowed.
VALUES: dict[str, frozenset[str]] = {
    "spark.sql.streaming.stateStore.providerClass": _PROVIDERS,
}
#: Why some names are refused (shown in the error); any other is simply not allowed.
_WHY = {
    "spark.sql.redaction.": "it changes what Spark hides of secrets in plans and logs",
    "spark.sql.variable.substitute": "substitution would let a query read the job "
                                     "manager's environment (${env:...})",
    "spark.sql.extensions": "it loads classes into the job manager's JVM",
    "spark.sql.catalog": "it loads catalog classes into the job manager's JVM",
    "spark.sql.queryexecutionlisteners": "it loads classes into the job manager's JVM",
    "spark.sql.streaming.streamingquerylisteners": "it loads classes into the job "
                                                   "manager's JVM",
    "spark.sql.streaming.minbatchestoretain": "streamjob keeps a job's checkpoints itself",
    "spark.sql.streaming.checkpointlocation": "streamjob places a job's checkpoints itself",
    "spark.sql.warehouse.dir": "it names a path of the job manager's host",
}
_CANONICAL = {name.lower(): name for name in ALLOWED}


def allowed_spark_setting(name: str) -> str | None:
    """The Spark spelling of ``name`` (case-insensitive) when a job may set it, else
    None."""
    low = name.strip().lower()
    if low in _CANONICAL:
        return _CANONICAL[low]
    for prefix in ALLOWED_PREFIXES:
        if low.startswith(prefix.lower()) and len(low) > len(prefix):
            return prefix + name.strip()[len(prefix):]
    return None


def check_spark_setting(name: str, value: str | None = None) -> str:
    """``name`` in Spark's spelling when a job may set it (to ``value``, when given).

    Raises:
        PropertyError: not allowed (with the reason when known, and the nearest allowed
            name), or a value outside :data:`VALUES` (``err.key`` is the name).
    """
    canonical = allowed_spark_setting(name)
    low = name.strip().lower()
    if canonical is None:
        why = next((w for prefix, w in _WHY.items() if low.startswith(prefix.lower())), None)
        near = nearest(low, _CANONICAL, cutoff=0.8)
        hint = f"; did you mean '{_CANONICAL[near]}'?" if near else ""
        reason = f": {why}" if why else ""
        err = PropertyError(
            f"Spark setting '{name.strip()}' is not allowed in a job{reason} (the allowed "
            f"spark.sql.* settings are listed in docs/security.md, sql-policy){hint}",
            key=low)
        raise err
    allowed = VALUES.get(canonical)
    if allowed is not None and value is not None and str(value).strip() not in allowed:
        err = PropertyError(f"'{value}' is not allowed for {canonical}; use one of: "
                            f"{', '.join(sorted(allowed))}",
                            key=low, bad_value=True)
        raise err
    return canonical
