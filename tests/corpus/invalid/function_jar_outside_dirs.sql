-- expect: 3:9: is not in the admin's jar directories
-- a jar is named inside the admin's jar directories (streamjob.security.functions.jars)
ADD JAR '/tmp/../opt/udfs/normalize.jar';
