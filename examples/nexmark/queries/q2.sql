-- Nexmark q2: selection. Bids of every 123rd auction (q2.sql).
CREATE TABLE IF NOT EXISTS nexmark_q2 (auction BIGINT, price BIGINT)
STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q2';

CREATE STREAMJOB IF NOT EXISTS nexmark_q2_job AS ("
  insert into nexmark_q2
  select auction, price from bid where mod(auction, 123) = 0");
