-- Nexmark q23: expand bid with person and auction. Bids by people who also sell, with
-- the person and each of their auctions (q23.sql). Two stream-stream inner joins.
-- As in Nexmark, bidder ids are 1000 above the person drawn (the reference generator
-- adds FIRST_PERSON_ID twice), so the rows are those of the ids where both meet.
CREATE TABLE IF NOT EXISTS nexmark_q23 (
  bidder BIGINT, price BIGINT, channel STRING, url STRING, bid_extra STRING,
  person_id BIGINT, name STRING, emailAddress STRING, creditCard STRING, city STRING,
  state STRING, person_extra STRING, itemName STRING, description STRING,
  initialBid BIGINT, reserve BIGINT, auction_dateTime TIMESTAMP, expires TIMESTAMP,
  seller BIGINT, category BIGINT, auction_extra STRING
) STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q23';

CREATE STREAMJOB IF NOT EXISTS nexmark_q23_job AS ("
  insert into nexmark_q23
  select B.bidder, B.price, B.channel, B.url, B.extra as bid_extra, P.id as person_id,
         P.name, P.emailAddress, P.creditCard, P.city, P.state, P.extra as person_extra,
         A.itemName, A.description, A.initialBid, A.reserve,
         A.dateTime as auction_dateTime, A.expires, A.seller, A.category,
         A.extra as auction_extra
  from bid B join person P on P.id = B.bidder
             join auction A on A.seller = B.bidder");
