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

-- The same Delta table read as a stream: the next job of a chain (bronze to silver).
CREATE STREAM orders_lake (id BIGINT, region STRING, amount DOUBLE, day STRING)
  STORED AS DELTA LOCATION '/tmp/streamjob-corpus/orders_delta'
  TBLPROPERTIES ("maxFilesPerTrigger"="50", "ignoreDeletes"="true");
CREATE TABLE big_orders (id BIGINT, region STRING, amount DOUBLE)
  STORED AS DELTA LOCATION '/tmp/streamjob-corpus/big_orders';
CREATE STREAMJOB silver AS ("insert into big_orders
  select id, region, amount from orders_lake where amount > 100");
SHOW CREATE STREAM orders_lake;
