-- expect: 4:43: a derived stream cannot aggregate without a STREAMWINDOW
CREATE STREAM clicks (user_id STRING, ts TIMESTAMP)
  TBLPROPERTIES ("topic"="clicks", "kafka.broker.list"="h:9092");
CREATE STREAM per_user AS SELECT user_id, count(*) AS n
  FROM clicks GROUP BY user_id;
