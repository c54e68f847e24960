-- Slipstream windows over event time (watermark properties) and processing time.
CREATE STREAM clicks (user_id STRING, url STRING, ts TIMESTAMP)
TBLPROPERTIES ("topic"="clicks", "kafka.broker.list"="127.0.0.1:9092", "format"="json",
               "watermark.column"="ts", "watermark.delay"="10 seconds");

CREATE STREAM pings (host STRING, latency_ms INT)
TBLPROPERTIES ("topic"="pings", "kafka.broker.list"="127.0.0.1:9092", "format"="json");

CREATE TABLE clicks_per_user (user_id STRING, clicks BIGINT) STORED AS PARQUET;
CREATE TABLE latency (host STRING, avg_latency DOUBLE) STORED AS PARQUET;

-- tumbling, event time: appended when the window closes
CREATE STREAMJOB clicks_job AS ("
  INSERT INTO clicks_per_user
  SELECT user_id, count(*) FROM clicks STREAMWINDOW w AS (LENGTH '1' MINUTE)
  GROUP BY user_id");

-- sliding, processing time
CREATE STREAMJOB latency_job AS ("insert into latency
  select host, avg(latency_ms)
  from pings streamwindow w as (length '10' second slide '5' second)
  group by host");

START STREAMJOB clicks_job;
START STREAMJOB latency_job;

-- a window stream (Slipstream): one final row per user and window, appended when it closes
CREATE STREAM clicks_10s AS
  SELECT user_id, count(*) AS clicks, window AS win
  FROM clicks STREAMWINDOW w10 AS (LENGTH '10' SECOND SLIDE '10' SECOND)
  GROUP BY user_id;
CREATE TABLE busy_users (user_id STRING, clicks BIGINT) STORED AS PARQUET;
CREATE STREAMJOB busy_job AS ("insert into busy_users
  select user_id, clicks from clicks_10s where clicks > 100");
-- and aggregated again, per minute, on the window's event time
CREATE STREAMJOB busy_minutes_job AS ("insert into clicks_per_user
  select user_id, sum(clicks) from clicks_10s STREAMWINDOW m AS (LENGTH '1' MINUTE)
  group by user_id");
