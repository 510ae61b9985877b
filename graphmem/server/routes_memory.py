"""Endpoints for learnings, events, messages and objectives (``/v1/...``): thin over Memory."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from graphmem.memory import Memory
from graphmem.models import Event, Learning, Objective
from graphmem.server import schemas as s
from graphmem.server.deps import json_out, read, reader, write, writer

router = APIRouter(prefix="/v1", tags=["memory"])


# --- learnings ------------------------------------------------------------------------------------
@router.post("/learnings", response_model=Learning, status_code=200)
def add_learning(body: s.AddLearning, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Store a learning (an exact duplicate of one of yours is merged into it)."""
    args = body.model_dump()
    return json_out(write(request, lambda: mem.add_learning(args.pop("content"), **args)))


@router.post("/learnings/batch", response_model=list[Learning])
def add_learnings(body: s.AddLearnings, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Store many learnings in one transaction (nothing is written if any item is invalid)."""
    items = [i.model_dump() for i in body.items]
    return json_out(write(request, lambda: mem.add_learnings(items)))


@router.get("/learnings", response_model=list[Learning])
def list_learnings(
    request: Request,
    status: str | None = None,
    tier: str | None = None,
    tool: str | None = None,
    topic: str | None = None,
    entity: str | None = None,
    kind: str | None = None,
    limit: int | None = None,
    mem: Memory = Depends(reader),
) -> Response:
    """Your learnings (and shared ones) matching every filter, newest first."""
    return json_out(read(request, lambda: mem.learnings(
        status=status, tier=tier, tool=tool, topic=topic, entity=entity, kind=kind, limit=limit)))


@router.get("/learnings/{learning_id}", response_model=Learning)
def get_learning(learning_id: str, request: Request, mem: Memory = Depends(reader)) -> Response:
    """One of your learnings by id (another user's id: 404)."""
    return json_out(read(request, lambda: mem.get_learning(learning_id)))


@router.patch("/learnings/{learning_id}", response_model=Learning)
def update_learning(learning_id: str, body: s.UpdateLearning, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Change fields of one of your learnings (status/tier changes are logged)."""
    return json_out(write(request, lambda: mem.update_learning(learning_id, **body.changes)))


@router.post("/learnings/{learning_id}/retire", response_model=Learning)
def retire_learning(learning_id: str, body: s.Retire, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Take one of your learnings out of use for good (disabled, archived; never deleted)."""
    return json_out(write(request, lambda: mem.retire_learning(learning_id, reason=body.reason)))


@router.post("/learnings/{learning_id}/supersede", response_model=Learning)
def supersede(learning_id: str, body: s.Supersede, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Mark ``old_id`` as replaced by this learning; returns the archived older one."""
    return json_out(write(request, lambda: mem.supersede(learning_id, body.old_id, reason=body.reason)))


# --- events, messages, objectives --------------------------------------------------------------
@router.post("/events", response_model=Event)
def record_event(body: s.RecordEvent, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Log something that happened (a message, a tool call or result...)."""
    args = body.model_dump()
    return json_out(write(request, lambda: mem.record_event(args.pop("kind"), args.pop("content"), **args)))


@router.post("/events/batch", response_model=list[Event])
def record_events(body: s.RecordEvents, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Log many events in one transaction (nothing is written if any item is invalid)."""
    items = [i.model_dump() for i in body.items]
    return json_out(write(request, lambda: mem.record_events(items)))


@router.post("/messages", response_model=list[Learning])
def observe_message(body: s.ObserveMessage, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Log an inbound message; the owner's feedback becomes a learning (returned)."""
    args = body.model_dump()
    return json_out(write(request, lambda: mem.observe_message(args.pop("content"), **args)))


@router.post("/objectives", response_model=Objective)
def start_objective(body: s.StartObjective, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Start a long-running goal."""
    return json_out(write(request, lambda: mem.start_objective(body.goal, body.objective_type)))


@router.post("/objectives/{objective_id}/end", response_model=list[Learning])
def end_objective(objective_id: str, body: s.EndObjective, request: Request, mem: Memory = Depends(writer)) -> Response:
    """End one of your objectives; returns what was learned from it."""
    return json_out(write(request, lambda: mem.end_objective(objective_id, body.status, body.result,
                                                              reflect=body.reflect)))
