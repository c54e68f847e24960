-- expect: 2:60: text_udfs:Words is a table function (a class with eval): write RETURNS TABLE (col type, ...), not RETURNS string
CREATE FUNCTION explode_words AS 'text_udfs:Words' RETURNS STRING;
