"""ObjectiveEvaluator (seed 001): objectives, their steps, and the self-evaluation at their end.

``start_objective`` creates a running Objective (and an ``objective_start`` event); events recorded
with ``objective_id=`` are its steps. ``end_objective`` then

1. reads the steps (oldest first), counts errors (``success=False``), retries (the same tool used
   again after one of its failures) and the duration;
2. bumps each Tool's success/error counters from the step results (``tool_result`` events; for
   objectives that only logged ``tool_call`` events, those with ``success`` set);
3. asks the LLM for an :class:`~graphmem.llm.schemas.ObjectiveEvaluation` and, when
   ``should_remember``, stores each insight as a learning (``source_type="self_evaluation"``,
   ``confidence = overall_score / 10``, FOR_OBJECTIVE and FOR_OBJECTIVE_TYPE, ABOUT_TOOL when
   ``applies_to`` names a tool) through the curator;
4. reflects on the episode (seed 004, :mod:`graphmem.learn.reflection`) unless ``reflect=False``:
   its rules become *candidate* learnings.

The LLM evaluation runs before anything is written: if it fails (LLMError), nothing is written,
the objective stays running, and the error propagates, so the caller can retry ``end_objective``.
A failing reflection is only logged (the evaluation's results are kept).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphmem.errors import InvalidInputError, LLMError
from graphmem.events import EventService
from graphmem.inputs import optional_text, require_id, require_text
from graphmem.learn.curator import Curator
from graphmem.learn.reflection import reflect
from graphmem.learnings import LearningService
from graphmem.llm.prompts import objective_eval_request
from graphmem.llm.schemas import ObjectiveEvaluation
from graphmem.models import Event, Learning, Objective
from graphmem.trust import own_objective

if TYPE_CHECKING:
    from graphmem.deps import Deps

log = logging.getLogger("graphmem.learn")

END_STATUSES = ("completed", "failed", "cancelled")
_STEP_KINDS = frozenset({"message", "tool_call", "tool_result", "feedback", "trace"})


@dataclass
class StepStats:
    """What the objective's steps show, before any LLM reads them."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    errors: int = 0
    retries: int = 0
    tools: list[str] = field(default_factory=list)
    successes_by_tool: dict[str, int] = field(default_factory=dict)
    errors_by_tool: dict[str, int] = field(default_factory=dict)


def step_stats(events: list[Event]) -> StepStats:
    """Errors, retries and per-tool results of an objective's events (oldest first)."""
    stats = StepStats()
    steps = [e for e in events if e.kind in _STEP_KINDS]
    stats.steps = [{"kind": e.kind, "tool_name": e.tool_name, "content": e.content, "success": e.success}
                   for e in steps]
    for e in steps:
        if e.tool_name and e.tool_name not in stats.tools:
            stats.tools.append(e.tool_name)
    has_results = any(e.kind == "tool_result" for e in steps)
    counted = [e for e in steps if e.tool_name and e.success is not None
               and (e.kind == "tool_result" or (not has_results and e.kind == "tool_call"))]
    failed_tools: set[str] = set()
    for e in steps:
        if e.tool_name and e.kind == "tool_call" and e.tool_name in failed_tools:
            stats.retries += 1
            failed_tools.discard(e.tool_name)
        if e.success is False:
            stats.errors += 1
            if e.tool_name:
                failed_tools.add(e.tool_name)
    for e in counted:
        assert e.tool_name is not None
        bucket = stats.successes_by_tool if e.success else stats.errors_by_tool
        bucket[e.tool_name] = bucket.get(e.tool_name, 0) + 1
    return stats


def start_objective(deps: Deps, goal: str, objective_type: str | None = None) -> Objective:
    """Create a running objective for this user and log its ``objective_start`` event."""
    text = require_text("goal", goal, max_chars=deps.settings.max_content_chars)
    kind = optional_text("objective_type", objective_type, max_chars=200)
    objective = Objective(user_id=deps.user, goal=text, objective_type=kind, started_at=deps.now())
    with deps.store.transaction():
        deps.store.insert_objective(objective)
        EventService(deps).record_event("objective_start", text, objective_id=objective.id, direction="outbound")
    return objective


