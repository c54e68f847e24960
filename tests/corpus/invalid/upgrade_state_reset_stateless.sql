-- expect: 5:70: WITH STATE RESET: stateless change: the offsets are kept and neither query keeps state
CREATE STREAM s (id INT, name STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (id INT, name STRING) TBLPROPERTIES ("connector"="sql", "url"="sqlite:////tmp/x.db");
CREATE STREAMJOB j AS ("insert into t select id, name from s");
ALTER STREAMJOB j AS ("insert into t select id, upper(name) from s") WITH STATE RESET;
