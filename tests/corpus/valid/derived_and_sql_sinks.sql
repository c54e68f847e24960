-- A derived stream (a view over a stream) feeding an upsert into a SQL table.
CREATE STREAM payments (id BIGINT, account STRING, amount DOUBLE, currency STRING)
TBLPROPERTIES ("topic"="payments", "kafka.broker.list"="127.0.0.1:9092");

CREATE STREAM euro_payments AS SELECT id, account, amount FROM payments WHERE currency = 'EUR';

CREATE TABLE balances (account STRING, total DOUBLE, payments BIGINT)
TBLPROPERTIES ("connector"="sql", "url"="postgresql://app:s3cret@db:5432/bank",
               "table"="euro_balances", "primary.key"="account");

SET morphling.job.checkpoint.interval=1 s;
SET morphling.result.auto.flush = false;
SET spark.sql.shuffle.partitions = 2;
CREATE STREAMJOB balances_job AS ("insert into balances
  select account, sum(amount), count(*) from euro_payments group by account");
RESET;

ALTER STREAMJOB balances_job SET JOBPROPERTIES ("morphling.checkpoint.retained"="10");
SHOW STREAMS;
SHOW TABLES;
SET;
START STREAMJOB balances_job;
