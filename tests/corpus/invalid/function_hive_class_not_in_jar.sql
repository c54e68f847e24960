-- expect: 3:40: Hive UDF class com.example.udf.Normalize: not in
ADD JAR 'text_udfs.jar';
CREATE TEMPORARY FUNCTION norm_text AS 'com.example.udf.Normalize';
