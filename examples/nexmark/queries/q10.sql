-- Nexmark q10: log to file system. Every bid into files partitioned by day and minute
-- (q10.sql: CSV files under dt=/hm= directories).
-- Rewrite: partitions are written as each micro-batch commits (Spark's file sink), not
-- on Flink's partition-time commit policy; Parquet rather than CSV.
CREATE TABLE IF NOT EXISTS nexmark_q10 (
  auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP, extra STRING
) PARTITIONED BY (dt STRING, hm STRING)
STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q10';

CREATE STREAMJOB IF NOT EXISTS nexmark_q10_job AS ("
  insert into nexmark_q10
  select auction, bidder, price, dateTime, extra,
         date_format(dateTime, 'yyyy-MM-dd'), date_format(dateTime, 'HH:mm')
  from bid");
