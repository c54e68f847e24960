-- Sessions closed by inactivity (SESSIONWINDOW ... GAP): event time and processing time.
CREATE STREAM clicks (user_id STRING, url STRING, ts TIMESTAMP)
TBLPROPERTIES ("topic"="clicks", "kafka.broker.list"="127.0.0.1:9092", "format"="json",
               "watermark.column"="ts", "watermark.delay"="10 seconds");

CREATE STREAM pings (host STRING, latency_ms INT)
TBLPROPERTIES ("topic"="pings", "kafka.broker.list"="127.0.0.1:9092", "format"="json");

CREATE TABLE user_sessions (user_id STRING, started TIMESTAMP, ended TIMESTAMP, clicks BIGINT)
  STORED AS PARQUET;
CREATE TABLE host_bursts (host STRING, pings BIGINT) STORED AS PARQUET;

-- event time: a session's row is appended once the watermark passes its end
CREATE STREAMJOB sessions_job AS ("
  INSERT INTO user_sessions
  SELECT user_id, session_window.start, session_window.end, count(*)
  FROM clicks c SESSIONWINDOW s AS (GAP '30' MINUTE)
  GROUP BY user_id");

-- processing time
CREATE STREAMJOB bursts_job AS ("insert into host_bursts
  select host, count(*) from pings sessionwindow s as (gap 5 seconds) group by host");
