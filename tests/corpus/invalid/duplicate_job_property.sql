-- expect: 6:16: property 'morphling.checkpoint.retained' is given twice (first at line 5, column 16)
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s")
JOBPROPERTIES ("morphling.checkpoint.retained"="5",
               "morphling.checkpoint.retained"="50");
