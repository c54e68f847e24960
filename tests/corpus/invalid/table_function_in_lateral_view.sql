-- expect: 6:43: table function explode_words() is called as LATERAL explode_words(...)
CREATE STREAM s (w STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="localhost:9092");
CREATE TABLE out (w STRING, word STRING) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///out.db");
CREATE FUNCTION explode_words AS 'text_udfs:Words' RETURNS TABLE (word STRING, n INT);
CREATE STREAMJOB j AS
  ("insert into out select w, word from s lateral view explode_words(w) t as word, n");
