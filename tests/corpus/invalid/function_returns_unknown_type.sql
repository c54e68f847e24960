-- expect: 2:46: RETURNS strin
CREATE FUNCTION f AS 'text_udfs:shout' RETURNS strin;
