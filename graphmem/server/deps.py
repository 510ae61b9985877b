"""Request plumbing shared by the routes: who is asking, which Memory, JSON out, errors.

The dependencies are ``async def``: they only hash a key and look up dicts, never block, and
FastAPI runs a plain ``def`` dependency on the thread pool, one hop (and one wait for the GIL)
per dependency per request. The endpoints that call Memory stay ``def`` (the pool runs them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Depends, Request
from fastapi.responses import Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import TypeAdapter

from graphmem.errors import GraphmemError
from graphmem.memory import Memory
from graphmem.server import profiling
from graphmem.server.auth import Principal
from graphmem.server.core import Owner

T = TypeVar("T")

_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <key> (made by `graphmem keys add`)")
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="The key, as an alternative header")


class ApiError(GraphmemError):
    """An error the server answers with a given HTTP status and error type."""

    def __init__(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.headers = headers or {}


def owner_of(request: Request) -> Owner:
    """The Owner this app serves."""
    owner: Owner = request.app.state.owner
    return owner


async def principal(
    request: Request,
    bearer: HTTPAuthorizationCredentials | None = Depends(_bearer),
    api_key: str | None = Depends(_api_key),
) -> Principal:
    """The key's principal; 401 when the key is missing or unknown."""
    return _principal(request, api_key or (bearer.credentials if bearer is not None else None))


def _principal(request: Request, key: str | None) -> Principal:
    """The key's principal; 401 when the key is missing or unknown."""
    if not key:
        raise ApiError(
            401, "Unauthorized",
            "no API key: send 'Authorization: Bearer <key>' (create a key with `graphmem keys add`)",
            {"WWW-Authenticate": "Bearer"},
        )
    who = owner_of(request).keys.check(key)
    if who is None:
        raise ApiError(401, "Unauthorized", "unknown API key: check the key, or create one with `graphmem keys add`",
                       {"WWW-Authenticate": "Bearer"})
    request.state.principal = who
    return who


async def metrics_reader(
    request: Request,
    bearer: HTTPAuthorizationCredentials | None = Depends(_bearer),
    api_key: str | None = Depends(_api_key),
) -> None:
    """/metrics: any valid key, unless ``Settings.server_metrics_public`` opens it to all."""
    if not owner_of(request).settings.server_metrics_public:
        _principal(request, api_key or (bearer.credentials if bearer is not None else None))


async def writer(request: Request, who: Principal = Depends(principal)) -> Memory:
    """The Memory of the key's user, for an endpoint that writes (agent or admin keys)."""
    if not who.writes:
        raise ApiError(403, "Forbidden", f"a {who.role} key is read-only; this endpoint writes: use an agent key")
    return owner_of(request).memory(who.user)


async def reader(request: Request, user: str | None = None, who: Principal = Depends(principal)) -> Memory:
    """The Memory to read: the key's user, or ``?user=`` for analysts granted that user."""
    target = user or who.user
    if not who.can_read(target):
        raise ApiError(403, "Forbidden", f"this key may not read user {target!r}; ask an admin to grant it "
                       "(graphmem keys add --role analyst --grant USER)")
    return owner_of(request).memory(target)


async def admin(who: Principal = Depends(principal)) -> Principal:
    """Admin keys only."""
    if who.role != "admin":
        raise ApiError(403, "Forbidden", f"this endpoint needs an admin key; this key is {who.role}")
    return who


def write(request: Request, fn: Callable[[], T]) -> T:
    """Run a write through the owner's bounded write gate (503 + Retry-After when it is full)."""
    with owner_of(request).writing():
        prof = profiling.ACTIVE
        return fn() if prof is None else prof.run(fn)


def read(request: Request, fn: Callable[[], T]) -> T:
    """Run a read (concurrently with other reads)."""
    with owner_of(request).reading():
        prof = profiling.ACTIVE
        return fn() if prof is None else prof.run(fn)


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def json_out(value: Any, adapter_type: Any = None) -> Response:
    """``value`` (models, lists of models, dataclasses, dicts) as a JSON response, validated once."""
    key = adapter_type or Any
    adapter = _ADAPTERS.get(key)
    if adapter is None:
        adapter = _ADAPTERS[key] = TypeAdapter(key)
    return Response(adapter.dump_json(value), media_type="application/json")
