-- Nexmark q20: expand bid with auction. Bids of category-10 auctions with their auction
-- (q20.sql). A stream-stream inner join. The select names its columns as the sink does:
-- two columns both named dateTime (or extra) are ambiguous to Spark.
CREATE TABLE IF NOT EXISTS nexmark_q20 (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  bid_dateTime TIMESTAMP, bid_extra STRING, itemName STRING, description STRING,
  initialBid BIGINT, reserve BIGINT, auction_dateTime TIMESTAMP, expires TIMESTAMP,
  seller BIGINT, category BIGINT, auction_extra STRING
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q20';

CREATE STREAMJOB IF NOT EXISTS nexmark_q20_job AS ("
  insert into nexmark_q20
  select B.auction, B.bidder, B.price, B.channel, B.url, B.dateTime as bid_dateTime,
         B.extra as bid_extra, A.itemName, A.description, A.initialBid, A.reserve,
         A.dateTime as auction_dateTime, A.expires, A.seller, A.category,
         A.extra as auction_extra
  from bid B join auction A on B.auction = A.id
  where A.category = 10");
