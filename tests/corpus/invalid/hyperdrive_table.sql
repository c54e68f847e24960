-- expect: 3:1: a SQL table with a primary key gives the same upsert
CREATE TABLE quotes (sym STRING, px DOUBLE)
STORED BY 'io.transwarp.hyperdrive.HyperdriveStorageHandler'
TBLPROPERTIES ('hbase.table.name'='quotes');
