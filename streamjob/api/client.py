"""The client side of the HTTP API: what ``streamjob --server URL`` uses instead of the
catalog (DESIGN §8: such clients need no database credentials).

:class:`RemoteSession` has the interface of :class:`~streamjob.client.session.ClientSession`
that the CLI uses (``execute``, ``execute_script``, ``properties``, ``status``,
``close``): a script is parsed here whole (a parse error sends nothing and is shown
exactly as without ``--server``), then sent whole in one request with the session's
SET values (the server checks it whole before applying it, as without ``--server``),
and an error the server reports is located in the script.
"""

from __future__ import annotations

from typing import Any, Iterator

from ..exceptions import StreamJobError
from ..grammar import statements as st
from .wire import error_from_wire, result_from_wire

#: Seconds a request may take (a DROP waits for the job to stop).
TIMEOUT_S = 300.0
#: The source the server names in an error located in a request's statements.
REQUEST = "<request>"


class RemoteSession:
    """A client session over the HTTP API of ``streamjob server --http``.

    Args:
        url: the server's base URL (``http://host:8080``; a trailing ``/v1`` is fine).
        token: the bearer token, if the server requires one.

    HTTPS certificates are verified against the system's CAs, or ``SSL_CERT_FILE``.
    Every method raises :class:`StreamJobError` naming the URL when the server cannot
    be reached, refuses the token (401) or the role (403), or the statement fails.
    """

    def __init__(self, url: str, token: str | None = None) -> None:
        import httpx

        base = url.rstrip("/")
        self.url = base[:-3] if base.endswith("/v1") else base
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=TIMEOUT_S)
        self.properties: dict[str, str] = {}
        self.database = "default"  # the current database (USE), sent with each request
        self.jars: list[str] = []  # ADD JAR's jars, sent with each request (the server keeps none)
        self.dry_run = False
        self.manager = None  # a client of a server hosts no job
        self.catalog = RemoteCatalog(self)

    def _request(self, method: str, path: str, **kwargs) -> Any:
        import httpx

        try:
            resp = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise StreamJobError(f"cannot reach the streamjob server at {self.url}: "
                                 f"{exc}") from None
        try:
            body = resp.json()
        except ValueError:
            body = {}
        if resp.status_code >= 400:
            error = body.get("error") if isinstance(body, dict) else None
            if resp.status_code in (401, 403) or not isinstance(error, dict):
                reason = error.get("message") if isinstance(error, dict) else resp.reason_phrase
                raise StreamJobError(f"the streamjob server at {self.url} refused the "
                                     f"request ({resp.status_code}): {reason}")
            if isinstance(body.get("properties"), dict):
                self.properties = dict(body["properties"])
            if isinstance(body.get("database"), str):
                self.database = body["database"]
            if isinstance(body.get("jars"), list):
                self.jars = [str(j) for j in body["jars"]]
            exc = error_from_wire(error)
            exc.results = body.get("results") or []  # of the statements that took effect
            raise exc
        return body

    def execute(self, stmt: st.Statement):
        """Execute one statement on the server; its :class:`Result`.

        Raises:
            StreamJobError: the statement's error, located in the statement's text.
        """
        body = self._request("POST", "/v1/statements",
                             json={"sql": stmt.text, "properties": self.properties,
                                   "database": self.database, "jars": self.jars})
        self.properties = dict(body.get("properties") or {})
        self.database = body.get("database") or self.database
        self.jars = [str(j) for j in body.get("jars") or ()]
        [result] = body["results"] or [{}]
        return result_from_wire(result)

    def execute_script(self, text: str, source: str | None = None,
                       statements: list | None = None) -> Iterator:
        """Parse ``text`` whole here (a parse error sends nothing), then send it whole in
        one request: the server tries it on a scratch copy of its catalog before it
        applies it (:meth:`streamjob.client.session.ClientSession.execute_script`). Yields
        ``(statement, Result)``; an error is located in ``text`` (``source`` names the
        file), after the results of the statements that took effect before it.
        ``statements``: ``text`` already parsed."""
        if statements is None:
            from ..grammar import parse_script

            statements = parse_script(text, source=source)
        try:
            body = self._request("POST", "/v1/statements",
                                 json={"sql": text, "properties": self.properties,
                                       "database": self.database, "jars": self.jars})
        except StreamJobError as exc:
            yield from zip(statements, map(result_from_wire, getattr(exc, "results", [])))
            if exc.source == REQUEST:
                exc.source = source
            raise
        self.properties = dict(body.get("properties") or {})
        self.database = body.get("database") or self.database
        self.jars = [str(j) for j in body.get("jars") or ()]
        yield from zip(statements, map(result_from_wire, body["results"]))

    def status(self) -> dict[str, Any]:
        """Every job's state now (``GET /v1/status``; the shape of
        :func:`streamjob.status.status_snapshot`)."""
        return self._request("GET", "/v1/status")

    def lease_holder(self) -> str | None:
        """``host:pid`` of the job manager holding the lease, or None."""
        server = self.status().get("server")
        return server.get("label") if isinstance(server, dict) else None

    def close(self) -> None:
        """Close the connections."""
        self._http.close()


class RemoteCatalog:
    """The few catalog reads a client makes for itself (the shell's completion and
    ``\\d``), answered by the API: names of streams, tables and jobs. Records have
    ``database`` and ``name``; ``url`` is the server's."""

    def __init__(self, session: RemoteSession) -> None:
        self._session = session
        self.url = session.url

    def _named(self, path: str, key: str, field: str) -> list:
        from types import SimpleNamespace

        rows = self._session._request("GET", path)[key]
        out = []
        for row in rows:
            if field == "job":
                database, _, name = row["job"].partition(".")
            else:
                database, name = row["database"], row[field]
            out.append(SimpleNamespace(database=database, name=name))
        return out

    def list_streams(self) -> list:
        """Every stream (``GET /v1/streams``)."""
        return self._named("/v1/streams", "streams", "stream")

    def list_tables(self) -> list:
        """Every table (``GET /v1/tables``)."""
        return self._named("/v1/tables", "tables", "table")

    def list_jobs(self) -> list:
        """Every job (``GET /v1/jobs``)."""
        return self._named("/v1/jobs", "jobs", "job")

    def _get(self, items: list, database: str, name: str):
        return next((i for i in items if (i.database, i.name) == (database, name)), None)

    def get_stream(self, database: str, name: str):
        """The stream, or None."""
        return self._get(self.list_streams(), database, name)

    def get_table(self, database: str, name: str):
        """The table, or None."""
        return self._get(self.list_tables(), database, name)

    def get_job(self, database: str, name: str):
        """The job, or None."""
        return self._get(self.list_jobs(), database, name)
