-- expect: 3:23: is not in the admin's function directories
-- os is installed, but not a package the admin allowed (streamjob.security.functions.packages)
CREATE FUNCTION sh AS 'os:system' RETURNS INT;
