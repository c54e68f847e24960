-- PARTITIONED BY: Hive's typed partition columns (appended last) and Spark's names.
CREATE STREAM orders (id BIGINT, region STRING, amount DOUBLE, at TIMESTAMP)
TBLPROPERTIES ("source"="files", "path"="/tmp/streamjob-corpus/orders", "format"="csv");

CREATE TABLE orders_by_day (id BIGINT, region STRING, amount DOUBLE)
  PARTITIONED BY (dt STRING COMMENT 'day of the order')
  STORED AS PARQUET LOCATION 'file:///tmp/streamjob-corpus/orders_by_day';

CREATE TABLE orders_by_region (id BIGINT, region STRING, amount DOUBLE)
  STORED AS JSON PARTITIONED BY (region);

CREATE TABLE regions (region STRING, manager STRING) PARTITIONED BY (region)
  STORED AS CSV LOCATION '/tmp/streamjob-corpus/regions'
  TBLPROPERTIES ("skip.header.line.count"="1");

CREATE STREAMJOB daily AS ("insert into orders_by_day
  select id, region, amount, date_format(at, 'yyyy-MM-dd') from orders");
CREATE STREAMJOB by_region AS ("insert into orders_by_region
  select o.id, r.manager, o.amount from orders o join regions r on o.region = r.region");
DESCRIBE TABLE orders_by_day;
SHOW TABLES;
