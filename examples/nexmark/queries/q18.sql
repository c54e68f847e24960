-- Nexmark q18: find last bid. Each bidder's latest bid on each auction (q18.sql).
-- Rewrite: Flink deduplicates with ROW_NUMBER() OVER (PARTITION BY bidder, auction
-- ORDER BY dateTime DESC) = 1; Spark has no such window in a stream, so an aggregation
-- keeps the greatest struct(dateTime, ...) per (bidder, auction), upserted into a SQL
-- table on that key (Flink's result is an upsert stream too). Bids at the same time:
-- the one with the highest price (Flink: any).
CREATE TABLE IF NOT EXISTS nexmark_q18 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  dateTime TIMESTAMP, extra STRING
)
TBLPROPERTIES("connector"="sql", "url"="sqlite:///${STREAMJOB_HOME}/nexmark.db",
              "primary.key"="auction,bidder");

CREATE STREAMJOB IF NOT EXISTS nexmark_q18_job AS ("
  insert into nexmark_q18
  select auction, bidder, m.price, m.channel, m.url, m.dateTime, m.extra
  from (select auction, bidder, max(struct(dateTime, price, channel, url, extra)) as m
        from bid group by auction, bidder) t");
