-- Nexmark q5: hot items. The auction with the most bids in each 10-second window
-- sliding by 2 seconds (q5.sql).
-- Rewrite: Flink joins the per-auction counts with their per-window maximum; Spark
-- cannot join an aggregation's output in a stream. Spark chains two event-time window
-- aggregations instead: counts per auction and sliding window, then per window (its
-- window_time, grouped in 2-second windows, one per sliding window) the auction with the
-- largest count, max(struct(num, auction)). Ties: Flink lists every auction at the
-- maximum, this query the one with the largest id among them.
-- The sink also has each window's start (starttime), which Flink's q5 leaves out.
CREATE TABLE IF NOT EXISTS nexmark_q5 (auction BIGINT, num BIGINT, starttime TIMESTAMP)
STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q5';

CREATE STREAMJOB IF NOT EXISTS nexmark_q5_job AS ("
  insert into nexmark_q5
  select m.auction, m.num, s - interval 8 seconds
  from (select max(struct(num, auction)) as m, window.start as s
        from (select auction, num, window_time(window) as wt
              from (select auction, count(*) as num, window
                    from bid group by auction, window(dateTime, '10 seconds', '2 seconds')) c
             ) w
        group by window(wt, '2 seconds')) t");
