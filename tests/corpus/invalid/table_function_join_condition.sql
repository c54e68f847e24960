-- expect: 6:81: a lateral join takes no condition or side here
CREATE STREAM s (w STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="localhost:9092");
CREATE TABLE out (w STRING, word STRING) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///out.db");
CREATE FUNCTION explode_words AS 'text_udfs:Words' RETURNS TABLE (word STRING, n INT);
CREATE STREAMJOB j AS
  ("insert into out select s.w, t.word from s join lateral explode_words(s.w) t on t.n > 2");
