-- Nexmark q0: pass through. Every bid, unchanged (nexmark-flink queries/q0.sql).
CREATE TABLE IF NOT EXISTS nexmark_q0 (
  auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP, extra STRING
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q0';

CREATE STREAMJOB IF NOT EXISTS nexmark_q0_job AS ("
  insert into nexmark_q0
  select auction, bidder, price, dateTime, extra from bid");
