"""Shared helpers of the catalog tests (test_catalog_*.py): column lists, a base time,
row counts straight from the database, and shortcuts creating jobs and checkpoints."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlalchemy import create_engine, text

from streamjob.catalog import Catalog

COLS = [{"name": "id", "type": "int"}, {"name": "dest", "type": "string"}]
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


def _count(url: str, table: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.scalar(text(f"SELECT count(*) FROM {table}"))
    finally:
        engine.dispose()


def _job(cat: Catalog, name: str, *deps, db: str = "default", **kw) -> bool:
    return cat.create_job(db, name, f"insert into t select * from s -- {name}", {}, list(deps), **kw)


def _ckpt(cat: Catalog, uid: str, cid: int, retained: int = 5, **kw) -> None:
    values = dict(
        started_at=T0 + timedelta(seconds=cid),
        ended_at=T0 + timedelta(seconds=cid, milliseconds=250),
        duration_ms=250,
        source_offsets={"flights": {"0": cid * 10, "1": cid * 7}},
        input_rows=cid * 3,
        state_rows=cid,
        fingerprint="fp1",
        retained=retained,
    )
    values.update(kw)
    cat.record_checkpoint(uid, cid, **values)
