"""SQL tables (SQLAlchemy): the sink (schema checks, transactional writes with
exactly-once markers, upserts), the engines with their timeouts, and static SQL tables
read at every micro-batch."""
