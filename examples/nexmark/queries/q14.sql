-- Nexmark q14: calculation. Bids in a price band with their time of day (q14.sql).
-- Rewrite: Nexmark's user-defined count_char(extra, 'c') becomes the built-ins
-- length(extra) - length(replace(extra, 'c', '')) (a job may call only built-ins).
CREATE TABLE IF NOT EXISTS nexmark_q14 (
  auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), bidTimeType STRING,
  dateTime TIMESTAMP, extra STRING, c_counts BIGINT
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q14';

CREATE STREAMJOB IF NOT EXISTS nexmark_q14_job AS ("
  insert into nexmark_q14
  select auction, bidder, 0.908 * price as price,
         case when hour(dateTime) >= 8 and hour(dateTime) <= 18 then 'dayTime'
              when hour(dateTime) <= 6 or hour(dateTime) >= 20 then 'nightTime'
              else 'otherTime' end as bidTimeType,
         dateTime, extra,
         length(extra) - length(replace(extra, 'c', '')) as c_counts
  from bid
  where 0.908 * price > 1000000 and 0.908 * price < 50000000");
