-- User functions (docs/functions.md): the example module examples/functions/text_udfs.py
-- lies in the home's functions/ directory.
CREATE FUNCTION shout AS 'text_udfs:shout' RETURNS STRING;
CREATE TEMPORARY FUNCTION IF NOT EXISTS scaled AS 'text_udfs:scaled'
  RETURNS DOUBLE LANGUAGE PYTHON;
SHOW FUNCTIONS;
SHOW USER FUNCTIONS;
DESCRIBE FUNCTION shout;
DESC FUNCTION default.scaled;
DROP TEMPORARY FUNCTION scaled;
DROP FUNCTION IF EXISTS scaled;
CREATE STREAM words (w STRING, x DOUBLE) TBLPROPERTIES ("topic"="words", "kafka.broker.list"="localhost:9092");
CREATE TABLE loud (w STRING, x DOUBLE) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///loud.db");
CREATE FUNCTION scaled AS 'text_udfs:scaled' RETURNS DOUBLE;
CREATE STREAMJOB shouting AS ("insert into loud select shout(w), scaled(x, 2.0) from words");
EXPLAIN STREAMJOB shouting;
-- a table function (Spark's Python UDTF) in LATERAL
CREATE FUNCTION explode_words AS 'text_udfs:Words' RETURNS TABLE (word STRING, n INT);
CREATE TABLE word_lengths (w STRING, word STRING, n INT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///words.db");
CREATE STREAMJOB splitting AS ("insert into word_lengths select s.w, t.word, t.n from words s, lateral explode_words(s.w) as t(word, n)");
EXPLAIN STREAMJOB splitting;
