"""Every property streamjob knows: job (DESIGN §3), engine (§3) and connector (§7).

Job property names are the seed's (Slipstream's ``morphling.*``); connector names are
Slipstream's TBLPROPERTIES (``"topic"``, ``"kafka.broker.list"``,
``"transwarp.consumer.*"``); engine names are Slipstream's ``spark.morphling.*`` plus
``streamjob.catalog.url``. ``docs/properties.md`` is generated from these entries
(``python -m streamjob.properties``).
"""

from __future__ import annotations

from .registry import Contradiction, Property, Registry


_CD = "Slipstream 5.2.2 confdesc: "
_NO_DEFAULT = "; default not stated there"
_SLIPSTREAM = (
    Property("morphling.maxlag.on.disorder", "duration", None,
             "the watermark delay of every event-time stream the job reads (one with "
             "\"watermark.column\"), in place of its \"watermark.delay\": how late an event "
             "may arrive; -1 = events arrive in order (delay 0)", unit="ms", minimum=0,
             maximum=30 * 86_400_000,
             special={-1: "in order: delay 0"},
             slipstream=_CD + "设置事件时间乱序情况下可容忍的最大延迟，-1表示数据有序，无乱序 "
             "(the largest lateness tolerated when event times are out of order; -1 = in "
             "order)" + _NO_DEFAULT),
    Property("mapred.reduce.tasks", "int", None,
             "the job's shuffle partitions (spark.sql.shuffle.partitions of its session, as "
             "Spark's own SET mapred.reduce.tasks does); -1 = the engine's. Spark keeps the "
             "number a stateful job's checkpoint was started with", minimum=1, maximum=100_000,
             special={-1: "the engine's spark.sql.shuffle.partitions"},
             maps_to="spark.sql.shuffle.partitions",
             slipstream=_CD + "reduce任务数量 (number of reduce tasks)" + _NO_DEFAULT),
    Property("morphling.infinitewindow.reduce.tasks", "int", None,
             "the job's shuffle partitions, as mapred.reduce.tasks (which wins when both "
             "are given): streamjob's aggregations without a window are Spark's stateful "
             "aggregations over spark.sql.shuffle.partitions", minimum=1, maximum=100_000,
             maps_to="spark.sql.shuffle.partitions",
             slipstream=_CD + "无限滑动窗口默认的Reduce Task数量 (default number of reduce "
             "tasks of an infinite sliding window)" + _NO_DEFAULT),
    Property("morphling.hdfs.flush.interval.ms", "duration", None,
             "for a job writing a file or Delta table (Slipstream's HDFS sinks): its "
             "trigger interval (streamjob.trigger.interval, which wins when given), so files "
             "are written at most this often; no effect on other sinks", unit="ms", minimum=0,
             slipstream=_CD + "数据刷新到目标表的频率，默认每60秒刷新一次 (how often rows are "
             "flushed to the target table); default 60000 (60 s)"),
    Property("morphling.hdfs.flush.size", "int", None,
             "accepted, no effect (see the notice)", unit="rows", minimum=1,
             ignored="each micro-batch's rows are written when it commits, at most a trigger "
             "interval apart (morphling.hdfs.flush.interval.ms for file tables); Spark has "
             "no row-count trigger",
             slipstream=_CD + "数据批量刷新到目标表时的batch大小，默认每产生10万条数据刷新一次 "
             "(batch size of a flush to the target table); default 100000"),
    Property("morphling.job.enable.wal.sink", "bool", None,
             "accepted, no effect (see the notice)",
             ignored="sinks are exactly-once through their commit markers whenever "
             "morphling.result.auto.flush is false (the default); no write-ahead log is needed",
             slipstream=_CD + "是否开启WALSink功能，开启后将保证Exactly-Once语义 (WAL sink: "
             "exactly-once)" + _NO_DEFAULT),
    Property("morphling.wal.sink.committer.type", "string", None,
             "accepted, no effect (see the notice)",
             ignored="there is no WAL sink: commit markers live in the sink itself",
             slipstream=_CD + "WAL Sink依赖的外部数据库类型 (database the WAL sink commits "
             "to)" + _NO_DEFAULT),
    Property("morphling.wal.sink.voltdb.jdbc.url", "string", None,
             "accepted, no effect (see the notice)",
             ignored="there is no WAL sink: commit markers live in the sink itself",
             slipstream=_CD + "WAL Sink配置的数据库的JDBC URL (JDBC URL of the WAL sink's "
             "database)" + _NO_DEFAULT),
    Property("morphling.metrics.enabled", "bool", None,
             "accepted, no effect (see the notice)",
             ignored="metrics are always collected (DESCRIBE STREAMJOB, the server's /metrics)",
             slipstream=_CD + "任务是否开启metrics收集 (collect the job's metrics)" + _NO_DEFAULT),
    Property("streamsql.use.eventtime", "bool", None,
             "accepted, no effect (see the notice)",
             ignored="event time is declared per stream: one with \"watermark.column\" and "
             "\"watermark.delay\" is windowed on event time, others on processing time",
             slipstream=_CD + "是否使用事件时间切分窗口 (window on event time)" + _NO_DEFAULT),
    Property("stream.id", "string", None,
             "accepted, no effect (see the notice)",
             ignored="a job's name is the one CREATE STREAMJOB gives it",
             slipstream=_CD + "流任务名，即jobId (the stream job's name, its job id)" + _NO_DEFAULT),
    Property("streamsql.max.running.sql", "int", None,
             "accepted, no effect (see the notice)", minimum=-1,
             ignored="a Slipstream server's admission limit; streamjob runs every started "
             "job, bounded by Spark's resources",
             slipstream=_CD + "Slipstream最多可以运行多少条SQL (most SQL statements a "
             "Slipstream server runs)" + _NO_DEFAULT),
    Property("streamsql.max.running.task", "int", None,
             "accepted, no effect (see the notice)", minimum=-1,
             ignored="a Slipstream server's admission limit; streamjob runs every started "
             "job, bounded by Spark's resources",
             slipstream=_CD + "Slipstream最多可以运行多少个任务 (most jobs a Slipstream "
             "server runs)" + _NO_DEFAULT),
    Property("stream.number.receivers", "int", None,
             "accepted, no effect (see the notice)", minimum=1,
             ignored="Spark's Kafka source reads each partition in its own task; there are "
             "no receivers",
             slipstream="Slipstream documentation and scripts (Kafka receivers per stream); "
             "not in the 5.2.2 confdesc"),
)

