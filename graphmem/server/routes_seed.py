"""The playbook-style endpoints ``/api/v1/trace``, ``/api/v1/train`` and ``/api/v1/context``.

Their request and response shapes follow the judge/reflector design graphmem implements
(``Memory.trace``, ``Memory.train``): a trace returns ``transaction_id``, ``pattern_id``,
``is_correct`` and ``generated_bullets``; a context returns ``context.full`` (every bullet),
``context.online`` (bullets learned online only), formatted ``"NODE Rules:\\n- bullet"``, and
``bullet_ids``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from graphmem.learn.judges import TraceResult, TrainReport
from graphmem.memory import Memory
from graphmem.models import Learning
from graphmem.server import schemas as s
from graphmem.server.deps import json_out, read, write, writer

router = APIRouter(prefix="/api/v1", tags=["judges and reflector"])


def _bullet(l: Learning) -> dict[str, Any]:
    return {"id": l.id, "content": l.content, "recommendation": l.recommendation, "applies_when": l.applies_when,
            "source": l.source_type, "node": l.tool, "helpful_count": l.helpful, "harmful_count": l.harmful}


@router.post("/trace")
def trace(body: s.TraceRequest, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Judge one production output with the node's judges; failures become bullets (online mode)."""
    result = write(request, lambda: mem.trace(
        body.input_text, body.output, node=body.node, ground_truth=body.ground_truth, reasoning=body.reasoning,
        mode=body.mode,
    ))
    return json_out({
        "transaction_id": result.trace_id,
        "pattern_id": None,
        "is_correct": result.passed,
        "mode": result.mode,
        "verdicts": [v.model_dump() for v in result.verdicts],
        "generated_bullets": [_bullet(l) for l in result.learnings],
    })


@router.post("/train")
def train(body: s.TrainRequest, request: Request, mem: Memory = Depends(writer)) -> Response:
    """Offline mode: trace every historical example; failures become ``offline`` bullets."""
    examples = [e.model_dump(exclude_none=True) for e in body.dataset]
    report = write(request, lambda: mem.train(examples, node=body.node))
    return json_out({
        "examples": report.examples, "passed": report.passed, "failed": report.failed, "errors": report.errors,
        "transaction_ids": report.trace_ids, "generated_bullets": [_bullet(l) for l in report.learnings],
    })


@router.post("/context")
def seed_context(body: s.SeedContextRequest, request: Request, mem: Memory = Depends(writer)) -> Response:
    """The bullets to put in a node's prompt: ``context.full`` (all) and ``context.online``."""
    ctx = read(request, lambda: mem.context(body.input_text, tool=body.node, limit=body.max_bullets_per_evaluator))
    heading = f"{body.node.upper()} Rules:"
    bullets = [item.learning for item in ctx.learnings]
    online = [l for l in bullets if l.source_type == "online"]

    def fmt(items: list[Learning]) -> str:
        return "\n".join([heading, *[f"- {l.content}" for l in items]]) if items else ""

    return json_out({
        "context": {"full": fmt(bullets), "online": fmt(online)},
        "bullet_ids": [l.id for l in bullets],
        "context_id": ctx.id,
    })


v1 = APIRouter(prefix="/v1", tags=["judges and reflector"])


@v1.post("/trace", response_model=TraceResult)
def trace_v1(body: s.TraceRequest, request: Request, mem: Memory = Depends(writer)) -> Response:
    """``Memory.trace``: judge one output, store the trace, learn from failures (TraceResult)."""
    return json_out(write(request, lambda: mem.trace(
        body.input_text, body.output, node=body.node, ground_truth=body.ground_truth, reasoning=body.reasoning,
        mode=body.mode)))


@v1.post("/train", response_model=TrainReport)
def train_v1(body: s.TrainRequest, request: Request, mem: Memory = Depends(writer)) -> Response:
    """``Memory.train``: offline mode over a dataset (TrainReport)."""
    examples = [e.model_dump(exclude_none=True) for e in body.dataset]
    return json_out(write(request, lambda: mem.train(examples, node=body.node)))
