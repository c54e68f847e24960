-- expect: 5:44: table-valued function range() in LATERAL is not supported
CREATE STREAM s (w STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="localhost:9092");
CREATE TABLE out (w STRING, n BIGINT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///out.db");
CREATE STREAMJOB j AS
  ("insert into out select w, r.id from s, lateral range(3) r");
