// An example Hive GenericUDF (docs/functions.md, "Hive UDF jars"): reverse(s), the
// characters of s in reverse order; null stays null. Built against the Hive jars
// PySpark ships (pyspark/jars/hive-exec-*-core.jar, hive-serde-*.jar,
// hadoop-client-api-*.jar):
//
//   javac -d classes -cp "$JARS/hive-exec-2.3.10-core.jar:$JARS/hive-serde-2.3.10.jar:$JARS/hadoop-client-api-3.5.0.jar" Reverse.java
//   jar cf text_udfs.jar -C classes .
//
// then, with text_udfs.jar in a jar directory of the admin (functions/ of the home):
//
//   ADD JAR 'text_udfs.jar';
//   CREATE TEMPORARY FUNCTION reverse_text AS 'com.example.udf.Reverse';
package com.example.udf;

import org.apache.hadoop.hive.ql.exec.UDFArgumentException;
import org.apache.hadoop.hive.ql.metadata.HiveException;
import org.apache.hadoop.hive.ql.udf.generic.GenericUDF;
import org.apache.hadoop.hive.serde2.objectinspector.ObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.PrimitiveObjectInspector;
import org.apache.hadoop.hive.serde2.objectinspector.primitive.PrimitiveObjectInspectorFactory;

public class Reverse extends GenericUDF {
  private PrimitiveObjectInspector input;

  @Override
  public ObjectInspector initialize(ObjectInspector[] args) throws UDFArgumentException {
    if (args.length != 1 || !(args[0] instanceof PrimitiveObjectInspector)) {
      throw new UDFArgumentException("reverse takes one primitive argument");
    }
    input = (PrimitiveObjectInspector) args[0];
    return PrimitiveObjectInspectorFactory.javaStringObjectInspector;
  }

  @Override
  public Object evaluate(DeferredObject[] args) throws HiveException {
    Object value = args[0].get();
    if (value == null) {
      return null;
    }
    return new StringBuilder(String.valueOf(input.getPrimitiveJavaObject(value))).reverse().toString();
  }

  @Override
  public String getDisplayString(String[] children) {
    return "reverse(" + children[0] + ")";
  }
}
