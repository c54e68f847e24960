-- expect: 2:64: LANGUAGE scala is not supported
CREATE FUNCTION f AS 'text_udfs:shout' RETURNS STRING LANGUAGE scala;
