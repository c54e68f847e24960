-- expect: 6:16: contradictory job properties: morphling.job.enable.checkpoint=false (from JOBPROPERTIES) with morphling.checkpoint.backend=zookeeper (from JOBPROPERTIES)
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s")
JOBPROPERTIES ("morphling.job.enable.checkpoint"="false",
               "morphling.checkpoint.backend"="zookeeper");
