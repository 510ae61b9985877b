"""Observability of the loop (seed 000's insights panel): figures, and a self-contained HTML page.

:func:`compute` reads the user's Applications (contexts handed out, with their outcomes), learnings
and transition log and returns an :class:`Insights` model:

- overview: acceptance (accepted / outcomes with a verdict), pass rate (success / outcomes with
  success known), fallback rate and retry rate (reason tags on outcomes), rating coverage
  (applications with a rating / all applications);
- per learning: status, tier, score, confidence, canary allocation, helpful/harmful, uses;
- counts per status and per tier, active canaries, the latest transitions;
- outcomes per day, for the chart.

:func:`render_html` turns it into one HTML file (a Jinja2 template, a matplotlib chart inlined as SVG).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from graphmem.models import STATUSES, TIERS

if TYPE_CHECKING:
    from graphmem.memory import Memory

_POSITIVE = frozenset({"success", "succeeded", "accepted", "accept", "pass", "passed", "helpful", "true", "good", "positive", "ok"})
_NEGATIVE = frozenset({"failure", "failed", "fail", "rejected", "reject", "harmful", "false", "bad", "negative", "error"})
FALLBACK_TAGS = frozenset({"fallback"})
RETRY_TAGS = frozenset({"retry", "regenerate", "try again", "try_again", "retried"})


def outcome_success(outcome: str | None, rating: str | None = None) -> bool | None:
    """Whether an Application's recorded outcome was a success (None: unknown or not recorded)."""
    if outcome is not None:
        word = str(outcome).strip().lower()
        if word in _POSITIVE:
            return True
        if word in _NEGATIVE:
            return False
    if rating == "good":
        return True
    if rating == "bad":
        return False
    return None


def accepted(outcome: str | None, rating: str | None) -> bool | None:
    """Seed 000's acceptance, as graphmem.outcomes judges it: a rating decides when given
    (good accepts, bad rejects, okay is neutral: None), else the outcome's success."""
    if rating is not None:
        return {"good": True, "bad": False}.get(rating)
    return outcome_success(outcome)


class Overview(BaseModel):
    """Seed 000's overview figures; a rate is None when its denominator is 0.

    acceptance = accepted / with_outcome (neutral "okay" ratings count as not accepted);
    pass_rate = successes / (successes + failures); fallback_rate and retry_rate = outcomes
    tagged fallback / retry|regenerate|try again over with_outcome; rating_coverage = rated /
    applications.
    """

    applications: int = 0
    with_outcome: int = 0
    rated: int = 0
    accepted: int = 0
    successes: int = 0
    failures: int = 0
    fallbacks: int = 0
    retries: int = 0
    acceptance: float | None = None
    pass_rate: float | None = None
    fallback_rate: float | None = None
    retry_rate: float | None = None
    rating_coverage: float | None = None


class LearningInsight(BaseModel):
    """One learning's standing."""

    id: str
    content: str
    kind: str
    status: str
    tier: str
    score: float
    confidence: float
    canary_allocation: float
    helpful: int
    harmful: int
    validations: int
    contradictions: int
    times_applied: int
    version: int


class TimelineEntry(BaseModel):
    """One logged transition (status, tier, promotion...)."""

    created_at: datetime
    learning_id: str
    content: str
    field: str
    old: str
    new: str
    reason: str
    version: int


class DayOutcomes(BaseModel):
    """Outcomes of the applications created on one day (UTC)."""

    day: str
    applications: int = 0
    successes: int = 0
    failures: int = 0
    pending: int = 0


class Insights(BaseModel):
    """Everything ``graphmem insights`` shows."""

    user: str
    generated_at: datetime
    overview: Overview
    status_counts: dict[str, int] = Field(default_factory=dict)
    tier_counts: dict[str, int] = Field(default_factory=dict)
    active_canaries: int = 0
    learnings: list[LearningInsight] = Field(default_factory=list)
    timeline: list[TimelineEntry] = Field(default_factory=list)
    outcomes_by_day: list[DayOutcomes] = Field(default_factory=list)


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def _tags(reasons: Iterable[str]) -> set[str]:
    return {str(r).strip().lower() for r in reasons}


