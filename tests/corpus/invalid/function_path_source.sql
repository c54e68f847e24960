-- expect: 2:25: is not 'package.module:callable'
CREATE FUNCTION evil AS '/opt/evil.py:run' RETURNS INT;
