"""The HTTP API of ``streamjob server --http`` (issue 15, DESIGN §8): a FastAPI app over
one catalog, the same :class:`~streamjob.client.session.ClientSession` the CLI and the shell
use underneath (as Flink's SQL Gateway puts one session layer under its clients).

Endpoints (JSON; errors are ``{"error": {"type", "message", "line", "column",
"snippet", ...}}`` with a 4xx status):

* ``POST /v1/statements`` ``{"sql": "...", "properties": {SET values}, "database":
  "default", "jars": [ADD JAR jars]}``: executes the statements in order (parsed whole
  first: a parse error executes nothing) and answers ``{"results": [...], "properties":
  {...}, "database": "...", "jars": [...]}`` (the session's SET values, current database
  and ADD JAR jars after them, USE and ADD JAR included, for the client to send with its
  next request: the server keeps no session). Each jar sent is checked again against the
  admin's jar directories, as ADD JAR checks it (docs/functions.md, "ADD JAR and
  sessions"). PRINT needs
  LIMIT here and answers once it has LIMIT records or none came for 5 s. The script is
  tried whole on a scratch copy of the catalog first
  (:meth:`~streamjob.client.session.ClientSession.execute_script`): an error there answers 400
  with the error, located in ``sql``, and nothing executed (``"results": []``). A
  statement failing after that answers 400 with its error, its ``note`` saying which
  statements took effect, and their results.
* ``GET /v1/whoami``: the caller, ``{"principal": "token:NAME", "role": "viewer" |
  "operator" | "admin", "may_change": bool}`` (the console offers actions only when
  ``may_change``; the API refuses them to a viewer either way).
* ``GET /v1/status``: every job's state now (:func:`streamjob.status.status_snapshot`).
* ``GET /v1/jobs``, ``GET /v1/jobs/{name}`` (state, guarantee, SQL, properties with
  their origin, runs, checkpoints), ``GET /v1/jobs/{name}/checkpoints``, ``/runs``, ``/progress``
  (samples: rates and lag over time): jobs, checkpoints and runs in the shapes of
  :mod:`streamjob.shapes` (docs/json.md), as the CLI's ``--json`` prints them; ``POST /v1/jobs/{name}/start`` (optional
  ``{"from_checkpoint": N}`` or ``{"from_savepoint": "sp"}``), ``POST /v1/jobs/{name}/stop``
  (optional ``{"savepoint": "sp"}``), ``DELETE /v1/jobs/{name}``; ``GET
  /v1/jobs/{name}/savepoints`` (the savepoint shape of docs/json.md); ``GET
  /v1/jobs/{name}/shadow`` (the shadow's record and comparison), ``POST
  /v1/jobs/{name}/shadow`` ``{"query": "...", "batches": N, "duration": "30s"}`` (runs it
  and answers when it is compared), ``POST /v1/jobs/{name}/shadow/promote``, ``DELETE
  /v1/jobs/{name}/shadow`` (docs/upgrades.md "Shadow runs"; operators and the admin).
* ``GET /v1/streams``, ``GET /v1/tables``; ``GET /v1/streams/{name}``,
  ``GET /v1/tables/{name}`` (the stream and table shapes of docs/json.md: columns,
  properties masked, ...).
* ``GET /v1/events``: server-sent events, ``event: status`` with the status snapshot
  whenever it changes (at most once a second), and a comment line every 15 s.
* ``GET /metrics``: Prometheus text format (:mod:`streamjob.api.metrics`).
* ``GET /openapi.json``: the OpenAPI schema. (No ``/docs``: Swagger UI loads its assets
  from a CDN, and nothing here needs the network.)

The front door (:mod:`streamjob.api.door`): the Host and Origin checks, POSTs as
``application/json`` only, the body limit; then the bearer token and its role
(:mod:`streamjob.api.auth`), the rate limit per token (429 with ``Retry-After``,
:mod:`streamjob.api.limits`) and at most :attr:`FrontDoor.max_statements` statements
per request (413). An event stream ends, with ``event: end`` saying why, within a
second of its token being revoked. Bad input of any kind is a 4xx with a JSON error,
never a 500 with a trace; a bug is a 500 saying so, its trace in the server's log only.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import asdict
from typing import Any, Callable

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import BaseModel, Field

from ..exceptions import AccessDeniedError, ObjectNotFoundError, StreamJobError
from .auth import READ_ONLY, Principal, Unauthorized, authenticate
from .door import MAX_BODY_BYTES, FrontDoor, FrontDoorMiddleware
from .limits import RateLimiter
from .wire import error_to_wire, jsonable, result_to_wire

log = logging.getLogger(__name__)
#: Seconds between two status reads of an event stream, and between its keep-alives.
EVENTS_POLL_S, EVENTS_KEEPALIVE_S = 1.0, 15.0
#: Seconds PRINT through the API waits without a new record before it answers with
#: the records it has (a request cannot follow a topic until Ctrl-C).
PRINT_IDLE_S = 5.0


class StatementsRequest(BaseModel):
    """``POST /v1/statements``: StreamSQL text and the session's SET values."""

    sql: str = Field(description="one or more ;-separated StreamSQL statements")
    properties: dict[str, str] = Field(default_factory=dict,
                                       description="SET values of the client's session")
    database: str = Field(default="default",
                          description="the client session's current database (USE)")
    jars: list[str] = Field(default_factory=list, max_length=100,
                            description="the client session's ADD JAR jars (as the last "
                                        "answer gave them), checked again like ADD JAR")


