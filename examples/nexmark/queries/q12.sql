-- Nexmark q12: processing-time windows. Bids per bidder in 10-second windows of
-- processing time (q12.sql, PROCTIME()). A STREAMWINDOW over a stream without event
-- time (bid_proctime) is windowed on the micro-batch's time.
CREATE TABLE IF NOT EXISTS nexmark_q12 (
  bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP, endtime TIMESTAMP
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q12';

CREATE STREAMJOB IF NOT EXISTS nexmark_q12_job AS ("
  insert into nexmark_q12
  select bidder, count(*), window.start, window.end
  from bid_proctime STREAMWINDOW w AS (LENGTH '10' SECOND)
  group by bidder");
