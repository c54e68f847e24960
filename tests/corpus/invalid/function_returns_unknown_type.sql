-- expect: 2:48: RETURNS strin
CREATE FUNCTION f AS 'text_udfs:shout' RETURNS strin;