def overview(rows: Sequence[dict[str, Any]]) -> Overview:
    """The overview figures from ``AnalyticsStore.application_outcomes`` rows."""
    o = Overview(applications=len(rows))
    for r in rows:
        success = outcome_success(r.get("outcome"), r.get("rating"))
        accept = accepted(r.get("outcome"), r.get("rating"))
        tags = _tags(r.get("reasons") or [])
        # the context's own creation notes live in ``reasons`` until an outcome replaces them
        has_outcome = any(r.get(k) is not None for k in ("outcome", "outcome_at", "rating"))
        o.with_outcome += has_outcome
        o.rated += r.get("rating") is not None
        o.accepted += accept is True
        o.successes += success is True
        o.failures += success is False
        if has_outcome:
            o.fallbacks += bool(tags & FALLBACK_TAGS)
            o.retries += bool(tags & RETRY_TAGS)
    o.acceptance = _rate(o.accepted, o.with_outcome)
    o.pass_rate = _rate(o.successes, o.successes + o.failures)
    o.fallback_rate = _rate(o.fallbacks, o.with_outcome)
    o.retry_rate = _rate(o.retries, o.with_outcome)
    o.rating_coverage = _rate(o.rated, o.applications)
    return o


def by_day(rows: Sequence[dict[str, Any]]) -> list[DayOutcomes]:
    """Applications per creation day with their successes, failures and pending outcomes."""
    days: dict[str, DayOutcomes] = {}
    for r in rows:
        created = r.get("created_at")
        key = created.date().isoformat() if isinstance(created, datetime) else "unknown"
        d = days.setdefault(key, DayOutcomes(day=key))
        d.applications += 1
        success = outcome_success(r.get("outcome"), r.get("rating"))
        if success is True:
            d.successes += 1
        elif success is False:
            d.failures += 1
        else:
            d.pending += 1
    return [days[k] for k in sorted(days)]


def compute(mem: Memory, *, timeline: int = 50) -> Insights:
    """The insights of ``mem``'s user (see the module docstring)."""
    rows = mem.store.application_outcomes(mem.user)
    mine = [l for l in mem.learnings() if l.user_id == mem.user]
    status_counts: Counter[str] = Counter({s: 0 for s in STATUSES})
    tier_counts: Counter[str] = Counter({t: 0 for t in TIERS})
    for l in mine:
        status_counts[l.status] += 1
        tier_counts[l.tier] += 1
    learnings = [
        LearningInsight(
            id=l.id, content=l.content, kind=l.kind, status=l.status, tier=l.tier, score=l.score,
            confidence=l.confidence, canary_allocation=l.canary_allocation, helpful=l.helpful,
            harmful=l.harmful, validations=l.validations, contradictions=l.contradictions,
            times_applied=l.times_applied, version=l.version,
        )
        for l in sorted(mine, key=lambda l: (STATUSES.index(l.status), -l.score, l.id))
    ]
    entries = [TimelineEntry.model_validate(r) for r in mem.store.recent_transitions(mem.user, limit=timeline)]
    return Insights(
        user=mem.user,
        generated_at=mem.now(),
        overview=overview(rows),
        status_counts=dict(status_counts),
        tier_counts=dict(tier_counts),
        active_canaries=sum(1 for l in mine if l.status == "canary" and l.tier != "archive"),
        learnings=learnings,
        timeline=entries,
        outcomes_by_day=by_day(rows),
    )


# --- HTML --------------------------------------------------------------------------------
def render_html(ins: Insights, *, domains: Any = None) -> str:
    """A self-contained HTML page of the insights (Jinja2 template, matplotlib chart as inline
    SVG, no external assets): see :mod:`graphmem.insights_html`. ``domains``: a DomainReport
    (``Memory.domains()``) adds the domains section."""
    from graphmem.insights_html import render_html as render

    return render(ins, domains=domains)
