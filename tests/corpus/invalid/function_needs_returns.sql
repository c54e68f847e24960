-- expect: 2:22: needs RETURNS <type>
CREATE FUNCTION f AS 'text_udfs:shout';
