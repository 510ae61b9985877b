"""Episode reflection (seed 004): what went well, improvements, rules, prompt suggestions.

:func:`reflect` asks the LLM for an :class:`~graphmem.llm.schemas.EpisodeReflection`, stores it as
a ``Reflection`` node linked REFLECTS_ON the episode (an Objective and/or an Event), and turns its
``rules`` into learnings with ``status=Settings.new_reflection_status`` ("candidate") and
``source_type="reflection"``, DERIVED_FROM the Reflection. Candidates are not served by
``Memory.context`` until the lifecycle (``Memory.run_cycle``) or a person promotes them: this is the
path onto the lifecycle's first stage. The LLM is called before anything is written, so an LLM
failure (LLMError) writes nothing and propagates.

Tags (ACE's reflector). With ``context_id`` (a context whose learnings the assistant was shown,
still without an explicit outcome), the reflector is shown those learnings, numbered, and says
which the answer followed and which helped or hurt; the episode is then recorded as that
context's outcome with the tags as per-learning credit: ``record_outcome(context_id,
success=success, used=[], helpful=[...], harmful=[...])`` (rating ``okay`` when ``success`` is
None). Learnings the reflector does not tag get nothing; with neither a success flag nor a tag no
outcome is recorded.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from graphmem.errors import InvalidInputError
from graphmem.inputs import check_string, names, optional_id, optional_text
from graphmem.learn.curator import Curator
from graphmem.learnings import LearningService
from graphmem.llm.prompts import reflection_request
from graphmem.llm.schemas import EpisodeReflection
from graphmem.models import Learning, new_id
from graphmem.outcomes import IMPLICIT, OutcomeReport, record_outcome
from graphmem.trust import own_application, own_event, own_objective

if TYPE_CHECKING:
    from graphmem.deps import Deps

REFLECTION_CONFIDENCE = 0.5
"""Confidence of a reflection and of the candidate rules it yields (seed 004: unproven, mid)."""


class ReflectionRecord(BaseModel):
    """A stored reflection and the candidate learnings its rules became."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    what_went_well: list[str] = Field(default_factory=list)
    improvements: list[str] = Field(default_factory=list)
    rules: list[str] = Field(default_factory=list)
    prompt_suggestions: list[str] = Field(default_factory=list)
    created_at: datetime
    learnings: list[Learning] = Field(default_factory=list)
    helped: list[str] = Field(default_factory=list)  # ids of the context's learnings tagged helpful
    hurt: list[str] = Field(default_factory=list)  # ... and harmful
    outcome: OutcomeReport | None = None  # the context's outcome the tags were recorded with


def reflect(
    deps: Deps,
    user_text: str,
    assistant_text: str,
    *,
    success: bool | None = None,
    tools_used: Iterable[str] = (),
    feedback: str | None = None,
    objective_id: str | None = None,
    event_id: str | None = None,
    objective_type: str | None = None,
    context_id: str | None = None,
) -> ReflectionRecord:
    """Reflect on one episode; store the Reflection and its rules as candidate learnings."""
    limit = deps.settings.max_content_chars
    for label, value in (("user_text", user_text), ("assistant_text", assistant_text)):
        check_string(label, value)
        if len(value) > limit:
            raise InvalidInputError(f"{label} is longer than Settings.max_content_chars={limit}")
    if not user_text.strip() and not assistant_text.strip():
        raise InvalidInputError("nothing to reflect on: pass the user's request and/or the assistant's answer")
    if success is not None and not isinstance(success, bool):
        raise InvalidInputError(f"success must be True, False or None, got {success!r}")
    feedback = optional_text("feedback", feedback, max_chars=limit)
    tools = names("tool", tools_used)
    objective_id, event_id = optional_id("objective_id", objective_id), optional_id("event_id", event_id)
    objective_type = optional_text("objective_type", objective_type, max_chars=200)
    about: list[tuple[str, str]] = []
    if objective_id is not None:
        objective = own_objective(deps, objective_id)
        objective_type = objective_type or objective.objective_type
        about.append(("Objective", objective_id))
    if event_id is not None:
        own_event(deps, event_id)
        about.append(("Event", event_id))
    shown_ids: list[str] = []
    shown_texts: list[str] = []
    context_id = optional_id("context_id", context_id)
    if context_id is not None:
        app = own_application(deps, context_id)
        if app.outcome is not None and IMPLICIT not in app.reasons:
            raise InvalidInputError(
                f"context {context_id} already has an outcome; reflect on it before record_outcome, "
                "or reflect without context_id"
            )
        by_id = {l.id: l for l in deps.store.get_learnings(app.learning_ids)}
        shown_ids = [i for i in app.learning_ids if i in by_id]
        shown_texts = [" ".join(x for x in (by_id[i].content, by_id[i].recommendation) if x) for i in shown_ids]
    answer = deps.llm.generate(
        reflection_request(user_text, assistant_text, success, tools, feedback, shown_texts), EpisodeReflection
    )
    helped = _tagged(answer.helped, shown_ids)
    hurt = _tagged(answer.hurt, shown_ids)
    helped, hurt = [i for i in helped if i not in hurt], [i for i in hurt if i not in helped]
    now = deps.now()
    reflection_id = new_id()
    with deps.store.transaction():
        deps.store.insert_reflection(
            reflection_id, deps.user, text=answer.reflection, what_went_well=answer.what_went_well,
            improvements=answer.improvements, rules=answer.rules, prompt_suggestions=answer.prompt_suggestions,
            confidence=REFLECTION_CONFIDENCE, ttl_days=deps.settings.ttl_days.get("hypothesis"),
            created_at=now, about=about,
        )
    curator = Curator(deps)
    learned: list[Learning] = []
    only_tool = tools[0] if len(tools) == 1 else None
    for rule in answer.rules:
        try:
            learning, links = LearningService(deps).make_learning(
                rule, kind="rule", tool=only_tool, objective_type=objective_type, source_type="reflection",
                confidence=REFLECTION_CONFIDENCE, status=deps.settings.new_reflection_status,
                objective_id=objective_id, source_event_id=event_id,
            )
        except InvalidInputError:
            continue  # an unusable rule from the model; the reflection itself keeps it
        result = curator.curate(learning, links, derived=[("Reflection", reflection_id)], source_text=feedback,
                                channel="reflection")
        if result.learning is not None and all(x.id != result.learning.id for x in learned):
            learned.append(result.learning)
    outcome = None
    if context_id is not None and (success is not None or helped or hurt):
        outcome = record_outcome(
            deps, context_id, success=success, rating=None if success is not None else "okay",
            reasons=["reflection"], used=[], helpful=helped, harmful=hurt,
        )
    return ReflectionRecord(
        id=reflection_id, text=answer.reflection, what_went_well=answer.what_went_well,
        improvements=answer.improvements, rules=answer.rules, prompt_suggestions=answer.prompt_suggestions,
        created_at=now, learnings=learned, helped=helped, hurt=hurt, outcome=outcome,
    )


def _tagged(numbers: list[int], shown_ids: list[str]) -> list[str]:
    """The ids of the shown learnings the reflector numbered (1-based; others ignored), once each."""
    out: list[str] = []
    for n in numbers:
        if isinstance(n, int) and 1 <= n <= len(shown_ids) and shown_ids[n - 1] not in out:
            out.append(shown_ids[n - 1])
    return out


__all__ = ["REFLECTION_CONFIDENCE", "ReflectionRecord", "reflect"]
