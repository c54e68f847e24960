-- Nexmark q22: get URL directories. The three directories of each bid's URL (q22.sql).
-- Rewrite: Flink's SPLIT_INDEX(url, '/', i) (0-based) is split(url, '/')[i].
CREATE TABLE IF NOT EXISTS nexmark_q22 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING,
  dir1 STRING, dir2 STRING, dir3 STRING
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q22';

CREATE STREAMJOB IF NOT EXISTS nexmark_q22_job AS ("
  insert into nexmark_q22
  select auction, bidder, price, channel,
         split(url, '/')[3], split(url, '/')[4], split(url, '/')[5]
  from bid");
