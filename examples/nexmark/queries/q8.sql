-- Nexmark q8: monitor new users. People who created an auction in the same 10-second
-- tumbling window as they entered the system (q8.sql).
-- Rewrite: Flink joins two windowed aggregations (distinct people and sellers per
-- window); Spark cannot join aggregations' outputs in a stream. A left semi join of
-- person with auction on the seller and the same window gives the same rows: one per
-- person (a person appears once), when some auction of theirs shares the window. The
-- time bounds in ON let Spark drop state older than 10 seconds past the watermark.
CREATE TABLE IF NOT EXISTS nexmark_q8 (id BIGINT, name STRING, stime TIMESTAMP)
STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q8';

CREATE STREAMJOB IF NOT EXISTS nexmark_q8_job AS ("
  insert into nexmark_q8
  select P.id, P.name, timestamp_millis(floor(unix_millis(P.dateTime) / 10000) * 10000)
  from person P left semi join auction A
    on P.id = A.seller
   and floor(unix_millis(P.dateTime) / 10000) = floor(unix_millis(A.dateTime) / 10000)
   and A.dateTime >= P.dateTime - interval 10 seconds
   and A.dateTime <= P.dateTime + interval 10 seconds");
