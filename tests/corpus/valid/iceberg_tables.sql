-- Apache Iceberg tables (STORED AS ICEBERG): in streamjob's own catalog database by
-- default, or in a SQL or REST catalog named by "iceberg.catalog.uri".
CREATE STREAM orders (id BIGINT, region STRING, amount DOUBLE, at TIMESTAMP)
TBLPROPERTIES ("topic"="orders", "kafka.broker.list"="127.0.0.1:9092", "format"="json");

CREATE TABLE orders_ice (id BIGINT, region STRING, amount DOUBLE, day STRING)
  PARTITIONED BY (day)
  STORED AS ICEBERG LOCATION '/tmp/streamjob-corpus/warehouse'
  TBLPROPERTIES ("iceberg.namespace"="lake");

CREATE TABLE orders_ice_default (id BIGINT, amount DOUBLE) STORED AS ICEBERG;

CREATE TABLE per_region (region STRING, n BIGINT, total DOUBLE) STORED AS ICEBERG
  LOCATION '/tmp/streamjob-corpus/warehouse'
  TBLPROPERTIES ("iceberg.catalog.uri"="postgresql+psycopg://ice@127.0.0.1:5432/iceberg",
                 "primary.key"="region");

CREATE STREAMJOB to_iceberg AS ("insert into orders_ice
  select id, region, amount, date_format(at, 'yyyy-MM-dd') from orders");
CREATE STREAMJOB totals AS ("insert into per_region
  select region, count(*), sum(amount) from orders group by region");
DESCRIBE TABLE orders_ice;
SHOW CREATE TABLE orders_ice;

-- The same Iceberg table read as a stream: its snapshots, appends only.
CREATE STREAM orders_lake (id BIGINT, region STRING, amount DOUBLE, day STRING)
  STORED AS ICEBERG LOCATION '/tmp/streamjob-corpus/warehouse'
  TBLPROPERTIES ("iceberg.namespace"="lake", "iceberg.table"="orders_ice",
                 "iceberg.starting"="latest");
CREATE TABLE big_orders (id BIGINT, region STRING, amount DOUBLE) STORED AS ICEBERG;
CREATE STREAMJOB silver_ice AS ("insert into big_orders
  select id, region, amount from orders_lake where amount > 100");
SHOW CREATE STREAM orders_lake;
