-- Nexmark q3: local item suggestion. Who sells in OR, ID or CA in category 10 (q3.sql).
-- A stream-stream inner join (Spark keeps both sides in state: the query gives no time
-- bound, as in Flink).
CREATE TABLE IF NOT EXISTS nexmark_q3 (name STRING, city STRING, state STRING, id BIGINT)
STORED AS PARQUET LOCATION '${STREAMJOB_HOME}/nexmark/q3';

CREATE STREAMJOB IF NOT EXISTS nexmark_q3_job AS ("
  insert into nexmark_q3
  select P.name, P.city, P.state, A.id
  from auction A join person P on A.seller = P.id
  where A.category = 10 and (P.state = 'OR' or P.state = 'ID' or P.state = 'CA')");