# ---------------------------------------------------------------------------- job


JOB = Registry([
    Property("morphling.job.enable.checkpoint", "bool", True,
             "durable checkpoints; false = a temporary one, restarts begin at the reset strategy",
             slipstream="Slipstream 5.2.2 confdesc: 决定该任务是否启用HA (whether the job is highly available); default not stated there"),
    Property("morphling.job.checkpoint.interval", "duration", 60_000,
             "one recorded, retained, restorable checkpoint per interval: the micro-batch "
             "that completes after it; output does not wait for it; 0 = every micro-batch",
             unit="ms", minimum=0,
             slipstream="Slipstream 5.2.2 confdesc: Checkpoint的频率。单位：毫秒 (checkpoint frequency, ms); default not stated there"),
    Property("streamjob.trigger.interval", "duration", 500,
             "micro-batches start at most this often, as soon as data is there (Spark's "
             "processing-time trigger): the bound on output latency and on an idle job's "
             "polling; 0 = back to back", unit="ms", minimum=0),
    Property("streamsql.use.eventmode", "bool", False,
             "Slipstream's event-driven engine: the lowest latency streamjob offers, "
             "micro-batches back to back (trigger 0; Spark polls idle sources every 10 ms)",
             slipstream="Slipstream documentation (event-driven mode); not in the 5.2.2 confdesc"),
    Property("morphling.job.enable.auto.failover", "bool", True,
             "restart a failed job from its last checkpoint",
             slipstream="Slipstream 5.2.2 confdesc: 是否允许失败任务自动恢复 (restart failed jobs automatically); default not stated there"),
    Property("morphling.task.max.failures", "int", 5,
             "failures allowed within morphling.task.failure.window before the job is "
             "FAILED; -1 = never restart", minimum=0, maximum=10_000, special={-1: "never restart"},
             slipstream="Slipstream 5.2.2 confdesc: 任务失败重试次数，-1表示不进行重试恢复 (retries of a failed job; -1 = none); default not stated there"),
    Property("morphling.task.failure.window", "duration", 60_000,
             "failures are counted within this window (Flink's failure-rate strategy); a "
             "checkpoint completed since the last failure also resets the count",
             unit="ms", minimum=1_000),
    Property("streamjob.failover.initial.backoff", "duration", 2_000,
             "wait before the first restart after a failure; it doubles with each "
             "failure since the last completed checkpoint, up to "
             "streamjob.failover.max.backoff, plus up to 25 % jitter (Flink's "
             "exponential-delay restart strategy)", unit="ms", minimum=0),
    Property("streamjob.failover.max.backoff", "duration", 30_000,
             "the longest wait between restarts", unit="ms", minimum=0),
    Property("streamjob.placement.labels", "string", None,
             "comma-separated labels a server must have to run the job (servers started with --share "
             "--labels a,b; issue 33): the job goes to the eligible server with the fewest jobs, then the most room; "
             "unset: any sharing server"),
    Property("streamjob.placement.cores", "int", 1,
             "driver cores the job needs on a sharing server that declared --cores: placement "
             "counts them against the server's cores (issue 33)", minimum=0, maximum=1024),
    Property("streamjob.placement.memory", "int", 128,
             "driver memory the job needs on a sharing server that declared --memory: "
             "placement counts it against the server's memory (measured: about 103 MiB per "
             "job with its Python source process)", unit="MiB", minimum=0,
             maximum=16 * 1024 * 1024),
    Property("morphling.result.auto.flush", "bool", False,
             "true: rows reach the sink as each micro-batch produces them (at-least-once); "
             "false: exactly-once, rows visible when their micro-batch commits with its "
             "marker",
             slipstream="Slipstream 5.2.2 confdesc: 是否自动Sink。开启该开关后，只要有数据产生就立刻flush到目标表 (flush rows to the target table as soon as they are produced); default not stated there"),
    Property("morphling.checkpoint.backend", "choice", "catalog",
             "where checkpoint metadata is recorded", choices=("catalog", "zookeeper", "kafka")),
    Property("morphling.checkpoint.timeout", "duration", 60_000,
             "a checkpoint not complete by then has expired", unit="ms", minimum=1),
    Property("morphling.checkpoint.retained", "int", 5,
             "checkpoints kept; older ones are purged", minimum=1, maximum=10_000),
    Property("morphling.job.max.records.per.batch", "int", 0,
             "cap on source records read per checkpoint (admission control); 0 = no cap",
             unit="records", minimum=0),
    # Alert rules (streamjob/alerts): Prometheus Alertmanager-style webhook notifications.
    Property("streamjob.alert.webhook", "url", None,
             "alerts of this job are POSTed as JSON to this URL (firing, then resolved; "
             "retried 3 times with backoff); empty = no alerts. A job in status FAILED "
             "always fires; a user:password in the URL is sent as basic auth and masked "
             "in logs", scopes=("job",)),
    Property("streamjob.alert.checkpoint.age", "duration", 0,
             "alert when the job is RUNNING and its last completed checkpoint is older "
             "than this (it stopped checkpointing); 0 = off", unit="ms", minimum=0),
    Property("streamjob.alert.lag.records", "int", 0,
             "alert when the source lag (records the Kafka sources hold that the job has "
             "not yet committed) stays above this for streamjob.alert.lag.for; 0 = off",
             unit="records", minimum=0),
    Property("streamjob.alert.lag.for", "duration", 60_000,
             "how long the lag must stay above streamjob.alert.lag.records before the "
             "alert fires (Prometheus' for: clause)", unit="ms", minimum=0),
    # Slipstream's other job properties (issue 18): Slipstream 5.2.2's own catalogue
    # (slipstream_confdesc.properties in transwarpio/application-metainfo) and its docs.
    # Each is mapped to its Spark meaning (maps_to, or read by the planner) or accepted
    # with a notice saying why it has no effect (ignored); never an error.
    *_SLIPSTREAM,
], prefixes={"spark.sql.": "any Spark SQL setting, applied to the job's own session clone"},
   contradictions=[
    Contradiction(
        ("morphling.job.enable.checkpoint", "morphling.checkpoint.backend"),
        lambda v: (not v["morphling.job.enable.checkpoint"]
                   and v["morphling.checkpoint.backend"] in ("zookeeper", "kafka")),
        "morphling.job.enable.checkpoint=false with morphling.checkpoint.backend "
        "zookeeper or kafka",
        "a job without durable checkpoints records none, so an external checkpoint backend "
        "has nothing to hold; drop one of the two"),
    Contradiction(
        ("streamsql.use.eventmode", "streamjob.trigger.interval"),
        lambda v: v["streamsql.use.eventmode"] and v["streamjob.trigger.interval"] > 0,
        "streamsql.use.eventmode=true with streamjob.trigger.interval above 0",
        "event mode runs micro-batches back to back (trigger 0), so the trigger interval "
        "would be ignored; drop one of the two"),
    Contradiction(
        ("morphling.task.max.failures", "morphling.job.enable.auto.failover"),
        lambda v: (v["morphling.task.max.failures"] == -1
                   and v["morphling.job.enable.auto.failover"]),
        "morphling.task.max.failures=-1 with morphling.job.enable.auto.failover=true",
        "-1 means never restart, auto failover means restart a failed job; say "
        "morphling.job.enable.auto.failover=false, or allow a number of failures"),
    Contradiction(
        ("streamjob.failover.initial.backoff", "streamjob.failover.max.backoff"),
        lambda v: v["streamjob.failover.initial.backoff"] > v["streamjob.failover.max.backoff"],
        "streamjob.failover.initial.backoff above streamjob.failover.max.backoff",
        "the first wait would already exceed the longest one; lower the first or raise "
        "the longest", all_given=False),
   ])

