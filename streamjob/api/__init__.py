"""The front door of a job manager (issue 15, DESIGN §8): the HTTP API, the web console
and ``/metrics``, served by ``streamjob server --http HOST:PORT``; and the client that
``--server URL`` makes the CLI use instead of the catalog.

* :mod:`.app` — the FastAPI app: statements, jobs, checkpoints, runs, progress, status,
  server-sent events (the endpoint list is there);
* :mod:`.door` — the front door's checks: Host, Origin, JSON POSTs, body size;
* :mod:`.auth` — bearer tokens and roles (viewer, operator, admin);
* :mod:`.limits` — the rate limit per token;
* :mod:`.wire` — results and errors as JSON, and back;
* :mod:`.metrics` — Prometheus metrics, read from the catalog at each scrape;
* :mod:`.console` — the web console's static files;
* :mod:`.serve` — uvicorn on a thread of the server process;
* :mod:`.client` — :class:`~.client.RemoteSession`, the CLI's session over HTTP.
"""

from __future__ import annotations


def create_app(catalog, home, spark=None, lease_held=None, door=None):
    """The API app (see :func:`streamjob.api.app.create_app`)."""
    from .app import create_app as make

    return make(catalog, home, spark=spark, lease_held=lease_held, door=door)


__all__ = ["create_app"]
