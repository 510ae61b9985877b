"""The FastAPI app of ``graphmem serve``: one owner process serving a graphmem file to many.

``create_app(db, keys=...)`` builds it; ``uvicorn.run(create_app(...))`` serves it. Every error
is JSON: ``{"error": {"type", "message", "fields"?}}`` with the status below, so clients can map it
back to graphmem's exceptions:

====================  ======  ==========================================================
error                 status  when
====================  ======  ==========================================================
Unauthorized          401     no key, or an unknown key
Forbidden             403     the key's role may not do this
NotFoundError         404     an unknown id, or one that belongs to another user
ValidationError       422     malformed JSON, a missing field, a wrong type (``fields``)
InvalidInputError     422     Memory refused an argument (the message says what to do)
CypherError           400     the query failed, wrote, or ran past the time limit
PayloadTooLarge       413     the body is over ``Settings.server_max_body_bytes``
Busy                  503     the write queue is full: retry after ``Retry-After`` s
LLMError              502     the LLM failed
StoreError            500     the database refused an operation
====================  ======  ==========================================================
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio.to_thread
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import graphmem
from graphmem import errors as E
from graphmem.config import Settings
from graphmem.embed import Embedder, HashEmbedder
from graphmem.server.auth import KeyStore, Principal, bearer_key
from graphmem.server.core import BusyError, Owner
from graphmem.server.deps import ApiError, metrics_reader, principal
from graphmem.server.fastpath import ContextFastPath
from graphmem.server.metrics import CONTENT_TYPE
from graphmem.server.profiling import loop_profile

log = logging.getLogger("graphmem.server")

_STATUS: list[tuple[type[Exception], int]] = [
    (E.NotFoundError, 404),
    (E.InvalidInputError, 422),
    (E.CypherError, 400),
    (E.ReadOnlyError, 403),
    (E.DatabaseLockedError, 503),
    (E.LLMError, 502),
    (E.EmbedderError, 500),
    (E.StoreError, 500),
]


def error_body(kind: str, message: str, fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON body of every error answer."""
    body: dict[str, Any] = {"type": kind, "message": message}
    if fields:
        body["fields"] = fields
    return {"error": body}


def create_app(
    db: str | Path | None = None,
    *,
    keys: KeyStore | None = None,
    embedder: Embedder | None = None,
    llm: Any = None,
    settings: Settings | None = None,
    owner: Owner | None = None,
    background: bool = True,
    mcp: bool = True,
    fast_context: bool = True,
    clock: Callable[[], datetime] | None = None,
    bolt_auth: tuple[str, str] | None = None,
) -> FastAPI:
    """The server app over ``db`` (or an existing ``owner``). The owner opens the file at once and
    releases it when the app shuts down. ``fast_context``: answer valid ``POST /v1/context``
    requests without the framework's routing (:mod:`graphmem.server.fastpath`; same answers).
    ``clock``: the Memories' clock (tests inject one). ``bolt_auth``: (user, password) when ``db``
    is a bolt:// URL."""
    if owner is None:
        owner = Owner(db, keys=keys or KeyStore(), embedder=embedder or HashEmbedder(), llm=llm,
                      settings=settings, background=background, clock=clock, bolt_auth=bolt_auth)
    mcp_server = None
    if mcp:
        from graphmem.server.mcp_server import build_mcp

        mcp_server = build_mcp(owner=owner)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = max(limiter.total_tokens, owner.settings.server_write_queue + 32)
        await anyio.to_thread.run_sync(owner.warm_up)
        owner.start()
        try:
            with loop_profile():  # off unless GRAPHMEM_SERVER_PROFILE is set
                if mcp_server is not None:
                    async with mcp_server.session_manager.run():
                        yield
                else:
                    yield
        finally:
            owner.close()

    app = FastAPI(
        title="graphmem",
        version=graphmem.__version__,
        description="A graph-native learning memory for LLM agents, served by the one process that owns the file.",
        lifespan=lifespan,
    )
    app.state.owner = owner
    _install_errors(app)

    from graphmem.server import routes_admin, routes_memory, routes_retrieval, routes_seed

    for module in (routes_memory, routes_retrieval, routes_admin, routes_seed):
        app.include_router(module.router)
    app.include_router(routes_seed.v1)

    @app.get("/v1/whoami", tags=["operations"])
    def whoami(who: Principal = Depends(principal)) -> dict[str, Any]:
        """The key's user, role and (analysts) the users it may read."""
        return {"user": who.user, "role": who.role, "users": list(who.users), "key_id": who.key_id}

    @app.get("/healthz", tags=["operations"])
    def healthz() -> dict[str, Any]:
        """Liveness, without a key: the server is up (it reveals no path and no counts)."""
        return {"status": "ok", "version": graphmem.__version__, "uptime_s": round(time.time() - owner.started, 1)}

    @app.get("/metrics", tags=["operations"], dependencies=[Depends(metrics_reader)])
    def metrics() -> Response:
        """Prometheus metrics: requests and latency per endpoint, sizes, refresher and cycle times.
        Any valid key may read them (``Settings.server_metrics_public`` opens them to all)."""
        return Response(owner.metrics.render(), media_type=CONTENT_TYPE)

    if mcp_server is not None:
        http_app = mcp_server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                                 json_response=True)
        app.router.routes.extend(http_app.routes)
    context_route = next((r for r in routes_retrieval.router.routes if getattr(r, "path", None) == "/v1/context"
                          and "POST" in getattr(r, "methods", ())), None)

    async def handle_error(scope: Scope, exc: Exception) -> Response:
        """The app's own exception handler's answer for ``exc`` (the fast path's errors)."""
        handlers = app.exception_handlers
        handler = next((handlers[c] for c in type(exc).__mro__ if c in handlers), handlers.get(Exception))
        if handler is None:
            raise exc
        response = handler(Request(scope), exc)
        return await response if inspect.isawaitable(response) else response

    if fast_context:
        app.add_middleware(ContextFastPath, owner=owner, handle_error=handle_error, route=context_route)
    if mcp_server is not None:
        app.add_middleware(McpAuth, owner=owner)
    app.add_middleware(Instrument, owner=owner)
    app.add_middleware(BodyLimit, limit=owner.settings.server_max_body_bytes)  # outermost
    return app


