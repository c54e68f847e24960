/* Hive's default field delimiter ^A, written '\001'; lines terminated by '\n';
   qualified and backquoted names; comments between properties; keywords in any case;
   AS( without a space; single-quoted properties and bare values. */
create stream if not exists sales.`order` (
  `order id` bigint comment 'the key',
  customer string,
  price decimal(10, 2),
  tags array<string>,
  attrs map<string,string>,
  address struct<city:string,zip:int>
)
Row Format Delimited Fields Terminated By '\001' Lines Terminated By '\n'
TblProperties(
  -- where the records come from
  'topic'='orders',
  /* bootstrap servers */ 'kafka.broker.list'='k1:9092,k2:9092',
  'transwarp.consumer.group.id' = 'orders-reader',   -- consumer group for lag
  'transwarp.consumer.reset.offset.strategy' = 'LATEST',
);

CREATE TABLE IF NOT EXISTS sales.order_copy (`order id` BIGINT, customer STRING, price DECIMAL(10,2))
  STORED AS json LOCATION '/tmp/streamjob-corpus/order_copy';

Create StreamJob sales.copy_orders AS("insert into sales.order_copy
    select `order id`, customer, price from sales.`order` where price > 0")
JobProperties(morphling.job.checkpoint.interval = 5000,  -- bare key and value
              morphling.task.max.failures = -1,
              'morphling.checkpoint.retained' = '3');

DESC STREAM sales.`order`;
describe table sales.order_copy;
DESCRIBE STREAMJOB sales.copy_orders;
SHOW CHECKPOINTS FOR STREAMJOB sales.copy_orders;
