"""Observability of the loop (seed 000's insights panel): figures, and a self-contained HTML page.

:func:`compute` reads the user's Applications (contexts handed out, with their outcomes), learnings
and transition log and returns an :class:`Insights` model:

- overview: acceptance (accepted / outcomes with a verdict), pass rate (success / outcomes with
  success known), fallback rate and retry rate (reason tags on outcomes), rating coverage
  (applications with a rating / all applications);
- per learning: status, tier, score, confidence, canary allocation, helpful/harmful, uses;
- counts per status and per tier, active canaries, the latest transitions;
- outcomes per day, for the chart.

:func:`render_html` turns it into one HTML file with inline CSS and an inline SVG chart.
"""

from __future__ import annotations

import html
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
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1f2328;background:#fff}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}
.cards{display:flex;flex-wrap:wrap;gap:.8rem}.card{border:1px solid #d0d7de;border-radius:6px;padding:.6rem 1rem;min-width:8rem}
.card .v{font-size:1.5rem;font-weight:600}.card .k{color:#57606a;font-size:.85rem}
table{border-collapse:collapse;font-size:.85rem;margin-top:.5rem}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#57606a}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem;vertical-align:middle}
"""
_GREEN, _RED, _GREY = "#2da44e", "#cf222e", "#afb8c1"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f"<td{' class=n' if i in numeric else ''}>{html.escape('' if v is None else str(v))}</td>"
            for i, v in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    if not body:
        body.append(f"<tr><td colspan={len(headers)} class=muted>(none)</td></tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def outcomes_svg(days: Sequence[DayOutcomes], *, width: int = 720, height: int = 220) -> str:
    """A stacked bar chart of successes / failures / pending per day, as inline SVG."""
    if not days:
        return '<p class="muted">No applications yet: the chart fills in as contexts get outcomes.</p>'
    pad_l, pad_b, pad_t = 36, 40, 10
    plot_w, plot_h = width - pad_l - 10, height - pad_b - pad_t
    top = max(d.applications for d in days) or 1
    slot = plot_w / len(days)
    bar = max(2.0, min(40.0, slot * 0.7))
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            'aria-label="outcomes over time" font-size="10" font-family="sans-serif">'
        ),
        f'<line x1="{pad_l}" y1="{pad_t + plot_h}" x2="{width - 10}" y2="{pad_t + plot_h}" stroke="#57606a"/>',
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{pad_t + plot_h}" stroke="#57606a"/>',
        f'<text x="{pad_l - 4}" y="{pad_t + 8}" text-anchor="end">{top}</text>',
        f'<text x="{pad_l - 4}" y="{pad_t + plot_h}" text-anchor="end">0</text>',
    ]
    label_every = max(1, len(days) // 12)
    for i, d in enumerate(days):
        x = pad_l + i * slot + (slot - bar) / 2
        y = float(pad_t + plot_h)
        for count, color, name in ((d.successes, _GREEN, "success"), (d.failures, _RED, "failure"), (d.pending, _GREY, "pending")):
            if not count:
                continue
            h = plot_h * count / top
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{color}">'
                f"<title>{html.escape(d.day)}: {count} {name}</title></rect>"
            )
        if i % label_every == 0:
            cx = pad_l + i * slot + slot / 2
            parts.append(
                f'<text x="{cx:.1f}" y="{pad_t + plot_h + 14}" text-anchor="middle">{html.escape(d.day[5:])}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def render_html(ins: Insights) -> str:
    """A self-contained HTML page (inline CSS and SVG, no external assets) of the insights."""
    o = ins.overview
    cards = [
        ("acceptance", _pct(o.acceptance)), ("pass rate", _pct(o.pass_rate)),
        ("fallback rate", _pct(o.fallback_rate)), ("retry rate", _pct(o.retry_rate)),
        ("rating coverage", _pct(o.rating_coverage)), ("applications", str(o.applications)),
        ("with outcome", str(o.with_outcome)), ("active canaries", str(ins.active_canaries)),
    ]
    card_html = "".join(
        f'<div class="card"><div class="v">{html.escape(v)}</div><div class="k">{html.escape(k)}</div></div>'
        for k, v in cards
    )
    counts = _table(
        ["status", "learnings"], sorted(ins.status_counts.items()), numeric=(1,)
    ) + _table(["tier", "learnings"], sorted(ins.tier_counts.items()), numeric=(1,))
    learnings = _table(
        ["id", "content", "status", "tier", "score", "confidence", "canary", "helpful", "harmful", "used", "v"],
        (
            [l.id[:8], l.content, l.status, l.tier, f"{l.score:.3f}", f"{l.confidence:.3f}",
             f"{l.canary_allocation:.2f}", l.helpful, l.harmful, l.times_applied, l.version]
            for l in ins.learnings
        ),
        numeric=(4, 5, 6, 7, 8, 9, 10),
    )
    timeline = _table(
        ["when", "learning", "content", "field", "from", "to", "reason", "v"],
        (
            [t.created_at.strftime("%Y-%m-%d %H:%M"), t.learning_id[:8], t.content, t.field, t.old, t.new, t.reason, t.version]
            for t in ins.timeline
        ),
        numeric=(7,),
    )
    days = _table(
        ["day", "applications", "successes", "failures", "pending"],
        ([d.day, d.applications, d.successes, d.failures, d.pending] for d in ins.outcomes_by_day),
        numeric=(1, 2, 3, 4),
    )
    legend = (
        f'<div class="legend muted"><span style="background:{_GREEN}"></span>success'
        f'<span style="background:{_RED}"></span>failure<span style="background:{_GREY}"></span>pending</div>'
    )
    title = f"graphmem insights: {ins.user}"
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class=muted>generated {html.escape(ins.generated_at.isoformat())}</p>"
        f"<h2>Overview</h2><div class=cards>{card_html}</div>"
        f"<h2>Outcomes over time</h2>{outcomes_svg(ins.outcomes_by_day)}{legend}{days}"
        f"<h2>Learnings by status and tier</h2><div class=cards>{counts}</div>"
        f"<h2>Learnings</h2>{learnings}"
        f"<h2>Transition timeline (latest {len(ins.timeline)})</h2>{timeline}"
        "</body></html>\n"
    )
