"""An empty catalog database is made from the models at the head revision in one step
(streamjob/catalog/fresh.py, issue 19): it must equal the database the migrations make,
on SQLite and PostgreSQL, to the column order, defaults, constraints and rows."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.engine import make_url

from streamjob.catalog import Catalog, migrations
from streamjob.catalog.models import SCHEMA_VERSION

pytestmark = pytest.mark.component


@pytest.fixture
def migrated_url(catalog_url, tmp_path, request):
    """A second empty database beside ``catalog_url`` (same backend), for the migrations."""
    if catalog_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path}/migrated.db"
        return
    admin = request.getfixturevalue("pg_admin")
    schema = f"sj_mig_{uuid.uuid4().hex[:12]}"
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(catalog_url).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))


def _dump(url: str) -> dict:
    """Everything SQLAlchemy's inspection says of each table, and its rows."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            insp = sa.inspect(conn)
            out = {}
            for t in sorted(insp.get_table_names()):
                out[t] = {
                    "columns": [(c["name"], str(c["type"]), c["nullable"], str(c.get("default")),
                                 c.get("autoincrement"), str(c.get("identity")))
                                for c in insp.get_columns(t)],
                    "pk": insp.get_pk_constraint(t),
                    "fks": sorted(map(repr, insp.get_foreign_keys(t))),
                    "unique": sorted(map(repr, insp.get_unique_constraints(t))),
                    "indexes": sorted(map(repr, insp.get_indexes(t))),
                    "checks": sorted(map(repr, insp.get_check_constraints(t))),
                    "rows": sorted(map(repr, conn.execute(sa.text(f'SELECT * FROM "{t}"')).all())),
                }
            return out
    finally:
        engine.dispose()


def test_a_fresh_catalog_equals_the_migrated_one(catalog_url, migrated_url):
    Catalog(catalog_url).close()  # empty: made at head from the models (fresh.py)
    engine = sa.create_engine(migrated_url)
    try:
        with engine.begin() as conn:  # every revision from the first, as before issue 19
            command.upgrade(migrations.alembic_config(conn), "head")
    finally:
        engine.dispose()
    fresh, migrated = _dump(catalog_url), _dump(migrated_url)
    assert fresh["alembic_version"]["rows"] == [repr((SCHEMA_VERSION,))]
    assert set(fresh) == set(migrated)
    for table in migrated:
        assert fresh[table] == migrated[table], table
    with Catalog(migrated_url) as cat:  # the migrated one opens as at head too
        assert cat.list_jobs() == []


def test_opening_a_fresh_catalog_imports_no_alembic(tmp_path):
    repo = str(Path(__file__).resolve().parents[2])
    code = ("import sys; from streamjob.catalog import Catalog; "
            f"Catalog('sqlite:///{tmp_path}/c.db').close(); "
            "print('alembic' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_database_with_tables_but_no_revision_is_not_made_fresh(catalog_url):
    # a foreign table: the migrations' checks apply (refused), nothing is created
    if catalog_url.startswith("sqlite"):
        Path(make_url(catalog_url).database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(catalog_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE streams (x INTEGER)"))
        from streamjob.exceptions import CatalogError

        with pytest.raises(CatalogError, match="no schema version"):
            Catalog(catalog_url)
        with engine.connect() as conn:
            assert sa.inspect(conn).get_table_names() == ["streams"]
    finally:
        engine.dispose()
