-- Delta Lake tables as sinks (STORED AS DELTA): partitioned, with Delta configuration.
CREATE STREAM orders (id BIGINT, region STRING, amount DOUBLE, at TIMESTAMP)
TBLPROPERTIES ("topic"="orders", "kafka.broker.list"="127.0.0.1:9092", "format"="json");

CREATE TABLE orders_delta (id BIGINT, region STRING, amount DOUBLE, day STRING)
  PARTITIONED BY (day)
  STORED AS DELTA LOCATION '/tmp/streamjob-corpus/orders_delta'
  TBLPROPERTIES ("delta.appendOnly"="true", "delta.checkpointInterval"="50");

CREATE TABLE orders_delta_default (id BIGINT, amount DOUBLE) STORED AS DELTA;

CREATE STREAMJOB to_delta AS ("insert into orders_delta
  select id, region, amount, date_format(at, 'yyyy-MM-dd') from orders");
DESCRIBE TABLE orders_delta;
SHOW CREATE TABLE orders_delta;