_SAVEPOINT = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"


class StartRequest(BaseModel):
    """``POST /v1/jobs/{name}/start``: resume from a retained checkpoint, or restore a
    savepoint (optional; not both)."""

    from_checkpoint: int | None = Field(default=None, ge=0)
    from_savepoint: str | None = Field(default=None, pattern=_SAVEPOINT)


class StopRequest(BaseModel):
    """``POST /v1/jobs/{name}/stop``: keep the checkpoint the stop ends on as a savepoint
    (optional)."""

    savepoint: str | None = Field(default=None, pattern=_SAVEPOINT)


class ShadowRequest(BaseModel):
    """``POST /v1/jobs/{name}/shadow``: run ``query`` as the job's shadow (ALTER
    STREAMJOB ... WITH SHADOW; docs/upgrades.md "Shadow runs")."""

    query: str = Field(description='the new query, "insert into ... select ..."')
    batches: int | None = Field(default=None, ge=1, description="shadow.batches")
    duration: str | None = Field(default=None, pattern=r"^[0-9A-Za-z .]{1,32}$",
                                 description="shadow.duration, e.g. 30s")


class ApiError(Exception):
    """An error answered with ``status`` and ``{"error": {...}}``."""

    def __init__(self, status: int, error: dict[str, Any], extra: dict | None = None,
                 headers: dict | None = None) -> None:
        super().__init__(error.get("message"))
        self.status, self.error, self.extra, self.headers = status, error, extra or {}, headers


def _plain(status: int, kind: str, message: str, **extra) -> ApiError:
    return ApiError(status, {"type": kind, "message": message}, **extra)


