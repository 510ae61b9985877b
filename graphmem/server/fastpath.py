"""``POST /v1/context`` without FastAPI's routing and dependency machinery, on the happy path.

Every context an agent asks for pays the framework's per-request work on the event loop (route
matching over every endpoint, solving four dependencies, building a Request, validating the body
through the endpoint's signature) while the event loop holds the GIL the ranking threads need.
:class:`ContextFastPath` answers the common case itself: a JSON body that validates, and a known
key whose role writes. It runs the same ``Memory.context`` on the same thread pool, through the
same read gate, and sends the same bytes (:func:`~graphmem.server.routes_retrieval.context_json`).

Anything else (no key, an unknown or read-only key, a body that does not validate, another
content type, a body over the limit) is handed to the FastAPI app unchanged, with the body it
already read, so every error answer is the one the endpoint gives. An error raised by
``Memory.context`` itself is answered by the app's own exception handlers.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anyio.to_thread
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphmem.server import profiling
from graphmem.server import schemas as s
from graphmem.server.core import Owner
from graphmem.server.routes_retrieval import context_json

PATH = "/v1/context"
_HEADERS = [(b"content-type", b"application/json")]


class ContextFastPath:
    """ASGI middleware: answers valid, authorised ``POST /v1/context`` requests directly."""

    def __init__(self, app: ASGIApp, owner: Owner, handle_error: Any = None, route: Any = None) -> None:
        self.app = app
        self.owner = owner
        self.handle_error = handle_error  # async (scope, exc) -> Response: the app's own handler's answer
        self.route = route  # the APIRoute of /v1/context (the metrics label requests by its path)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != PATH or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for k, v in scope.get("headers") or []:
            headers.setdefault(k.lower(), v)
        if headers.get(b"content-type", b"").split(b";")[0].strip().lower() != b"application/json":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it
                await self.app(scope, _replay(chunks, message, receive), send)
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        request = self._accept(headers, body)
        if request is None:
            await self.app(scope, _replay([body], None, receive), send)
            return
        mem, args = request
        if self.route is not None:
            scope["route"] = self.route
        try:
            payload = await anyio.to_thread.run_sync(self._context, mem, args)
        except Exception as exc:
            if self.handle_error is None:
                raise
            response = await self.handle_error(scope, exc)
            await response(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*_HEADERS, (b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})

    def _accept(self, headers: dict[bytes, bytes], body: bytes) -> tuple[Any, s.ContextRequest] | None:
        """The Memory and arguments when this request is on the happy path, else None."""
        key = _key(headers)
        if key is None:
            return None
        who = self.owner.keys.check(key)
        if who is None or not who.writes:
            return None
        try:
            data = json.loads(body)
            if not isinstance(data, dict):
                return None
            args = s.ContextRequest.model_validate(data)
        except (ValueError, ValidationError):
            return None
        return self.owner.memory(who.user), args

    def _context(self, mem: Any, body: s.ContextRequest) -> bytes:
        """The answer's bytes (on a worker thread, as the endpoint runs)."""
        def call() -> Any:
            return mem.context(body.query, tool=body.tool, entities=body.entities, topics=body.topics,
                               objective_type=body.objective_type, limit=body.limit,
                               token_budget=body.token_budget)

        with self.owner.reading():
            prof = profiling.ACTIVE
            cpu = time.thread_time()
            try:
                ctx = call() if prof is None else prof.run(call)
            finally:
                self.owner.metrics.context_cpu.inc(time.thread_time() - cpu)
        return context_json(ctx)


def _key(headers: dict[bytes, bytes]) -> str | None:
    """The key as the endpoint's dependencies take it (``X-API-Key``, else ``Authorization:
    Bearer``), or None when there is none or it is not plain (the app then answers)."""
    raw = headers.get(b"x-api-key")
    if raw:
        key = raw.decode("latin-1")
    else:
        auth = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, key = auth.partition(" ")
        if scheme.lower() != "bearer":
            return None
    if not key or key != key.strip() or " " in key:
        return None
    return key


def _replay(chunks: list[bytes], last: Message | None, receive: Receive) -> Receive:
    """A ``receive`` that gives back what was already read, then reads on."""
    pending: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": last is not None}]
    if last is not None:
        pending.append(last)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay
