-- Nexmark q21: add channel id. A channel_id column from the channel or the URL (q21.sql).
-- Rewrite: Spark's regexp_extract returns '' where Flink's REGEXP_EXTRACT returns NULL
-- (no match), so nullif(..., '') restores Flink's NULL.
CREATE TABLE IF NOT EXISTS nexmark_q21 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, channel_id STRING
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q21';

CREATE STREAMJOB IF NOT EXISTS nexmark_q21_job AS ("
  insert into nexmark_q21
  select auction, bidder, price, channel,
         case when lower(channel) = 'apple' then '0'
              when lower(channel) = 'google' then '1'
              when lower(channel) = 'facebook' then '2'
              when lower(channel) = 'baidu' then '3'
              else nullif(regexp_extract(url, '(&|^)channel_id=([^&]*)', 2), '') end
  from bid
  where nullif(regexp_extract(url, '(&|^)channel_id=([^&]*)', 2), '') is not null
     or lower(channel) in ('apple', 'google', 'facebook', 'baidu')");
