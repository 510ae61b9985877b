"""FeedbackExtractor (seed 001): owner messages → learnings.

:func:`observe_message` (``Memory.observe_message``) always logs the message as an inbound Event.
Only owner messages are analysed: with the last ``Settings.feedback_recent_actions`` outbound
actions (messages, tool calls, tool results) as context, the LLM answers a
:class:`~graphmem.llm.schemas.FeedbackAnalysis`; when it found feedback, one learning goes through
the :class:`~graphmem.learn.curator.Curator` (new, reinforced, superseding…).

Failure modes, all documented no-ops or errors:

- empty / whitespace-only / non-string message: InvalidInputError; longer than
  ``Settings.max_content_chars``: InvalidInputError (nothing logged);
- non-owner message: logged, never a learning, returns ``[]``;
- the LLM fails or its answer does not validate (LLMError / LLMValidationError): the event stays
  logged, the error is logged on the ``graphmem.learn`` logger, no learning is written, ``[]``;
- a learning that reads like an injected instruction (the owner's channel is screened too): refused
  when the screen is sure (``[]``), kept as a ``candidate`` when it doubts (returned, never served);
  the message event gets ``metadata["injection_score"]`` when the message itself scores at or above
  ``Settings.injection_doubt_threshold``.
- content-free praise or blame ("Great job, thanks!", "That was wrong."): no learning, ``[]``;
  it is an implicit outcome on the newest context still open (:func:`implicit_outcome`).

Facts the owner states ("My name is Alice and I live in Paris. I'm vegetarian.") are stored by
:func:`graphmem.learn.facts.store_facts` whether or not the message is feedback, with their
validity interval; a new value supersedes the old one ("I moved to Berlin").

The owner restating a learning that is out of use (superseded by a later correction, archived or
retired) makes it a standing rule again (:func:`revive_restated`): the curator merges the repeat
into the old learning, which is then set active again, and the learning that had superseded it,
if still live, is superseded in turn; a record that says it is clearly harmful (it was retired for
it, or would be dropped at once) starts again from zero: the owner overrules outcomes that may
have been misreported. Without this, "No, emails to Dana must use bullet points."
after a wrong correction had replaced that rule only counted a validation on an archived learning,
and the wrong rule stayed the one served.

Scope: the learning is about the tool the analysis names (the last action only when the message
refers to it or names no other kind of work), else the caller's ``tool`` hint, else no tool.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from graphmem.errors import InvalidInputError, LLMError
from graphmem.events import EventService
from graphmem.inputs import check_string, names, optional_text, require_bool
from graphmem.learn.corrected import corrected_learnings
from graphmem.learn.curator import Curator
from graphmem.learn.facts import store_facts
from graphmem.learn.injection import score_injection
from graphmem.learnings import LearningService
from graphmem.llm.prompts import feedback_request
from graphmem.llm.schemas import FeedbackAnalysis
from graphmem.models import Event, Learning
from graphmem.outcomes import clearly_harmful_record, record_outcome
from graphmem.trust import own_objective

if TYPE_CHECKING:
    from graphmem.deps import Deps

log = logging.getLogger("graphmem.learn")

ACTION_KINDS = ("message", "tool_call", "tool_result")
"""The outbound event kinds shown to the extractor as recent actions."""


def _check_message(deps: Deps, content: Any) -> str:
    if not isinstance(content, str):
        raise InvalidInputError(f"content must be the message text (a string), got {type(content).__name__}")
    check_string("content", content)
    if not content.strip():
        raise InvalidInputError("the message is empty; pass the text the user wrote")
    limit = deps.settings.max_content_chars
    if len(content) > limit:
        raise InvalidInputError(
            f"the message has {len(content)} characters, more than Settings.max_content_chars={limit}; "
            "split it or raise the limit"
        )
    return content


def recent_actions(deps: Deps) -> list[Event]:
    """The user's last outbound actions, newest first."""
    return deps.store.recent_events(
        deps.user, limit=deps.settings.feedback_recent_actions, direction="outbound", kinds=list(ACTION_KINDS)
    )


def feedback_learning_text(analysis: FeedbackAnalysis) -> str | None:
    """The learning's wording: the ``learning`` field, else one built from the other fields."""
    if analysis.learning:
        return analysis.learning
    if analysis.what_to_do_instead:
        return analysis.what_to_do_instead
    if analysis.what_was_wrong:
        return f"Avoid this, which the owner flagged: {analysis.what_was_wrong}"
    return None


def implicit_outcome(deps: Deps, analysis: FeedbackAnalysis, event: Event) -> str | None:
    """Content-free praise or blame ("Great job!", "That was wrong.") as an implicit outcome.

    The newest context handed out within ``Settings.advice_ttl_s`` before the message and still
    without an outcome is credited (positive) or blamed (negative), tagged ``implicit`` and
    ``owner_feedback``; no learning is written. Returns the context id, or None when there was none.
    """
    if analysis.sentiment == "neutral":
        return None
    since = event.created_at - timedelta(seconds=deps.settings.advice_ttl_s)
    app_id = deps.store.latest_pending_application(deps.user, since, event.created_at)
    if app_id is None:
        return None
    record_outcome(deps, app_id, success=analysis.sentiment == "positive", reasons=["owner_feedback"],
                   implicit=True)
    return app_id


