-- Nexmark's three event streams as Kafka streams: the topics that
-- `python -m streamjob_tools.dev nexmark --events N --broker ${NEXMARK_BROKER}` writes.
-- Columns and names as Nexmark's Flink SQL DDL (ddl_gen.sql, ddl_views.sql); event time
-- is `dateTime` with Nexmark's watermark of 4 seconds (`dateTime` - INTERVAL '4' SECOND).

CREATE STREAM IF NOT EXISTS person (
  id BIGINT, name STRING, emailAddress STRING, creditCard STRING,
  city STRING, state STRING, dateTime TIMESTAMP, extra STRING
)
TBLPROPERTIES("topic"="${NEXMARK_TOPIC:-nexmark}_person",
              "kafka.broker.list"="${NEXMARK_BROKER:-127.0.0.1:9092}", "format"="json",
              "watermark.column"="dateTime", "watermark.delay"="4 seconds");

CREATE STREAM IF NOT EXISTS auction (
  id BIGINT, itemName STRING, description STRING, initialBid BIGINT, reserve BIGINT,
  dateTime TIMESTAMP, expires TIMESTAMP, seller BIGINT, category BIGINT, extra STRING
)
TBLPROPERTIES("topic"="${NEXMARK_TOPIC:-nexmark}_auction",
              "kafka.broker.list"="${NEXMARK_BROKER:-127.0.0.1:9092}", "format"="json",
              "watermark.column"="dateTime", "watermark.delay"="4 seconds");

CREATE STREAM IF NOT EXISTS bid (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  dateTime TIMESTAMP, extra STRING
)
TBLPROPERTIES("topic"="${NEXMARK_TOPIC:-nexmark}_bid",
              "kafka.broker.list"="${NEXMARK_BROKER:-127.0.0.1:9092}", "format"="json",
              "watermark.column"="dateTime", "watermark.delay"="4 seconds");

-- q12 windows bids on processing time: the same topic, without event time
CREATE STREAM IF NOT EXISTS bid_proctime (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  dateTime TIMESTAMP, extra STRING
)
TBLPROPERTIES("topic"="${NEXMARK_TOPIC:-nexmark}_bid",
              "kafka.broker.list"="${NEXMARK_BROKER:-127.0.0.1:9092}", "format"="json");

-- q13's side input: key,value = i,i for i < 10,000 (Nexmark's SideInputGenerator)
CREATE TABLE IF NOT EXISTS side_input (key BIGINT, value STRING)
STORED AS CSV LOCATION '${NEXMARK_DIR}/side_input';
