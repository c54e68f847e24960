-- Nexmark q1: currency conversion. Each bid's price from dollars to euros (q1.sql).
-- 0.908 * price is DECIMAL(23, 3) in Spark as in Flink (a BIGINT is DECIMAL(20, 0)).
CREATE TABLE IF NOT EXISTS nexmark_q1 (
  auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), dateTime TIMESTAMP, extra STRING
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q1';

CREATE STREAMJOB IF NOT EXISTS nexmark_q1_job AS ("
  insert into nexmark_q1
  select auction, bidder, 0.908 * price as price, dateTime, extra from bid");