# ------------------------------------------------------------------------- engine

_LOOPBACK = "localhost,127.0.0.1,::1"
#: Drivers an operator may name by default: the ones streamjob is tested with. Another
#: driver name loads whatever package registers it (SQLAlchemy's entry points).
_KNOWN_DRIVERS = ("sqlite,sqlite+pysqlite,postgresql,postgresql+psycopg,postgresql+psycopg2,"
                  "mysql,mysql+pymysql,mariadb,mariadb+pymysql")

ENGINE = Registry([
    Property("spark.master", "string", "local[*]",
             "Spark master: local[*], or a cluster URL (spark://host:7077)", scopes=("engine",)),
    Property("streamjob.placement.masters", "string", None,
             "the Spark master of the drivers of sharing servers by label, 'label=master' "
             "pairs separated by ';' (gpu=spark://gpu-head:7077; eu=local[4]): a server "
             "started with --labels uses the master of its first label (in name order) "
             "found here, unless it was given --spark-master; else spark.master",
             scopes=("engine",)),
    Property("spark.morphling.taskstate.checkpoint.directory", "string", None,
             "root of the jobs' checkpoint directories, any Hadoop URI "
             "(default: checkpoints/ in the streamjob home)", scopes=("engine",)),
    Property("spark.morphling.zookeeper.quorum", "quorum", None,
             "ZooKeeper hosts (host:port,...) of the zookeeper checkpoint backend",
             scopes=("engine",)),
    Property("spark.morphling.zookeeper.root.path", "string", "/morphling",
             "root znode of streamjob's records in ZooKeeper", scopes=("engine",)),
    Property("spark.morphling.zookeeper.namespace", "string", "default",
             "namespace under the root (one per streamjob installation)", scopes=("engine",)),
    Property("spark.morphling.zookeeper.checkpoints.path", "string", "checkpoints",
             "znode under the namespace holding checkpoint records", scopes=("engine",)),
    Property("spark.morphling.submitted.job.path", "string", "jobs",
             "znode under the namespace listing running jobs", scopes=("engine",)),
    # Slipstream's server template (transwarpio/application-metainfo, the StreamSQL
    # service's env template: MORPHLING_* exported from these spark.morphling.* settings)
    Property("spark.morphling.recovery.mode", "string", None,
             "accepted, no effect (see the notice)", scopes=("engine",),
             ignored="a job always resumes from its last checkpoint when it starts again "
             "(streamjob server resumes every job whose desired state is RUNNING)"),
    Property("spark.morphling.taskstate.backend", "string", None,
             "accepted, no effect (see the notice)", scopes=("engine",),
             ignored="checkpoint state is Spark's, under "
             "spark.morphling.taskstate.checkpoint.directory; where checkpoint metadata is "
             "recorded is the job property morphling.checkpoint.backend"),
    Property("spark.morphling.zookeeper.session.timeout", "string", None,
             "accepted, no effect (see the notice)", scopes=("engine",),
             ignored="the ZooKeeper client's session timeout is fixed (10 s)"),
    Property("spark.morphling.zookeeper.connect.timeout", "string", None,
             "accepted, no effect (see the notice)", scopes=("engine",),
             ignored="the ZooKeeper client's connection timeout is fixed (10 s)"),
    Property("spark.morphling.zookeeper.max.retries", "string", None,
             "accepted, no effect (see the notice)", scopes=("engine",),
             ignored="the ZooKeeper client retries each command 3 times"),
    Property("spark.morphling.zookeeper.retry.wait", "string", None,
             "accepted, no effect (see the notice)", scopes=("engine",),
             ignored="the ZooKeeper client's retry backoff is fixed (0.1 s up to 2 s)"),
    Property("spark.morphling.completed.checkpoints.storage.dir", "string", None,
             "accepted, no effect (see the notice)", scopes=("engine",),
             ignored="completed checkpoints are Spark's checkpoint directories under "
             "spark.morphling.taskstate.checkpoint.directory; the catalog (or the "
             "morphling.checkpoint.backend) records them"),
    Property("streamjob.catalog.url", "string", None,
             "catalog database (SQLAlchemy URL); default: SQLite catalog.db in the home; "
             "PostgreSQL for shared use", scopes=("engine",), secret=False),
    # the admin's policy (:class:`streamjob.security.policy.AdminPolicy` reads these,
    # docs/security.md): engine only, never SET or JOBPROPERTIES
    *(Property(key, "string", default or None, meaning + " (docs/security.md)",
               scopes=("engine",))
      for key, default, meaning in (
        ("streamjob.security.file.roots", "data,warehouse",
         "comma-separated directories (or Hadoop URIs such as hdfs://nn/data) under which an "
         "operator's file streams, file tables, LOCATIONs, SQLite databases and Kafka TLS "
         "files must lie; relative to the home"),
        ("streamjob.security.sql.hosts", _LOOPBACK,
         "database servers an operator's SQL tables may name: hosts, addresses or patterns "
         "(*.corp.example), each optionally :port"),
        ("streamjob.security.sql.drivers", _KNOWN_DRIVERS,
         "SQLAlchemy drivers an operator's SQL table URLs may name (backend or "
         "backend+driver)"),
        ("streamjob.security.kafka.hosts", _LOOPBACK,
         "Kafka bootstrap servers (and ZooKeeper of old scripts) an operator may name: hosts "
         "or patterns, each optionally :port"),
        ("streamjob.security.webhook.hosts", _LOOPBACK,
         "hosts an operator's alert webhooks (streamjob.alert.webhook) may POST to: hosts or "
         "patterns, each optionally :port"),
        ("streamjob.security.secret.dirs", "secrets",
         "comma-separated directories ${file:...} secret references may read (regular files "
         "of at most 64 KiB of text); relative to the home; the default one is created "
         "owner-only"),
        ("streamjob.security.secret.env", "STREAMJOB_SECRET_*",
         "comma-separated patterns of the environment variables ${env:...} secret references "
         "may read"),
        ("streamjob.security.secret.key", "secret.key",
         "file holding the key that encrypts literal secrets in the catalog (Fernet; created "
         "owner-only on first use); relative to the home"),
        ("streamjob.security.functions.dirs", "functions",
         "comma-separated directories whose Python modules CREATE FUNCTION may name (code "
         "the job manager runs: everyone, the admin included, names only modules of these "
         "directories or of streamjob.security.functions.packages); relative to the home"),
        ("streamjob.security.functions.packages", "",
         "comma-separated installed Python packages (top-level import names) whose modules "
         "CREATE FUNCTION may name; none by default"),
        ("streamjob.security.functions.jars", "functions",
         "comma-separated directories whose jars ADD JAR and CREATE FUNCTION ... USING JAR "
         "may name (Hive UDF classes: code the job manager runs; everyone, the admin "
         "included); relative to the home; none turns jar functions and Spark's Hive "
         "support off"))),
], prefixes={"spark.": "any Spark setting (spark-defaults.conf)"})

