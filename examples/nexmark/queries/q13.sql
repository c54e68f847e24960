-- Nexmark q13: bounded side input join. Bids enriched from a static table (q13.sql).
-- Rewrite: Flink's lookup join FOR SYSTEM_TIME AS OF PROCTIME() is a stream-static
-- join here; the static table is read again at each micro-batch (docs/connectors.md).
CREATE TABLE IF NOT EXISTS nexmark_q13 (
  auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP, value STRING
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q13';

CREATE STREAMJOB IF NOT EXISTS nexmark_q13_job AS ("
  insert into nexmark_q13
  select B.auction, B.bidder, B.price, B.dateTime, S.value
  from bid B join side_input S on mod(B.auction, 10000) = S.key");
