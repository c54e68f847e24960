"""The web console's static files (HTML, CSS, JavaScript; no build step, nothing fetched
from the network): served by :func:`streamjob.api.console.mount_console`."""

from __future__ import annotations

from pathlib import Path

#: Folder of index.html, console.js and console.css.
STATIC = Path(__file__).parent


def mount_console(app) -> None:
    """Serve the console at ``/`` (index.html) and its assets at ``/console/``. The
    page itself is public (it holds no data); every request it makes for data carries
    the bearer token the user typed in (kept in the browser's localStorage)."""
    from fastapi.responses import FileResponse
    from fastapi.staticfiles import StaticFiles

    app.mount("/console", StaticFiles(directory=STATIC), name="console")

    @app.get("/", include_in_schema=False)
    def index():
        return FileResponse(STATIC / "index.html", media_type="text/html")
