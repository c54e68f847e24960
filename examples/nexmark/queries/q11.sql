-- Nexmark q11: user sessions. Bids per bidder and session, a session ending after 10
-- seconds without a bid (q11.sql). Spark's session_window, on event time.
CREATE TABLE IF NOT EXISTS nexmark_q11 (
  bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP, endtime TIMESTAMP
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q11';

CREATE STREAMJOB IF NOT EXISTS nexmark_q11_job AS ("
  insert into nexmark_q11
  select bidder, count(*), session_window.start, session_window.end
  from bid
  group by bidder, session_window(dateTime, '10 seconds')");
