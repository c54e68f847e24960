-- expect: 9:10: aggregates over window stream default.per_user
CREATE STREAM clicks (user_id STRING, ts TIMESTAMP)
  TBLPROPERTIES ("topic"="clicks", "kafka.broker.list"="h:9092");
CREATE STREAM per_user AS SELECT user_id, count(*) AS n
  FROM clicks STREAMWINDOW w AS (LENGTH '10' SECOND) GROUP BY user_id;
CREATE TABLE totals (user_id STRING, n BIGINT)
  TBLPROPERTIES ("connector"="sql", "url"="sqlite:////tmp/t.db", "primary.key"="user_id");
CREATE STREAMJOB j AS ("insert into totals
  select user_id, sum(n) from per_user group by user_id");
