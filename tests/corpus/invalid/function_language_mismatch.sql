-- expect: 2:30: LANGUAGE PYTHON names 'package.module:callable'
CREATE FUNCTION reverse_s AS 'com.example.udf.Reverse' LANGUAGE PYTHON;
