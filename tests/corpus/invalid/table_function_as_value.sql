-- expect: 6:31: explode_words() is a table function: it is called in FROM explode_words(...) or LATERAL explode_words(...), not as a value
CREATE STREAM s (w STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="localhost:9092");
CREATE TABLE out (w STRING, n INT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///out.db");
CREATE FUNCTION explode_words AS 'text_udfs:Words' RETURNS TABLE (word STRING, n INT);
CREATE STREAMJOB j AS
  ("insert into out select w, explode_words(w) from s");
