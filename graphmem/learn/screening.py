"""Screening every would-be learning for injected instructions (the curator's first check).

:func:`screen` combines two opinions on a learning's text:

- the rule-based classifier (:func:`graphmem.learn.injection.score_injection`), always; and
- the LLM's :meth:`~graphmem.llm.base.LLM.judge_injection` verdict, when the memory's LLM is not
  the offline one and ``Settings.injection_llm_judge`` is on (an LLM failure falls back to the
  classifier alone, with a logged warning).

The text that the learning came from (the owner's message, a trace output) is screened too: when
it reads like an injection, the learning is at least doubted, even if its own wording looks clean
(a model may have paraphrased the attack away from the patterns).

Decisions, with ``Settings.injection_doubt_threshold`` (0.5) and
``Settings.injection_refuse_threshold`` (0.85):

- ``refuse``: the highest score reaches the refuse threshold and the other opinion at least
  doubts it (the classifier alone decides offline). The learning is not stored; the event or
  trace it came from stays logged.
- ``doubt``: the highest score reaches the doubt threshold. The learning is stored with status
  ``candidate`` (never served by ``context``, never in a summary, never auto-onboarded), and a
  Transition records why.
- ``pass``: anything else.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graphmem.errors import LLMError
from graphmem.learn.injection import score_injection
from graphmem.llm.prompts import injection_request
from graphmem.llm.schemas import InjectionVerdict

if TYPE_CHECKING:
    from graphmem.config import Settings
    from graphmem.llm.base import LLM

log = logging.getLogger("graphmem.learn")

DECISIONS = ("pass", "doubt", "refuse")
"""What :func:`screen` can decide."""


@dataclass(frozen=True)
class Screening:
    """The outcome of screening one text: the decision, the scores and the reasons."""

    decision: str  # pass | doubt | refuse
    score: float
    classifier_score: float
    llm_score: float | None = None
    reasons: tuple[str, ...] = field(default_factory=tuple)
    families: tuple[str, ...] = field(default_factory=tuple)

    @property
    def summary(self) -> str:
        """One line for logs and Transition reasons."""
        who = f"classifier {self.classifier_score:.2f}" + (
            f", llm {self.llm_score:.2f}" if self.llm_score is not None else "")
        why = "; ".join(self.reasons[:3])
        return f"injection screen {self.decision} (score {self.score:.2f}: {who}){': ' + why if why else ''}"


def _llm_verdict(llm: LLM, text: str, channel: str) -> InjectionVerdict:
    judge = getattr(llm, "judge_injection", None)
    if callable(judge):
        verdict = judge(text, channel=channel)
        if isinstance(verdict, InjectionVerdict):
            return verdict
        return InjectionVerdict.model_validate(verdict)
    return llm.generate(injection_request(text, channel), InjectionVerdict)


def classify_text(text: str, settings: Settings, *, source_text: str | None = None) -> Screening:
    """The classifier's decision alone (no LLM): what :func:`screen` does offline."""
    return screen(text, settings, source_text=source_text, llm=None)


def screen(
    text: str,
    settings: Settings,
    *,
    source_text: str | None = None,
    llm: LLM | None = None,
    channel: str = "unknown",
) -> Screening:
    """Screen a would-be learning's ``text`` (see the module docstring for the decisions)."""
    doubt, refuse = settings.injection_doubt_threshold, settings.injection_refuse_threshold
    own = score_injection(text)
    score, reasons, families = own.score, list(own.reasons), list(own.families)
    if source_text and source_text.strip() and source_text.strip() != text.strip():
        src = score_injection(source_text)
        if src.score >= doubt and src.score > score:
            score = min(src.score, max(doubt, refuse - 0.001))  # the source alone never refuses
            reasons += [f"source: {r}" for r in src.reasons[:3]]
            families += [f for f in src.families if f not in families]
    classifier = round(score, 4)
    llm_score: float | None = None
    if llm is not None and settings.injection_llm_judge and getattr(llm, "name", "") != "offline":
        try:
            verdict = _llm_verdict(llm, text, channel)
            llm_score = verdict.score if verdict.is_injection else min(verdict.score, doubt / 2)
            reasons += [f"llm: {r}" for r in verdict.reasons[:3]]
            families += [f for f in verdict.families if f not in families]
        except LLMError as e:
            log.warning("graphmem: the LLM injection judge failed, the classifier decides alone: %s", e)
    scores = [classifier] + ([llm_score] if llm_score is not None else [])
    high, low = max(scores), min(scores)
    if high >= refuse and low >= doubt:
        decision = "refuse"
    elif high >= doubt:
        decision = "doubt"
    else:
        decision = "pass"
    return Screening(decision, round(high, 4), classifier, llm_score, tuple(reasons), tuple(families))


__all__ = ["DECISIONS", "Screening", "classify_text", "screen"]
