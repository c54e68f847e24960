-- Nexmark q17: auction statistics report. Bids per auction and day (q17.sql).
-- An aggregation without a window: its rows change as bids arrive, so the sink is a SQL
-- table upserted on (auction, day) (Spark's update mode). Rewrites: COUNT(*) FILTER
-- (WHERE c) as count_if(c); avg(price) cast to BIGINT as Flink's AVG of a BIGINT.
CREATE TABLE IF NOT EXISTS nexmark_q17 (
  auction BIGINT, day STRING, total_bids BIGINT, rank1_bids BIGINT, rank2_bids BIGINT,
  rank3_bids BIGINT, min_price BIGINT, max_price BIGINT, avg_price BIGINT, sum_price BIGINT
)
TBLPROPERTIES("connector"="sql", "url"="sqlite:///${STREAMJOB_HOME}/nexmark.db",
              "primary.key"="auction,day");

CREATE STREAMJOB IF NOT EXISTS nexmark_q17_job AS ("
  insert into nexmark_q17
  select auction, date_format(dateTime, 'yyyy-MM-dd') as day,
         count(*),
         count_if(price < 10000),
         count_if(price >= 10000 and price < 1000000),
         count_if(price >= 1000000),
         min(price), max(price), cast(avg(price) as bigint), sum(price)
  from bid
  group by auction, date_format(dateTime, 'yyyy-MM-dd')");
