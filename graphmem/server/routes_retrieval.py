"""Context, search, outcomes and summaries (``/v1/...``): thin over Memory."""

from __future__ import annotations

import time

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import TypeAdapter

from graphmem.memory import Memory
from graphmem.models import Summary
from graphmem.outcomes import OutcomeReport
from graphmem.retrieve import AssembledContext
from graphmem.retrieve.search import Hit
from graphmem.server import schemas as s
from graphmem.server.auth import Principal
from graphmem.server.deps import ApiError, json_out, owner_of, principal, read, reader, write, writer

router = APIRouter(prefix="/v1", tags=["retrieval"])
_CONTEXT = TypeAdapter(AssembledContext)
_TEXT = TypeAdapter(str)


def context_json(ctx: AssembledContext) -> bytes:
    """The context as the JSON /v1/context answers: its fields, then ``prompt``; serialised once,
    straight from the dataclasses (no intermediate dicts)."""
    body = _CONTEXT.dump_json(ctx)
    return body[:-1] + b',"prompt":' + _TEXT.dump_json(ctx.to_prompt()) + b"}"


@router.post("/context", response_model=AssembledContext)
def context(body: s.ContextRequest, request: Request, mem: Memory = Depends(writer)) -> Response:
    """What an agent should see before acting: preferences and ranked learnings (``prompt`` is the
    text to put in its prompt). Recorded as an Application: pass ``id`` to /v1/outcomes."""
    cpu = time.thread_time()
    try:
        ctx = read(request, lambda: mem.context(
            body.query, tool=body.tool, entities=body.entities, topics=body.topics,
            objective_type=body.objective_type, limit=body.limit, token_budget=body.token_budget,
        ))
    finally:
        owner_of(request).metrics.context_cpu.inc(time.thread_time() - cpu)
    return Response(context_json(ctx), media_type="application/json")


@router.post("/search", response_model=list[Hit])
def search(body: s.SearchRequest, request: Request, mem: Memory = Depends(reader)) -> Response:
    """Search your learnings, events or both (hybrid: vector, full-text, graph)."""
    return json_out(read(request, lambda: mem.search(
        body.query, k=body.k, over=body.over, tool=body.tool, entities=body.entities, topics=body.topics)))


@router.post("/outcomes", response_model=OutcomeReport)
def record_outcome(body: s.OutcomeRequest, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Credit or blame the learnings one of your contexts showed (another user's context: 404)."""
    return json_out(write(request, lambda: mem.record_outcome(
        body.context_id, success=body.success, rating=body.rating, reasons=body.reasons, used=body.used,
        helpful=body.helpful, harmful=body.harmful)))


@router.get("/summaries", response_model=list[Summary])
def summaries(request: Request, mem: Memory = Depends(reader)) -> Response:
    """All your summaries, by key."""
    return json_out(read(request, mem.summaries))


@router.get("/summaries/{key:path}", response_model=Summary)
def summary(key: str, request: Request, mem: Memory = Depends(reader)) -> Response:
    """One of your summaries by key (``user_preferences``, ``learning:tool:<name>``...)."""
    return json_out(read(request, lambda: mem.summary(key)))


@router.post("/summaries/refresh", response_model=list[Summary])
def refresh(
    body: s.RefreshRequest, request: Request, mem: Memory = Depends(writer), who: Principal = Depends(principal)
) -> Response:
    """Refresh your due summaries now (``force``: all of them); ``all_users`` needs an admin key."""
    owner = owner_of(request)
    if body.all_users:
        if who.role != "admin":
            raise ApiError(403, "Forbidden", "all_users needs an admin key; leave it false to refresh your own")
        done = owner.refresh_all(force=body.force)
    else:
        done = write(request, lambda: mem.refresh_summaries(force=body.force))
        owner.mark_refreshed(len(done))
    return json_out(done)