def _own_objective(deps: Deps, objective_id: Any) -> Objective:
    if not isinstance(objective_id, str) or not objective_id.strip():
        raise InvalidInputError("objective_id must be the id returned by start_objective()")
    require_id("objective_id", objective_id)
    return own_objective(deps, objective_id)  # another user's: NotFoundError, like an unknown id


def end_objective(
    deps: Deps,
    objective_id: str,
    status: str = "completed",
    result: str | None = None,
    *,
    reflect_episode: bool = True,
) -> list[Learning]:
    """Close the objective, evaluate it, store what is worth remembering; see the module docstring.

    Returns the new or reinforced learnings (evaluation insights first, then reflection rules).
    Unknown id: NotFoundError; ended already: InvalidInputError; bad status: InvalidInputError.
    """
    objective = _own_objective(deps, objective_id)
    if not isinstance(status, str) or status not in END_STATUSES:
        raise InvalidInputError(f"status must be one of {', '.join(END_STATUSES)}, got {status!r}")
    if objective.status != "running":
        raise InvalidInputError(
            f"objective {objective_id!r} already ended ({objective.status}); start a new one with start_objective()"
        )
    result_text = optional_text("result", result, max_chars=deps.settings.max_content_chars)
    events = list(reversed(deps.store.recent_events(deps.user, limit=100_000, objective_id=objective_id)))
    stats = step_stats(events)
    now = deps.now()
    duration = max(0.0, (now - objective.started_at).total_seconds())
    evaluation = deps.llm.generate(
        objective_eval_request(objective.goal, status, result_text, duration, stats.steps, objective.objective_type),
        ObjectiveEvaluation,
    )
    ended = objective.model_copy(update={
        "status": status, "result": result_text, "ended_at": now, "score": float(evaluation.overall_score),
    })
    with deps.store.transaction():
        deps.store.save_objective(ended)
        for tool in stats.tools:
            ok, bad = stats.successes_by_tool.get(tool, 0), stats.errors_by_tool.get(tool, 0)
            if ok or bad:
                deps.store.bump_tool_counters(tool, successes=ok, errors=bad)
        summary = (f"{status}: {len(stats.steps)} steps, {stats.errors} errors, {stats.retries} retries, "
                   f"score {evaluation.overall_score:g}/10")
        EventService(deps).record_event(
            "objective_end", summary, objective_id=objective_id, direction="outbound",
            success=status == "completed",
            metadata={"status": status, "errors": stats.errors, "retries": stats.retries,
                      "duration_s": round(duration, 3), "score": evaluation.overall_score},
        )
    learned = _store_evaluation(deps, ended, evaluation, stats)
    if reflect_episode:
        try:
            record = reflect(
                deps, objective.goal, result_text or "", success={"completed": True, "failed": False}.get(status),
                tools_used=stats.tools, objective_id=objective_id,
            )
            learned += [x for x in record.learnings if all(x.id != y.id for y in learned)]
        except LLMError as e:
            log.error("graphmem: reflection on objective %s failed; evaluation kept: %s", objective_id, e)
    return learned


def _store_evaluation(
    deps: Deps, objective: Objective, evaluation: ObjectiveEvaluation, stats: StepStats
) -> list[Learning]:
    if not evaluation.should_remember:
        return []
    curator = Curator(deps)
    confidence = max(0.0, min(1.0, evaluation.overall_score / 10.0))
    # Weak self-evaluation rules are candidates (lifecycle): never served until re-derived or promoted.
    status = "active" if confidence >= deps.settings.self_eval_active_confidence else "candidate"
    out: list[Learning] = []
    for item in evaluation.learnings:
        target = item.applies_to.strip()
        tool = target if target in stats.tools else None
        try:
            learning, links = LearningService(deps).make_learning(
                item.insight, kind="rule", tool=tool, objective_type=objective.objective_type,
                recommendation=item.recommendation, sentiment=item.sentiment, source_type="self_evaluation",
                confidence=confidence, objective_id=objective.id, status=status,
            )
        except InvalidInputError as e:
            log.error("graphmem: skipped an unusable evaluation insight of objective %s: %s", objective.id, e)
            continue
        result = curator.curate(learning, links, channel="self_evaluation")
        if result.learning is not None and all(x.id != result.learning.id for x in out):
            out.append(result.learning)
    return out


__all__ = ["END_STATUSES", "StepStats", "end_objective", "start_objective", "step_stats"]
