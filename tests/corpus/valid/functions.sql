-- User functions (docs/functions.md): the example module examples/functions/text_udfs.py
-- lies in the home's functions/ directory.
CREATE FUNCTION shout AS 'text_udfs:shout' RETURNS STRING;
CREATE TEMPORARY FUNCTION IF NOT EXISTS scaled AS 'text_udfs:scaled'
  RETURNS DOUBLE LANGUAGE PYTHON;
SHOW FUNCTIONS;
SHOW USER FUNCTIONS;
DESCRIBE FUNCTION shout;
DESC FUNCTION default.scaled;
DROP TEMPORARY FUNCTION scaled;
DROP FUNCTION IF EXISTS scaled;
