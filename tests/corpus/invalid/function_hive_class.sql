-- expect: 2:40: names a Java (Hive) UDF class
CREATE TEMPORARY FUNCTION normalize AS 'com.example.udf.Normalize';
