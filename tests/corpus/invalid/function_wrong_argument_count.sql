-- expect: 6:28: function shout(s) takes 1 argument, not 2
CREATE STREAM s (k STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="localhost:9092");
CREATE TABLE out (k STRING) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///out.db");
CREATE FUNCTION shout AS 'text_udfs:shout' RETURNS STRING;
CREATE STREAMJOB j AS
  ("insert into out select shout(k, 'x') from s");
