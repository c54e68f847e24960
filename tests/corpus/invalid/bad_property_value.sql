-- expect: 6:46: property 'morphling.task.max.failures' must be an integer between 0 and 10000, or -1 (never restart), got 'many'
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s")
JOBPROPERTIES ("morphling.checkpoint.retained"="5",
               "morphling.task.max.failures"="many");