def create_app(catalog, home, spark: Callable | None = None,
               lease_held: Callable[[], bool] | None = None,
               door: FrontDoor | None = None) -> FastAPI:
    """The API over ``catalog`` (a :class:`~streamjob.catalog.Catalog`) and ``home``.

    Args:
        spark: ``() -> SparkSession`` for Spark's streaming analysis at CREATE/ALTER
            STREAMJOB (the server's); None: the session starts one when needed.
        lease_held: ``() -> bool``, whether this process holds the job manager lease
            (the ``streamjob_server_lease_held`` metric); None: not a job manager.
        door: the front door's settings (default :class:`FrontDoor`: bound to
            127.0.0.1, tokens required, the default limits).
    """
    door = door or FrontDoor()
    limiter = RateLimiter(door.rate_per_s, door.burst)
    from ..client.session import ClientSession
    from ..shapes import runs_json
    from ..status import status_snapshot
    from .metrics import metrics_text

    app = FastAPI(title="streamjob", version="1", docs_url=None, redoc_url=None,
                  description="StreamSQL jobs as checkpointed Spark Structured Streaming "
                              "queries: statements, jobs, checkpoints, status, events.")

    @app.exception_handler(ApiError)
    async def _api_error(_request, exc: ApiError):
        return JSONResponse({"error": exc.error, **exc.extra}, status_code=exc.status,
                            headers=exc.headers)

    @app.exception_handler(RecursionError)
    async def _too_deep(_request, _exc: RecursionError):
        return JSONResponse({"error": {"type": "ValidationError", "message":
                             "the request is nested too deeply to handle"}}, status_code=400)

    @app.exception_handler(Exception)
    async def _bug(request, exc: Exception):  # a bug: said so, the trace in the log only
        log.error("HTTP API: %s %s failed", request.method, request.url.path,
                  exc_info=(type(exc), exc, exc.__traceback__))
        return JSONResponse({"error": {"type": "InternalError", "message":
                             f"the server failed on this request ({type(exc).__name__}); "
                             "its log has the details"}}, status_code=500)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_request, exc: RequestValidationError):
        first = (exc.errors() or [{}])[0]
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = f"bad request: {first.get('msg', 'invalid body')}" + (
            f" at {where}" if where else "")
        return JSONResponse({"error": {"type": "BadRequest", "message": message}},
                            status_code=400)

    def principal(request: Request) -> Principal:
        try:
            who = authenticate(catalog, request.headers.get("authorization"), door.no_auth)
        except Unauthorized as exc:
            raise ApiError(401, {"type": "Unauthorized", "message": str(exc)},
                           headers={"WWW-Authenticate": 'Bearer realm="streamjob"'}) from None
        except StreamJobError as exc:
            raise ApiError(503, error_to_wire(exc)) from None
        wait = limiter.take(who.name)
        if wait:
            retry = limiter.retry_after(wait)
            raise ApiError(429, {"type": "TooManyRequests", "message":
                                 f"{who.name} is over its rate limit ({door.rate_per_s:g} "
                                 f"requests/s, bursts of {door.burst}): retry in {retry} s"},
                           headers={"Retry-After": retry})
        return who

    def operator(who: Principal = Depends(principal)) -> Principal:
        if not who.may_change:
            raise _plain(403, "Forbidden", f"{who.name} is a viewer: this needs an operator token")
        return who

    def execute(who: Principal, sql: str, properties: dict[str, str],
                database: str = "default", jars: list[str] | None = None) -> dict[str, Any]:
        from ..grammar import parse_script
        from ..grammar import statements as st

        session = ClientSession(catalog, home, spark=spark, principal=who.name, role=who.role)
        session.properties.update(properties)
        session.database = database
        results: list[dict] = []
        try:
            session.add_jars(jars or ())
            statements = parse_script(sql, source="<request>")
            if len(statements) > door.max_statements:
                raise _plain(413, "TooManyStatements", f"{len(statements)} statements in one "
                             f"request: at most {door.max_statements} (send a longer script "
                             "in parts; the server's --http-max-statements sets the cap)",
                             extra={"results": []})
            if not who.may_change:
                for stmt in statements:
                    if not isinstance(stmt, READ_ONLY):
                        raise _plain(403, "Forbidden", f"{who.name} is a viewer: "
                                     f"{type(stmt).__name__} needs an operator token",
                                     extra={"results": []})
            for stmt in statements:
                if isinstance(stmt, st.PrintTopic) and stmt.limit is None:
                    raise _plain(400, "ValidationError", "PRINT through the HTTP API needs "
                                 "LIMIT n (a request cannot follow a topic until Ctrl-C)",
                                 extra={"results": []})
            for _stmt, result in session.execute_script(sql, "<request>", statements):
                if result.records is not None:  # no request waits forever for records
                    result.records.idle_timeout_s = PRINT_IDLE_S
                results.append(result_to_wire(result))
        except RecursionError:
            raise _plain(400, "ValidationError", "the statement is nested too deeply to "
                         "handle", extra={"results": results}) from None
        except StreamJobError as exc:
            status = 404 if isinstance(exc, ObjectNotFoundError) else \
                403 if isinstance(exc, AccessDeniedError) else 400
            raise ApiError(status, error_to_wire(exc),
                           extra={"results": results, "properties": session.properties,
                                  "database": session.database, "jars": session.jars}) from None
        return {"results": results, "properties": session.properties,
                "database": session.database, "jars": session.jars}

    def job_statement(who: Principal, sql: str, name: str) -> dict[str, Any]:
        _job_name(name)
        return execute(who, sql, {})

    def find_job(name: str):
        database, job_name = _job_name(name)
        try:
            return catalog.require_job(database, job_name)
        except ObjectNotFoundError as exc:
            raise ApiError(404, error_to_wire(exc)) from None

    @app.post("/v1/statements", summary="Execute StreamSQL statements")
    def post_statements(body: StatementsRequest, who: Principal = Depends(principal)):
        return execute(who, body.sql, body.properties, body.database, body.jars)

    @app.get("/v1/whoami", summary="The caller: its principal and role")
    def get_whoami(who: Principal = Depends(principal)):
        # the console shows actions only to a role the API lets act (docs/security.md)
        return {"principal": who.name, "role": who.role.value, "may_change": who.may_change}

    @app.get("/v1/status", summary="Every job's state now")
    def get_status(_who: Principal = Depends(principal)):
        return jsonable(status_snapshot(catalog))

    @app.get("/v1/jobs", summary="Every job with its state")
    def get_jobs(_who: Principal = Depends(principal)):
        return {"jobs": jsonable(status_snapshot(catalog)["jobs"])}

    @app.get("/v1/jobs/{name}", summary="One job: state, SQL, properties, runs, checkpoints")
    def get_job(name: str, who: Principal = Depends(principal)):
        job = find_job(name)  # the shape of `streamjob describe JOB --json` (docs/json.md)
        return execute(who, f"DESCRIBE STREAMJOB {_quoted(job)}", {})["results"][0]["data"]

    @app.get("/v1/jobs/{name}/checkpoints", summary="A job's retained checkpoints")
    def get_checkpoints(name: str, who: Principal = Depends(principal)):
        job = find_job(name)
        shown = execute(who, f"SHOW CHECKPOINTS FOR STREAMJOB {_quoted(job)}", {})
        return {"checkpoints": shown["results"][0]["data"]}

    @app.get("/v1/jobs/{name}/versions", summary="Every version of a job's query")
    def get_versions(name: str, _who: Principal = Depends(principal)):
        from ..shapes import version_json  # issue 30, docs/upgrades.md

        job = find_job(name)
        return jsonable({"versions": [version_json(v)
                                      for v in catalog.list_job_versions(job.uid)]})

    @app.get("/v1/jobs/{name}/runs", summary="A job's runs (start, end, cause)")
    def get_runs(name: str, _who: Principal = Depends(principal)):
        job = find_job(name)
        return jsonable({"runs": runs_json(catalog.list_runs(job.uid))})

    @app.get("/v1/jobs/{name}/progress", summary="A job's rates and lag over time")
    def get_progress(name: str, limit: int = 720, _who: Principal = Depends(principal)):
        job = find_job(name)
        samples = catalog.progress_samples(job.uid, limit=max(1, min(limit, 20_000)))
        return jsonable({"samples": [asdict(s) for s in samples]})

    @app.post("/v1/jobs/{name}/start", summary="Set a job's desired state RUNNING")
    def start_job(name: str, body: StartRequest | None = None,
                  who: Principal = Depends(operator)):
        tail = "" if body is None or body.from_checkpoint is None else \
            f" FROM CHECKPOINT {body.from_checkpoint}"
        if body is not None and body.from_savepoint is not None:
            if body.from_checkpoint is not None:
                raise _plain(400, "ValidationError", "give from_checkpoint or from_savepoint, "
                             "not both")
            tail = f" FROM SAVEPOINT {body.from_savepoint}"
        return job_statement(who, f"START STREAMJOB {_quoted_name(name)}{tail}", name)

    @app.post("/v1/jobs/{name}/stop", summary="Set a job's desired state STOPPED")
    def stop_job(name: str, body: StopRequest | None = None, who: Principal = Depends(operator)):
        tail = "" if body is None or body.savepoint is None else \
            f" WITH SAVEPOINT {body.savepoint}"
        return job_statement(who, f"STOP STREAMJOB {_quoted_name(name)}{tail}", name)

    @app.get("/v1/jobs/{name}/savepoints", summary="A job's savepoints")
    def get_savepoints(name: str, who: Principal = Depends(principal)):
        job = find_job(name)
        shown = execute(who, f"SHOW SAVEPOINTS FOR STREAMJOB {_quoted(job)}", {})
        return {"savepoints": shown["results"][0]["data"]}

    @app.get("/v1/jobs/{name}/shadow", summary="A job's shadow and its comparison")
    def get_shadow(name: str, who: Principal = Depends(principal)):
        job = find_job(name)
        return execute(who, f"SHOW SHADOW FOR STREAMJOB {_quoted(job)}", {})["results"][0]["data"]

    @app.post("/v1/jobs/{name}/shadow", summary="Run a new query as the job's shadow")
    def post_shadow(name: str, body: ShadowRequest, who: Principal = Depends(operator)):
        props = ([f"'shadow.batches'='{body.batches}'"] if body.batches is not None else []) + (
            [f"'shadow.duration'='{body.duration}'"] if body.duration is not None else [])
        tail = f" JOBPROPERTIES({', '.join(props)})" if props else ""
        query = "'" + body.query.replace("\\", "\\\\").replace("'", "''") + "'"
        return job_statement(who, f"ALTER STREAMJOB {_quoted_name(name)} AS ({query}) "
                             f"WITH SHADOW{tail}", name)

    @app.post("/v1/jobs/{name}/shadow/promote", summary="Switch the job to its shadow's query")
    def promote_shadow(name: str, who: Principal = Depends(operator)):
        return job_statement(who, f"PROMOTE SHADOW FOR STREAMJOB {_quoted_name(name)}", name)

    @app.delete("/v1/jobs/{name}/shadow", summary="Drop the job's shadow and scratch tables")
    def discard_shadow(name: str, who: Principal = Depends(operator)):
        return job_statement(who, f"DISCARD SHADOW FOR STREAMJOB {_quoted_name(name)}", name)

    @app.delete("/v1/jobs/{name}", summary="Drop a job and purge its checkpoints")
    def drop_job(name: str, who: Principal = Depends(operator)):
        return job_statement(who, f"DROP STREAMJOB {_quoted_name(name)}", name)

    @app.get("/v1/streams", summary="Declared streams")
    def get_streams(who: Principal = Depends(principal)):
        return _rows(execute(who, "SHOW STREAMS", {})["results"][0], "streams")

    @app.get("/v1/tables", summary="Declared tables")
    def get_tables(who: Principal = Depends(principal)):
        return _rows(execute(who, "SHOW TABLES", {})["results"][0], "tables")

    def describe(who: Principal, kind: str, name: str) -> dict[str, Any]:
        database, object_name = _job_name(name)
        found = (catalog.get_stream if kind == "stream" else catalog.get_table)(database, object_name)
        if found is None:
            raise _plain(404, "ObjectNotFoundError", f"{kind} {database}.{object_name} does not exist")
        result = execute(who, f"DESCRIBE {_quoted_name(f'{database}.{object_name}')}", {})
        return result["results"][0]["data"]  # as `streamjob describe NAME --json`

    @app.get("/v1/streams/{name}", summary="One stream: columns and properties (masked)")
    def get_stream(name: str, who: Principal = Depends(principal)):
        return describe(who, "stream", name)

    @app.get("/v1/tables/{name}", summary="One table: columns and properties (masked)")
    def get_table(name: str, who: Principal = Depends(principal)):
        return describe(who, "table", name)

    def still_valid(who: Principal) -> bool:
        return who.token_hash is None or catalog.token_valid(who.token_hash)

    @app.get("/v1/events", summary="Server-sent events: the status snapshot on change")
    async def get_events(request: Request, who: Principal = Depends(principal)):
        async def stream():
            last, quiet = None, 0.0
            yield "retry: 2000\n\n"
            while not await request.is_disconnected():
                if not await asyncio.to_thread(still_valid, who):  # revoked: the stream ends
                    end = {"reason": "token revoked", "message": f"{who.name} was revoked: "
                           "this stream ends (reconnect with a valid token)"}
                    yield f"event: end\ndata: {json.dumps(end)}\n\n"
                    return
                snapshot = await asyncio.to_thread(status_snapshot, catalog)
                key = json.dumps([{k: v for k, v in j.items() if k != "last_checkpoint_age_s"}
                                  for j in snapshot["jobs"]], default=str, sort_keys=True)
                if key != last:
                    last, quiet = key, 0.0
                    yield f"event: status\ndata: {json.dumps(snapshot, default=str)}\n\n"
                elif quiet >= EVENTS_KEEPALIVE_S:
                    quiet = 0.0
                    yield ": keep-alive\n\n"
                await asyncio.sleep(EVENTS_POLL_S)
                quiet += EVENTS_POLL_S

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    @app.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
    def get_metrics(_who: Principal = Depends(principal)):
        body, content_type = metrics_text(catalog, lease_held)
        return PlainTextResponse(body, media_type=content_type)

    from .console import mount_console

    mount_console(app)
    return _limited(app, door)


