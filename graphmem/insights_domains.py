"""The domains part of the insights (``graphmem insights --domains``, ``graphmem domains``): rows for
the terminal tables and the context of the HTML section (templates/insights_domains.html).
Kept apart from :mod:`graphmem.insights` so each section stays in its own functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphmem.domain_evolution import DomainReport


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def domain_rows(report: DomainReport) -> list[dict[str, Any]]:
    """One row per domain: learnings (served), confidence, follow rate (showings) and before,
    surprises with the average gap, weak."""
    return [
        {"domain": st.domain, "learnings": f"{st.learnings} ({st.live_learnings} served)",
         "conf": _num(st.avg_confidence), "follow rate": f"{_pct(st.follow_rate)} of {st.showings}",
         "before": _pct(st.previous_follow_rate), "surprises": f"{st.surprises}, gap {_num(st.avg_gap)}",
         "weak": "WEAK" if st.weak else ""}
        for st in report.domains
    ]


def source_rows(report: DomainReport) -> list[dict[str, Any]]:
    """The domains whose learnings' sources differ in follow rate: the top and the weak source."""
    return [
        {"domain": st.domain, "top source": f"{st.top_source} {_pct(st.sources[st.top_source].follow_rate)}",
         "weak source": f"{st.weak_source} {_pct(st.sources[st.weak_source].follow_rate)}"}
        for st in report.domains if st.top_source and st.weak_source
    ]


def gap_rows(report: DomainReport) -> list[dict[str, Any]]:
    """The current gaps, high severity first."""
    return [{"domain": g.domain, "gap": g.kind, "severity": g.severity, "detail": g.detail}
            for g in sorted(report.gaps, key=lambda g: (g.severity != "high", g.domain, g.kind))]


def event_rows(report: DomainReport) -> list[dict[str, Any]]:
    """The stored domain events, newest first."""
    return [{"when": e.created_at.strftime("%Y-%m-%d %H:%M"), "domain": e.domain, "event": e.kind,
             "detail": e.detail} for e in report.recent_events]


def lesson_rows(report: DomainReport) -> list[dict[str, Any]]:
    """The weakness trainer's lessons (candidates until the lifecycle or a person promotes them)."""
    return [{"id": l.id[:8], "domain": l.domain, "status": l.status, "episodes": l.episodes,
             "validations": l.validations, "lesson": l.content} for l in report.lessons]


def html_context(report: DomainReport | None) -> dict[str, Any]:
    """The template variables of the domains section (empty when no report)."""
    if report is None:
        return {"domains": None}

    def rows(items: list[dict[str, Any]]) -> list[list[Any]]:
        return [list(r.values()) for r in items]

    return {
        "domains": report,
        "domain_rows": rows(domain_rows(report)),
        "domain_gap_rows": rows(gap_rows(report)),
        "domain_source_rows": rows(source_rows(report)),
        "domain_event_rows": rows(event_rows(report)),
        "domain_lesson_rows": rows(lesson_rows(report)),
    }


__all__ = ["domain_rows", "event_rows", "gap_rows", "html_context", "lesson_rows", "source_rows"]
