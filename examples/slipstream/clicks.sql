-- 点击流统计：一个 Slipstream 5.2 风格的旧脚本，原样交给 streamjob。
-- A click-stream count as an old Slipstream 5.2 script is written, given to streamjob
-- unchanged: `streamjob check --compat examples/slipstream/clicks.sql` lists what each
-- clause and property becomes. Variables: ${ZK_QUORUM} (Kafka's ZooKeeper),
-- ${KAFKA_BROKERS} and ${STREAMJOB_HOME}.

-- 会话级参数：Slipstream 的任务参数（见 slipstream_confdesc.properties）
SET streamsql.use.eventtime=true;          -- 使用事件时间切分窗口
SET morphling.metrics.enabled=true;        -- 开启 metrics 收集
SET mapred.reduce.tasks=4;                 -- reduce 任务数量

-- 输入流：Kafka 的 ZooKeeper 地址和 broker 列表（老脚本两个都写；
-- 只写 kafka.zookeeper 时，streamjob 从 ZooKeeper 的 /brokers/ids 找 broker）
CREATE STREAM IF NOT EXISTS clicks (user_id STRING, url STRING, ts TIMESTAMP)
ROW FORMAT DELIMITED FIELDS TERMINATED BY ','
TBLPROPERTIES(
  "topic"="clicks",
  "kafka.zookeeper"="${ZK_QUORUM:-127.0.0.1:2181}",
  "kafka.broker.list"="${KAFKA_BROKERS:-127.0.0.1:9092}",
  "transwarp.consumer.reset.offset.strategy"="earliest",
  "watermark.column"="ts",
  "watermark.delay"="1 minute"
);

-- 结果表：每个用户每分钟的点击数，Parquet 文件（相当于写 HDFS）
CREATE TABLE IF NOT EXISTS clicks_per_minute (user_id STRING, start TIMESTAMP, clicks BIGINT)
STORED AS PARQUET
LOCATION '${STREAMJOB_HOME}/warehouse/clicks_per_minute';

-- 流任务：一分钟滚动窗口
CREATE STREAMJOB IF NOT EXISTS clicks_per_minute_job AS (
  "INSERT INTO clicks_per_minute
   SELECT user_id, window.start, count(*) FROM clicks
   STREAMWINDOW w AS (LENGTH '1' MINUTE)
   GROUP BY user_id"
)
JOBPROPERTIES(
  "morphling.job.enable.checkpoint"="true",      -- 启用 HA
  "morphling.job.checkpoint.interval"="60000",   -- checkpoint 频率，毫秒
  "morphling.maxlag.on.disorder"="5000",         -- 乱序时可容忍的最大延迟
  "morphling.hdfs.flush.interval.ms"="60000",    -- 每 60 秒刷新到目标表
  "morphling.hdfs.flush.size"="100000",          -- 每 10 万条刷新一次
  "morphling.job.enable.wal.sink"="true",        -- WAL Sink，保证 Exactly-Once
  "stream.id"="clicks_per_minute_job"            -- 任务名
);

START STREAMJOB clicks_per_minute_job;
