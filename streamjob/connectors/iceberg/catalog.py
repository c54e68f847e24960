"""Which Iceberg catalog holds a table, and opening it through pyiceberg.

``"iceberg.catalog.uri"`` names the catalog: a SQLAlchemy URL is pyiceberg's SQL catalog
(its tables ``iceberg_tables`` and ``iceberg_namespace_properties`` in that database),
an ``http(s)://`` URL a REST catalog. Without one, the SQL catalog lives in streamjob's
own catalog database (the URL of the home this process opened,
:func:`streamjob.security.policy.active`): the catalog is then one database for
streamjob's objects and the Iceberg tables' metadata pointers. Secret references in the
URL (``${env:...}`` for the password) are resolved when the catalog is opened, never
stored resolved.
"""

from __future__ import annotations

import threading
from typing import Any

from ...exceptions import ConnectorError
from ...sensitive import mask_url

CATALOG_NAME = "streamjob"
"""The pyiceberg catalog name (the SQL catalog's ``catalog_name`` column)."""

_CACHE: dict[str, Any] = {}
_LOCK = threading.Lock()


def first_line(exc: BaseException) -> str:
    """An exception's first line (pyiceberg and SQLAlchemy add detail below)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def resolved_uri(uri: str | None) -> str:
    """The catalog URL to open: ``uri`` with secret references resolved, or streamjob's
    own catalog database when None.

    Raises:
        ConnectorError: no streamjob home opened in this process (no catalog to use), or
            a reference that cannot be resolved.
    """
    from ...security.policy import active

    if uri is None:
        return active().catalog_url
    from ...security.resolve import resolve_url

    return resolve_url(uri, '"iceberg.catalog.uri"')


def open_catalog(uri: str | None):
    """The pyiceberg catalog of ``uri`` (None: streamjob's catalog database), opened
    once per process and URL.

    Raises:
        ConnectorError: the catalog cannot be reached (names the URL, password masked).
    """
    real = resolved_uri(uri)
    with _LOCK:
        cat = _CACHE.get(real)
        if cat is not None:
            return cat
        try:
            if real.lower().startswith(("http://", "https://")):
                from pyiceberg.catalog.rest import RestCatalog

                cat = RestCatalog(CATALOG_NAME, uri=real)
            else:
                from pyiceberg.catalog.sql import SqlCatalog

                cat = SqlCatalog(CATALOG_NAME, uri=real, init_catalog_tables="true")
        except Exception as exc:  # SQLAlchemy, HTTP and pyiceberg errors
            raise ConnectorError(f"cannot open the Iceberg catalog "
                                 f"{mask_url(uri) if uri else 'in the streamjob catalog'}: "
                                 f"{first_line(exc)}") from None
        _CACHE[real] = cat
        return cat


def load_table(ref, *, missing_ok: bool = False):
    """The pyiceberg table of ``ref`` (:class:`.spec.IcebergTableRef`), or None when it
    does not exist and ``missing_ok``.

    Raises:
        ConnectorError: the catalog unreachable, or no such table (without
            ``missing_ok``).
    """
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    cat = open_catalog(ref.catalog_uri)
    try:
        return cat.load_table((ref.namespace, ref.name))
    except (NoSuchTableError, NoSuchNamespaceError):
        if missing_ok:
            return None
        raise ConnectorError(f"there is no {ref.where()}") from None
    except Exception as exc:
        raise ConnectorError(f"cannot load {ref.where()}: {first_line(exc)}") from None


def same_location(a: str, b: str) -> bool:
    """Two table locations (paths or ``file:`` URIs) name the same directory."""
    import os
    from urllib.parse import unquote, urlparse

    def norm(x: str) -> str:
        x = unquote(urlparse(x).path) if x.startswith("file:") else x
        return os.path.realpath(os.path.abspath(x.rstrip("/")))

    return norm(a) == norm(b)
