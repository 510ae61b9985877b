"""Analysts' and operators' endpoints: Cypher, insights, stats, cycle, promotion, export, judges."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import TypeAdapter

from graphmem.errors import CypherError
from graphmem.export import ExportReport
from graphmem.insights import Insights
from graphmem.lifecycle import CycleReport
from graphmem.memory import Memory
from graphmem.promote import PromoteReport, SweepReport
from graphmem.server import schemas as s
from graphmem.server.auth import Principal
from graphmem.server.deps import ApiError, admin, json_out, owner_of, principal, read, reader, write, writer

router = APIRouter(prefix="/v1", tags=["analysts and operators"])
_ROW = TypeAdapter(dict[str, Any])


@router.post("/cypher")
def cypher(body: s.CypherRequest, request: Request, who: Principal = Depends(principal)) -> Response:
    """Run read-only Cypher: over the key's user's own view (``scope: "user"``, any key) or over
    the whole file (``scope: "all"``: admin keys, or analyst keys granted every user).

    Writes are refused (the query runs in a read-only transaction). The query is stopped after
    ``Settings.cypher_timeout_ms`` and returns at most ``Settings.cypher_max_rows`` rows
    (``truncated`` says when more matched). With ``Accept: application/x-ndjson`` the rows stream
    as JSON lines, and the last line is ``{"_truncated": true|false, "_rows": N}``.
    """
    if body.scope == "all" and not _sees_everyone(who):
        raise ApiError(403, "Forbidden", "Cypher over the whole file reads every user's data: it needs an admin key "
                       "or an analyst key granted all users (graphmem keys add --role analyst --grant '*'); "
                       "scope 'user' runs over your own view")
    owner = owner_of(request)
    settings = owner.settings
    try:
        mem = owner.memory(who.user)
        rows = read(request, lambda: mem.cypher(body.query, body.params or None, scope=body.scope,
                                                timeout_ms=settings.cypher_timeout_ms))
    except CypherError as e:
        if "writes to the graph" in str(e):
            raise CypherError("this query writes to the graph; the server runs Cypher read-only (MATCH ... RETURN): "
                              "change data through the /v1 endpoints instead") from e
        raise
    limit = settings.cypher_max_rows
    truncated = len(rows) > limit
    rows = rows[:limit]
    if "application/x-ndjson" in request.headers.get("accept", ""):
        def lines() -> Iterator[bytes]:
            for row in rows:
                yield _ROW.dump_json(row) + b"\n"
            yield _ROW.dump_json({"_truncated": truncated, "_rows": len(rows)}) + b"\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")
    return json_out({"rows": rows, "truncated": truncated, "row_limit": limit})


@router.get("/insights", response_model=Insights)
def insights(request: Request, timeline: int = 50, mem: Memory = Depends(reader)) -> Response:
    """Acceptance, pass/fallback/retry rates, per-learning standing, latest transitions (``?user=`` for analysts)."""
    return json_out(read(request, lambda: mem.insights(timeline=timeline)))


@router.get("/stats", response_model=dict[str, int])
def stats(
    request: Request, all_users: bool = False, mem: Memory = Depends(reader), who: Principal = Depends(principal)
) -> Response:
    """Node counts per table and edge counts per type: the user's own rows, or (``?all_users=true``,
    admin keys or analyst keys granted every user) the whole file."""
    if all_users and not _sees_everyone(who):
        raise ApiError(403, "Forbidden", "all_users counts every user's data: it needs an admin key or an analyst "
                       "key granted all users (graphmem keys add --role analyst --grant '*')")
    return json_out(read(request, lambda: mem.stats(all_users=all_users)))


def _sees_everyone(who: Principal) -> bool:
    return who.role == "admin" or (who.role == "analyst" and "*" in who.users)


@router.get("/training-pairs")
def training_pairs(
    request: Request, min_confidence: float = 0.0, feedback: str = "any", mem: Memory = Depends(reader)
) -> Response:
    """Your successful episodes as chat-format training records."""
    return json_out(read(request, lambda: mem.training_pairs(min_confidence=min_confidence, feedback=feedback)))


@router.post("/cycle", response_model=CycleReport)
def cycle(request: Request, mem: Memory = Depends(writer)) -> Response:
    """Run the lifecycle once for your learnings (windows, transitions, pruning, tiers, decay)."""
    report = write(request, mem.run_cycle)
    owner_of(request).mark_cycled()
    return json_out(report)


@router.post("/promote", response_model=PromoteReport)
def promote(body: s.PromoteRequest, request: Request, _: Principal = Depends(admin), mem: Memory = Depends(writer)) -> Response:
    """Write your pinned learnings into an instruction file on the server's machine (admin)."""
    return json_out(write(request, lambda: mem.promote(body.path, min_confidence=body.min_confidence)))


@router.post("/sweep", response_model=SweepReport)
def sweep(body: s.SweepRequest, request: Request, _: Principal = Depends(admin), mem: Memory = Depends(writer)) -> Response:
    """Remove promoted lines that no longer hold from files on the server's machine (admin)."""
    return json_out(write(request, lambda: mem.sweep(body.paths)))


@router.post("/export", response_model=ExportReport)
def export(
    body: s.ExportRequest, request: Request, _: Principal = Depends(admin), mem: Memory = Depends(writer)
) -> Response:
    """Export to a file on the server's machine (admin): ``jsonl`` training pairs or ``graphml``."""
    if body.format == "graphml":
        return json_out(read(request, lambda: mem.export_graphml(body.path)))
    if body.format != "jsonl":
        raise ApiError(422, "InvalidInputError", f"unknown format {body.format!r}; use jsonl or graphml")
    return json_out(read(request, lambda: mem.export_jsonl(
        body.path, min_confidence=body.min_confidence, feedback=body.feedback)))


@router.post("/judges")
def add_judge(body: s.JudgeRequest, request: Request, _: Principal = Depends(admin), mem: Memory = Depends(writer)) -> Response:
    """Configure a named LLM judge for a node, or every node (admin: judges are shared)."""
    return json_out(write(request, lambda: mem.add_judge(body.name, body.criteria, body.node)))