def observe_message(
    deps: Deps,
    content: str,
    *,
    tool: str | None = None,
    is_owner: bool = True,
    role: str = "user",
    session_id: str | None = None,
    objective_id: str | None = None,
    entities: Iterable[str] = (),
) -> list[Learning]:
    """Log an inbound message; for owner messages, extract feedback into a learning.

    Returns the new or reinforced learnings (``[]`` for non-owners, messages without feedback,
    LLM failures and refused injections). See the module docstring for the failure modes.
    """
    text = _check_message(deps, content)
    is_owner = require_bool("is_owner", is_owner)
    tool_hint = optional_text("tool", tool, max_chars=200)
    extra_entities = names("entity", entities)
    actions = recent_actions(deps) if is_owner else []
    metadata: dict[str, Any] = {"tool_hint": tool_hint} if tool_hint else {}
    flagged = score_injection(text)
    if flagged.score >= deps.settings.injection_doubt_threshold:
        metadata.update(injection_score=flagged.score, injection_families=list(flagged.families))
        log.warning("graphmem: an inbound %s message reads like an injected instruction (score %.2f): %.120r",
                    "owner" if is_owner else "non-owner", flagged.score, text)
    event = EventService(deps).record_event(
        "message", text, role=role, direction="inbound", is_owner=is_owner, session_id=session_id,
        objective_id=objective_id, entities=extra_entities, metadata=metadata or None,
    )
    if not is_owner:
        return []
    action_dicts = [
        {"kind": a.kind, "tool_name": a.tool_name, "content": a.content, "created_at": a.created_at.isoformat()}
        for a in reversed(actions)
    ]
    try:
        analysis = deps.llm.generate(feedback_request(text, action_dicts, tool_hint), FeedbackAnalysis)
    except LLMError as e:
        log.error("graphmem: feedback extraction failed for event %s, no learning written: %s", event.id, e)
        return []
    facts = store_facts(deps, analysis.facts, source_event_id=event.id, at=event.created_at, trusted_text=text,
                        objective_id=objective_id) if analysis.facts else []
    if not analysis.has_feedback:
        return facts
    wording = feedback_learning_text(analysis)
    if not wording:
        implicit_outcome(deps, analysis, event)
        return facts
    # Scoped: the tool the analysis says the feedback is about (the last action only when the
    # message refers to it), else the caller's hint, else none (a general preference).
    about_tool = analysis.about_tool or tool_hint
    objective_type = analysis.about_objective_type
    if objective_id is not None and objective_type is None:
        objective_type = own_objective(deps, objective_id).objective_type
    try:
        learning, links = LearningService(deps).make_learning(
            wording,
            kind="preference" if analysis.feedback_type == "preference" else "rule",
            tool=about_tool,
            entities=list(extra_entities) + [e for e in analysis.entities if e not in extra_entities],
            topics=analysis.topics,
            objective_type=objective_type,
            recommendation=analysis.what_to_do_instead,
            applies_when=analysis.what_was_wrong,
            sentiment=analysis.sentiment,
            source_type="user_feedback",
            confidence=analysis.confidence,
            source_event_id=event.id,
            objective_id=objective_id,
        )
    except InvalidInputError as e:  # e.g. an over-long or malformed field from the model
        log.error("graphmem: the feedback analysis of event %s is unusable, no learning written: %s", event.id, e)
        return facts
    result = Curator(deps).curate(learning, links, source_text=text, channel="owner message")
    if result.action == "merged" and result.learning is not None and result.screening is None:
        result.learning = revive_restated(deps, result.learning)
    if result.learning is not None and result.screening is None:
        corrected_learnings(deps, result.learning, event.created_at)  # README "Counters that pay"
    return facts + ([result.learning] if result.learning is not None else [])


def revive_restated(deps: Deps, learning: Learning) -> Learning:
    """``learning`` (which the owner just restated) back in use when it was out of it: status and
    tier active, no longer superseded, and the learning that had superseded it (if still live)
    superseded by it. Returns the learning as stored; unchanged when it was in use."""
    if learning.status != "disabled" and learning.tier != "archive" and not learning.superseded_by:
        return learning
    service = LearningService(deps)
    replaced_by = learning.superseded_by
    changes: dict[str, Any] = {"status": "active", "tier": "active", "superseded_by": None}
    reason = "the owner stated it again: back in use"
    harmful = clearly_harmful_record(learning, deps.settings)
    if harmful is not None:  # the owner overrules a record that would keep it dropped: a fresh start
        changes.update(helpful=0, harmful=0)
        reason += f"; its record reset (was {harmful})"
    revived = service.apply_changes(learning, changes, reason=reason)
    if replaced_by:
        newer = deps.store.get_learning(replaced_by)
        if newer.status != "disabled" and newer.tier != "archive" and not newer.superseded_by:
            service.supersede(revived.id, newer.id, reason="the owner restated the rule it had replaced")
    return deps.store.get_learning(revived.id)


__all__ = ["ACTION_KINDS", "feedback_learning_text", "implicit_outcome", "observe_message", "recent_actions",
           "revive_restated"]
