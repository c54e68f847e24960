-- expect: 4:37: table default.s2 is a stream; a job writes to a table
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE STREAM s2 (a INT) TBLPROPERTIES ("topic"="t2", "kafka.broker.list"="h:9092");
CREATE STREAMJOB j AS ("insert into s2 select a from s");
