-- Hive UDF jars (docs/functions.md): text_udfs.jar, the example GenericUDF
-- examples/functions/Reverse.java compiled, lies in the home's functions/ directory.
add jar text_udfs.jar;
create temporary function reverse_text as 'com.example.udf.Reverse';
CREATE FUNCTION reversed AS 'com.example.udf.Reverse' USING JAR 'text_udfs.jar' RETURNS STRING;
CREATE FUNCTION IF NOT EXISTS rev_java AS 'com.example.udf.Reverse' LANGUAGE JAVA
  USING JAR '${STREAMJOB_HOME}/functions/text_udfs.jar';
DESCRIBE FUNCTION reverse_text;
SHOW FUNCTIONS;
CREATE STREAM words (w STRING) TBLPROPERTIES ("topic"="words", "kafka.broker.list"="localhost:9092");
CREATE TABLE backwards (w STRING, r STRING) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///backwards.db");
CREATE STREAMJOB backwards AS ("insert into backwards select reverse_text(w), upper(reversed(w)) from words");
EXPLAIN STREAMJOB backwards;
DROP FUNCTION rev_java;
