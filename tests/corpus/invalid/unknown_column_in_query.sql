-- expect: 5:18: unknown column 'nmae'
CREATE STREAM people (id INT, name STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE names (name STRING);
CREATE STREAMJOB j AS ("insert into names
  select upper(p.nmae) from people p");
