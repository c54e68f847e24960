-- Nexmark q7: highest bid. The highest bid of each 10-second tumbling window (q7.sql).
-- Rewrite: Flink joins the bids with each window's maximum price; Spark cannot join an
-- aggregation's output in a stream, so the window keeps the greatest
-- struct(price, auction, bidder, dateTime, extra), i.e. the highest bid. Ties: Flink
-- returns every bid at the maximum price (and, through its BETWEEN with both ends
-- included, a bid exactly at a window's end in two windows), this query one bid per
-- window. Flink's insert also puts price into the bidder column and bidder into price
-- (B.auction, B.price, B.bidder against the sink's auction, bidder, price); the columns
-- here are in the sink's order.
CREATE TABLE IF NOT EXISTS nexmark_q7 (
  auction BIGINT, bidder BIGINT, price BIGINT, dateTime TIMESTAMP, extra STRING
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q7';

CREATE STREAMJOB IF NOT EXISTS nexmark_q7_job AS ("
  insert into nexmark_q7
  select m.auction, m.bidder, m.price, m.dateTime, m.extra
  from (select max(struct(price, auction, bidder, dateTime, extra)) as m
        from bid STREAMWINDOW w AS (LENGTH '10' SECOND)) t");