def _limited(app: FastAPI, door: FrontDoor) -> FastAPI:
    """``app`` with the front door's checks as its outermost middleware (it stays a
    FastAPI, so its ``openapi()`` is reachable)."""
    app.add_middleware(FrontDoorMiddleware, door=door)
    return app


def _job_name(name: str) -> tuple[str, str]:
    """``(database, name)`` of a path's ``[DB.]NAME``; 400 if it is no name."""
    from ..grammar import parse_statement

    try:
        stmt = parse_statement(f"DESCRIBE STREAMJOB {_quoted_name(name)}")
    except StreamJobError:
        raise _plain(400, "BadRequest", f"invalid job name '{name}'") from None
    return stmt.name.resolve()


def _quoted_name(name: str) -> str:
    """A path's ``[DB.]NAME`` as StreamSQL: each part backquoted unless plain."""
    import re

    parts = name.split(".", 1) if "`" not in name else [name]
    if all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) for p in parts) or "`" in name:
        return name
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def _quoted(job) -> str:
    return _quoted_name(f"{job.database}.{job.name}")


def _rows(result: dict[str, Any], key: str) -> dict[str, Any]:
    return {key: [dict(zip(result["columns"], r)) for r in result["rows"]]}


__all__ = ["create_app", "MAX_BODY_BYTES"]