def _install_errors(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.kind, str(exc)), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(BusyError)
    async def busy(request: Request, exc: BusyError) -> JSONResponse:
        return JSONResponse(error_body("Busy", str(exc)), status_code=503,
                            headers={"Retry-After": str(exc.retry_after)})

    @app.exception_handler(E.GraphmemError)
    async def graphmem_error(request: Request, exc: E.GraphmemError) -> JSONResponse:
        status = next((code for cls, code in _STATUS if isinstance(exc, cls)), 500)
        if status >= 500:
            log.error("graphmem server: %s on %s: %s", type(exc).__name__, request.url.path, exc)
        return JSONResponse(error_body(type(exc).__name__, str(exc)), status_code=status)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("graphmem server: unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body("InternalError", f"the server failed: {type(exc).__name__}: {exc}; "
                                       "nothing was acknowledged, retry or report it"), status_code=500)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        fields = []
        for err in exc.errors():
            loc = [str(p) for p in err.get("loc", ()) if p != "body"]
            if err.get("type") == "json_invalid":
                return JSONResponse(error_body(
                    "ValidationError", f"the request body is not valid JSON ({err.get('msg')}); send a JSON object "
                    "with Content-Type: application/json"), status_code=422)
            field = ".".join(loc) or "body"
            fields.append({"field": field, "problem": err.get("msg", "invalid"),
                           "fix": _fix(err.get("type", ""), field)})
        summary = "; ".join(f"{f['field']}: {f['problem']}" for f in fields)
        return JSONResponse(error_body("ValidationError", f"invalid request: {summary}", fields), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            message = f"no endpoint {request.method} {request.url.path}; see /docs for the API"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}; see /docs for the API"
        else:
            message = str(exc.detail)
        kind = "NotFound" if exc.status_code == 404 else "HTTPError"
        return JSONResponse(error_body(kind, message), status_code=exc.status_code, headers=exc.headers)


def _fix(kind: str, field: str) -> str:
    if kind == "missing":
        return f"add the field {field!r}"
    if kind == "extra_forbidden":
        return f"remove {field!r}: it is not an argument of this endpoint (see /docs)"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"send {field!r} with the type shown in /docs"
    return f"correct {field!r} (see /docs)"


class Instrument:
    """Counts requests and their latency per endpoint (route template) into /metrics."""

    def __init__(self, app: ASGIApp, owner: Owner) -> None:
        self.app = app
        self.metrics = owner.metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = {"code": 500}

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
            method = scope.get("method", "")
            self.metrics.requests.labels(endpoint, method, str(status["code"])).inc()
            self.metrics.latency.labels(endpoint, method).observe(time.perf_counter() - start)


class McpAuth:
    """/mcp answers 401 without a valid key, like every /v1 endpoint (the tools then act as its user)."""

    def __init__(self, app: ASGIApp, owner: Owner) -> None:
        self.app = app
        self.keys = owner.keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path", "").startswith("/mcp"):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
            if self.keys.check(bearer_key(headers.get("authorization"), headers.get("x-api-key"))) is None:
                resp = JSONResponse(error_body("Unauthorized", "no valid API key: send 'Authorization: Bearer <key>' "
                                               "(create a key with `graphmem keys add`)"), status_code=401,
                                    headers={"WWW-Authenticate": "Bearer"})
                await resp(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BodyLimit:
    """Refuses bodies over the limit with 413 (by Content-Length, or while reading a chunked body)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            await _too_large(self.limit, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge()
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await _too_large(self.limit, send)


class _TooLarge(Exception):
    pass


async def _too_large(limit: int, send: Send) -> None:
    resp = JSONResponse(error_body(
        "PayloadTooLarge", f"the request body is over {limit:,} bytes; send less at once (e.g. split a batch) or "
        "raise Settings.server_max_body_bytes"), status_code=413)
    await send({"type": "http.response.start", "status": 413, "headers": resp.raw_headers})
    await send({"type": "http.response.body", "body": resp.body})