# --------------------------------------------------------------------- connectors

_STREAM = ("kafka stream", "file stream", "rate stream", "delta stream", "iceberg stream")


def _storage(name: str, key: str, meaning: str, secret: bool = False) -> Property:
    """A Delta table's object-store option ``delta.storage.<name>``, passed to delta-rs
    as its storage option ``key`` (streamjob/connectors/delta/spec.py)."""
    return Property(f"delta.storage.{name}", "string", None,
                    f"Delta table on an object store: delta-rs' storage option {key}, "
                    f"{meaning}" + ("; write ${env:NAME} or ${file:/path} to keep it out of "
                                    "the catalog (a literal is sealed there)" if secret else ""),
                    scopes=("delta table",), secret=secret)


_DELTA_STORAGE = (
    _storage("aws.access.key.id", "AWS_ACCESS_KEY_ID", "the access key id (s3://)"),
    _storage("aws.secret.access.key", "AWS_SECRET_ACCESS_KEY", "the secret key (s3://)", True),
    _storage("aws.session.token", "AWS_SESSION_TOKEN", "a session token (s3://)", True),
    _storage("aws.region", "AWS_REGION", "the bucket's region (s3://)"),
    _storage("aws.endpoint.url", "AWS_ENDPOINT_URL", "an S3-compatible endpoint (s3://)"),
    _storage("aws.allow.http", "AWS_ALLOW_HTTP", "true: a plain-HTTP endpoint (s3://)"),
    _storage("aws.conditional.put", "AWS_CONDITIONAL_PUT",
             "etag: commits by conditional put on stores that support it (s3://)"),
    _storage("aws.s3.allow.unsafe.rename", "AWS_S3_ALLOW_UNSAFE_RENAME",
             "true: commit without a lock (one writer only; s3://)"),
    _storage("google.service.account.path", "GOOGLE_SERVICE_ACCOUNT_PATH",
             "a service account JSON file (gs://)"),
    _storage("google.service.account.key", "GOOGLE_SERVICE_ACCOUNT_KEY",
             "a service account's JSON key text (gs://)", True),
    _storage("azure.storage.account.name", "AZURE_STORAGE_ACCOUNT_NAME",
             "the storage account (abfs://, abfss://)"),
    _storage("azure.storage.account.key", "AZURE_STORAGE_ACCOUNT_KEY",
             "the account key (abfs://)", True),
    _storage("azure.storage.sas.token", "AZURE_STORAGE_SAS_TOKEN", "a SAS token (abfs://)", True),
    _storage("azure.client.id", "AZURE_CLIENT_ID", "a service principal's client id (abfs://)"),
    _storage("azure.client.secret", "AZURE_CLIENT_SECRET",
             "a service principal's secret (abfs://)", True),
    _storage("azure.tenant.id", "AZURE_TENANT_ID", "a service principal's tenant (abfs://)"),
)
_KAFKA = ("kafka stream", "kafka table")
_KAFKA_SECURITY = (  # streamjob/connectors/kafka/security.py
    Property("kafka.security.protocol", "string", "PLAINTEXT",
             "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (Kafka's security.protocol), for "
             "every client of the stream or table", scopes=_KAFKA),
    Property("kafka.sasl.mechanism", "string", None,
             "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (with SASL_PLAINTEXT or SASL_SSL)",
             scopes=_KAFKA),
    Property("kafka.sasl.username", "string", None, "the SASL user", scopes=_KAFKA),
    Property("kafka.sasl.password", "string", None,
             "the SASL password; write ${env:NAME} or ${file:/path} to keep it out of the "
             "catalog (resolved when a client connects)", scopes=_KAFKA, secret=True),
    Property("kafka.ssl.ca.location", "string", None,
             "PEM file of the CA certificate(s) that verify the broker (default: the "
             "system's)", scopes=_KAFKA),
    Property("kafka.ssl.certificate.location", "string", None,
             "PEM file of the client certificate (mutual TLS)", scopes=_KAFKA),
    Property("kafka.ssl.key.location", "string", None, "PEM file of the client key",
             scopes=_KAFKA),
    Property("kafka.ssl.key.password", "string", None,
             "password of the client key; ${env:NAME} or ${file:/path} as for "
             "kafka.sasl.password", scopes=_KAFKA, secret=True),
    Property("kafka.ssl.endpoint.identification.algorithm", "string", "https",
             "https: the broker's host name must match its certificate; none: not checked",
             scopes=_KAFKA),
)
_WATERMARK = [
    Property("watermark.column", "string", None,
             "event-time column of the stream (a timestamp); enables event-time windows",
             scopes=_STREAM),
    Property("watermark.delay", "interval", None,
             "how late an event may arrive, e.g. '10 seconds' (Spark's withWatermark)",
             scopes=_STREAM),
]

