-- expect: 2:25: is not 'package.module:callable'
CREATE FUNCTION evil AS '/tmp/evil.py:run' RETURNS INT;
