-- expect: 2:40: no jar given: ADD JAR 'x.jar' first
CREATE TEMPORARY FUNCTION reverse_s AS 'com.example.udf.Reverse';