# ---------------------------------------------------------------------------- shadow

#: The properties of a shadow run (``ALTER STREAMJOB j AS (...) WITH SHADOW
#: JOBPROPERTIES(...)``; issue 30 point 4, docs/upgrades.md "Shadow runs"): how long the
#: new query runs beside the live job. It ends at whichever bound comes first.
SHADOW = Registry([
    Property("shadow.batches", "int", 5,
             "the shadow ends after this many micro-batches that read input (Spark batches "
             "whose offsets moved); without shadow.duration it is also bounded by "
             "shadow.timeout", unit="batches", minimum=1, maximum=1000, scopes=("shadow",)),
    Property("shadow.duration", "duration", None,
             "the shadow ends after this long beside the live job (given alone: however many "
             "micro-batches run meanwhile)", unit="ms", minimum=1000, maximum=3_600_000,
             scopes=("shadow",)),
    Property("shadow.timeout", "duration", 600_000,
             "the longest a shadow run waits for its shadow.batches micro-batches (input "
             "may be slow): it ends then and compares what it ran", unit="ms",
             minimum=1000, maximum=3_600_000, scopes=("shadow",)),
])

CONNECTOR = Registry([
    Property("source", "choice", "kafka", "what the stream reads (delta: a Delta table, "
             "also written CREATE STREAM ... STORED AS DELTA LOCATION '...'; iceberg: an "
             "Iceberg table, written CREATE STREAM ... STORED AS ICEBERG)",
             choices=("kafka", "files", "rate", "delta", "iceberg"), scopes=_STREAM),
    Property("topic", "string", None, "Kafka topic", scopes=("kafka stream", "kafka table")),
    Property("kafka.broker.list", "hostports", None, "Kafka bootstrap servers (host:port,...)",
             scopes=("kafka stream", "kafka table")),
    Property("kafka.zookeeper", "quorum", None,
             "ZooKeeper of the Kafka cluster (host:port,...[/chroot], Kafka's zookeeper.connect), "
             "from old Slipstream scripts: without \"kafka.broker.list\" the brokers are those "
             "Kafka registers there (/brokers/ids), looked up at each CREATE and job start; "
             "ignored when \"kafka.broker.list\" is given",
             scopes=("kafka stream", "kafka table")),
    Property("format", "choice", None,
             "record format: json (one object per record, fields by column name), delimited "
             "(default with ROW FORMAT DELIMITED) or raw (key, value, topic, partition, "
             "offset, timestamp); for file streams csv, json or parquet; for file tables also orc "
             "and textfile (STORED AS wins)",
             choices=("json", "delimited", "raw", "csv", "parquet", "orc", "textfile"),
             scopes=("kafka stream", "file stream", "kafka table", "file table")),
    Property("delimiter", "string", ",",
             "field delimiter of delimited records (ROW FORMAT ... FIELDS TERMINATED BY wins)",
             scopes=("kafka stream", "kafka table")),
    Property("transwarp.consumer.group.id", "string", None,
             "consumer group the processed offsets are committed to "
             "(default streamjob.<db>.<job>)", scopes=("kafka stream",)),
    Property("transwarp.consumer.reset.offset.strategy", "choice", "earliest",
             "where a job without a checkpoint starts reading, and where partitions added "
             "while it runs start: earliest, latest, committed (the consumer group's "
             "committed offsets, else latest) or a timestamp in ms since the epoch (the "
             "first record at or after it); with a checkpoint, offsets come from it",
             choices=("earliest", "latest", "committed"), other=(r"\d{1,15}", "a timestamp in ms"),
             scopes=("kafka stream",)),
    Property("fail.on.data.loss", "bool", True,
             "offsets the job still needs that the broker no longer has (retention removed "
             "them): true fails the job naming topic, partition and offsets; false skips to "
             "the earliest offset still there with a logged warning (Spark's failOnDataLoss)",
             scopes=("kafka stream",)),
    Property("kafka.request.timeout.ms", "duration", 30_000,
             "bound on each request the job makes to the brokers for offsets and metadata; "
             "connecting waits at most the smaller of it and 10 s, then the attempt fails "
             "naming the broker's address and failover takes over; a topic the broker "
             "does not list is waited for this long (a topic just created) (Kafka's consumer "
             "request.timeout.ms, which Spark's Kafka source takes as kafka.request.timeout.ms)",
             unit="ms", minimum=1_000, maximum=3_600_000, scopes=("kafka stream",)),
    Property("kafka.isolation.level", "choice", "read_uncommitted",
             "read_committed: records of aborted transactions are not read, and reading "
             "stops at the last stable offset (use it to read a Kafka table an exactly-once "
             "job writes); read_uncommitted reads every record (Kafka's and Spark's default)",
             choices=("read_uncommitted", "read_committed"), scopes=("kafka stream",)),
    *_KAFKA_SECURITY,
    Property("malformed.policy", "choice", "fail",
             "a record that does not decode into the declared columns: fail (the job fails "
             "naming topic, partition and offset), skip (dropped and counted in DESCRIBE "
             "STREAMJOB) or dead-letter (written to \"malformed.dead.letter.table\" and counted)",
             choices=("fail", "skip", "dead-letter"), scopes=("kafka stream",)),
    Property("malformed.dead.letter.table", "string", None,
             "the SQL table receiving malformed records under malformed.policy=dead-letter; "
             "its columns are taken by name from stream, topic, partition, offset, key, "
             "value, timestamp, error", scopes=("kafka stream",)),
    Property("missing.columns", "choice", "count",
             "a declared column that no record carries (absent or NULL in every record; JSON "
             "keys match case-insensitively, exact spelling first): count (the batch runs; "
             "DESCRIBE STREAMJOB counts the micro-batches without it, per column) or fail "
             "(when no record of a partition's range in a micro-batch carries it, the job "
             "fails naming topic, partition, offsets and column, before the batch reaches "
             "the sink)",
             choices=("count", "fail"), scopes=("kafka stream",)),
    Property("path", "string", None, "directory of the stream's files (any Hadoop URI); "
             "of a Delta stream, the Delta table's local directory (its LOCATION); of an "
             "Iceberg stream, the Iceberg table's directory",
             scopes=("file stream", "delta stream", "iceberg stream")),
    Property("startingversion", "choice", None,
             "Delta stream (Delta's startingVersion): the first table version read, its "
             "commit and the later ones (not the snapshot), or latest (only commits after "
             "the current version); default: the current snapshot, then the commits after "
             "it. START ... FROM EARLIEST, LATEST or TIMESTAMP overrides it",
             choices=("latest",), other=(r"\d{1,18}", "a table version"),
             scopes=("delta stream",)),
    Property("startingtimestamp", "choice", None,
             "Delta stream (Delta's startingTimestamp): read from the first version "
             "committed at or after this time, 'yyyy-mm-dd[ hh:mm:ss]' (UTC) or ms since "
             "the epoch; the next commit when every commit is older",
             choices=(), other=(r"\d{1,15}|\d{4}-\d{2}-\d{2}([ t]\d{2}:\d{2}(:\d{2})?)?",
                                "a date, date and time, or ms since the epoch"),
             scopes=("delta stream",)),
    Property("maxfilespertrigger", "int", 1000,
             "Delta stream (Delta's maxFilesPerTrigger): the most data files a micro-batch "
             "reads; a version with more is split over several", unit="files", minimum=1,
             maximum=1_000_000, scopes=("delta stream",)),
    Property("ignoredeletes", "bool", False,
             "Delta stream (Delta's ignoreDeletes): skip commits that only delete rows "
             "(DELETE, a partition dropped) instead of failing the job", scopes=("delta stream",)),
    Property("ignorechanges", "bool", False,
             "Delta stream (Delta's ignoreChanges): read the files that UPDATE, MERGE or an "
             "overwrite rewrote (their unchanged rows come again) instead of failing the "
             "job; commits that only delete are skipped", scopes=("delta stream",)),
    Property("skipchangecommits", "bool", False,
             "Delta stream (Delta's skipChangeCommits): skip every commit that removes or "
             "rewrites rows (DELETE, UPDATE, MERGE, overwrite) instead of failing the job",
             scopes=("delta stream",)),
    Property("rows.per.second", "int", 1, "rows generated per second", unit="rows/s",
             minimum=1, maximum=10_000_000, scopes=("rate stream",)),
    *_WATERMARK,
    Property("connector", "choice", "files", "what the table is",
             choices=("files", "file", "sql", "console", "kafka"),
             scopes=("file table", "sql table", "console table", "kafka table")),
    Property("skip.header.line.count", "int", 0,
             "header lines of CSV files read as static data (Hive's name)", minimum=0,
             scopes=("file table",)),
    Property("url", "sqlurl", None, "SQLAlchemy URL of the database (password masked in "
             "output); its dialect and driver must be installed where streamjob runs "
             "(an unknown one is refused at CREATE, naming the nearest installed one)",
             scopes=("sql table",)),
    Property("table", "string", None, "table name in that database (default: the table's own)",
             scopes=("sql table",)),
    Property("primary.key", "list", None,
             "comma-separated key columns; aggregations without a finished window write in "
             "update output mode. SQL table: rows are upserted on them. Kafka table: each "
             "record's key is these columns in the table's format (json: an object of them; "
             "delimited: their fields joined with the delimiter), the value the whole row, "
             "so a compacted topic keeps the latest row per key (Flink's upsert-kafka); no "
             "tombstones (Spark's update mode deletes nothing). Delta table: each "
             "micro-batch is merged on them (Delta's MERGE: matched rows updated, others "
             "inserted). Iceberg table: each micro-batch is upserted on them (pyiceberg's "
             "upsert: matched rows overwritten, others appended)",
             scopes=("sql table", "kafka table", "delta table", "iceberg table")),
    Property("key", "string", None,
             "a declared column whose value, as UTF-8 text, is each record's key (records "
             "with the same key go to the same partition); default: records without a key; "
             "with \"primary.key\" it may only name the primary key's single column, whose "
             "raw text then replaces the encoded key (ksqlDB's KAFKA key format)",
             scopes=("kafka table",)),
    Property("iceberg.catalog.uri", "string", None,
             "the Iceberg catalog holding the table: a SQLAlchemy URL (sqlite:///..., "
             "postgresql+psycopg://...: pyiceberg's SQL catalog in that database) or an "
             "http(s):// REST catalog; default: a SQL catalog in streamjob's own catalog "
             "database. A ${env:...} reference may stand for the password",
             scopes=("iceberg table", "iceberg stream")),
    Property("iceberg.namespace", "string", None,
             "the Iceberg namespace of the table (default: the StreamSQL database)",
             scopes=("iceberg table", "iceberg stream")),
    Property("iceberg.table", "string", None,
             "the table's name in its Iceberg namespace (default: the StreamSQL table's or "
             "stream's own name)", scopes=("iceberg table", "iceberg stream")),
    Property("iceberg.starting", "choice", "earliest",
             "Iceberg stream: where a job without a checkpoint starts (earliest: the rows of "
             "the current snapshot, then every later append; latest: only later appends); "
             "START ... FROM overrides it", choices=("earliest", "latest"),
             scopes=("iceberg stream",)),
    Property("delta.appendonly", "bool", False,
             "Delta's delta.appendOnly, set when the job creates the table: true makes "
             "every Delta writer refuse deletes and updates of its rows",
             scopes=("delta table",)),
    Property("delta.checkpointinterval", "int", 100,
             "Delta's delta.checkpointInterval, set when the job creates the table: a "
             "checkpoint of the transaction log every n commits (a micro-batch is a "
             "commit), so readers replay at most n JSON commits", minimum=1,
             maximum=1_000_000, scopes=("delta table",)),
    Property("delta.logretentionduration", "duration", None,
             "Delta's delta.logRetentionDuration (default there 30 days), set when the job "
             "creates the table: how long commits of the log are kept for time travel, "
             "e.g. '7 days'", unit="ms", minimum=3_600_000, maximum=3650 * 86_400_000,
             scopes=("delta table",)),
    *_DELTA_STORAGE,
    Property("optimize.interval", "duration", None,
             "Delta or Iceberg table: the server runs OPTIMIZE on the table this often "
             "(e.g. '1 day'), as the statement would, under its refusals; default: never",
             unit="ms", minimum=60_000, maximum=3650 * 86_400_000,
             scopes=("delta table", "iceberg table")),
    Property("vacuum.interval", "duration", None,
             "Delta or Iceberg table: the server runs VACUUM on the table this often "
             "(e.g. '1 day'), as the statement would, under its refusals (a job reading "
             "files it would delete refuses it); default: never", unit="ms",
             minimum=60_000, maximum=3650 * 86_400_000,
             scopes=("delta table", "iceberg table")),
    Property("vacuum.retain.hours", "int", None,
             "Delta or Iceberg table: the RETAIN HOURS of the scheduled VACUUM "
             "(vacuum.interval); default: 168 for Delta, 120 (Iceberg's own) for Iceberg",
             minimum=0, maximum=87_600, scopes=("delta table", "iceberg table")),
])

#: Words in a property name that make its value a secret (masked in output).
SECRET_WORDS = ("password", "secret", "sasl.jaas", "ssl.key", "token", "credential")


# ------------------------------------------------- the SQL policy's spark.sql.* allowlist


def _spark_setting(name: str, value: str | None) -> str:
    """The SQL policy's check of a job's ``spark.sql.*`` setting (imported when used)."""
    from ..policy.settings import check_spark_setting

    return check_spark_setting(name, value)


# A job's spark.sql.* settings pass only the SQL policy's allowlist (issue 28,
# docs/security.md "sql-policy"); others are refused with the nearest allowed name.
JOB.prefixes["spark.sql."] = ("a Spark SQL setting of the allowlist (docs/security.md, "
                              "sql-policy), applied to the job's own session clone")
JOB.guards["spark.sql."] = _spark_setting
