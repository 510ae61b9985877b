"""Domain evolution: how advice works in each domain, what changed since the last run, and where
knowledge is missing or ignored.

A domain is a tool, topic or objective type (:mod:`graphmem.domains`). A run
(``Memory.domains()``, ``graphmem domains``, and a step of ``run_cycle`` when
``Settings.domains_in_cycle``) computes per domain:

- **learnings**: the user's learnings in it that are not disabled; ``live_learnings`` the ones
  served (active or canary); ``avg_confidence`` their mean confidence;
- **follow rate**: of the times its learnings were shown in a context whose outcome credited
  them (*showings*), the share the outcome accepted (``followed``; ``unhelpful``: rejected;
  neutral outcomes count in the denominator);
- **surprises** and **average gap** as the weakness trainer counts them (:mod:`graphmem.weakness`);
- **sources**: the follow rate per ``source_type`` (user_feedback, reflection, ...); among sources
  with at least ``Settings.domain_min_showings`` showings, the best is the *top source* and the
  worst the *weak source* (when they differ).

**Events**, against the domain's previous snapshot: ``effectiveness_shift`` when the follow rate
moved by more than ``Settings.domain_shift_min`` (0.05, i.e. 5 points); ``top_source`` /
``weak_source`` when the top or weak source changed (or was first named).

**Gaps** (the current diagnosis): ``no_insights`` (high) for a domain the user works in (a tool
used, an objective type pursued) with no learnings; ``unused_knowledge`` (medium) for one whose
learnings were never shown with an outcome; ``low_effectiveness`` (high) for a follow rate below
``Settings.domain_low_effectiveness`` (5 %) over at least ``Settings.domain_min_showings`` showings.

**Storage** (schema 012): a ``Domain`` node per user and domain, ``COVERS`` its Tool/Topic/
ObjectiveType node; a ``DomainSnapshot`` per run whose figures changed (``HAS_SNAPSHOT``; a run
that sees nothing new writes nothing), with the run's ``DomainEvent`` (``HAS_EVENT``) and
``DomainGap`` (``HAS_GAP``) nodes. ``record=False`` computes without writing.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from graphmem.deps import Deps
from graphmem.domains import DomainRef, domain_id, domains_of, load_showings
from graphmem.errors import InvalidInputError
from graphmem.models import new_id
from graphmem.weakness import analyse

HIGH, MEDIUM = "high", "medium"
_FIGURES = ("learnings", "live_learnings", "avg_confidence", "showings", "followed", "unhelpful", "surprises")


class SourceStats(BaseModel):
    """How one source's learnings fared in a domain."""

    showings: int = 0
    followed: int = 0
    follow_rate: float | None = None


class DomainGap(BaseModel):
    """A gap in one domain's knowledge or its use."""

    domain: str
    kind: str  # no_insights | unused_knowledge | low_effectiveness
    severity: str  # high | medium
    detail: str


class DomainEvent(BaseModel):
    """A change in one domain since its previous snapshot."""

    domain: str
    kind: str  # effectiveness_shift | top_source | weak_source
    source: str | None = None
    old: float | None = None
    new: float | None = None
    detail: str
    created_at: datetime


class DomainStats(BaseModel):
    """One domain's figures at this run."""

    domain: str  # kind:name
    kind: str
    name: str
    learnings: int = 0
    live_learnings: int = 0
    avg_confidence: float | None = None
    showings: int = 0
    followed: int = 0
    unhelpful: int = 0
    follow_rate: float | None = None
    previous_follow_rate: float | None = None
    surprises: int = 0
    avg_gap: float | None = None
    weak: bool = False
    sources: dict[str, SourceStats] = Field(default_factory=dict)
    top_source: str | None = None
    weak_source: str | None = None
    gaps: list[DomainGap] = Field(default_factory=list)


class LessonRow(BaseModel):
    """A lesson the weakness trainer proposed for a domain (graphmem/weakness.py)."""

    id: str
    domain: str
    content: str
    status: str
    validations: int = 0
    episodes: int = 0  # surprise episodes it consolidates


class DomainReport(BaseModel):
    """What one domain-evolution run saw, changed and stored."""

    generated_at: datetime
    recorded: bool = False
    snapshots: int = 0  # snapshots written (domains whose figures changed)
    domains: list[DomainStats] = Field(default_factory=list)
    events: list[DomainEvent] = Field(default_factory=list)  # this run's
    gaps: list[DomainGap] = Field(default_factory=list)  # the current diagnosis
    recent_events: list[DomainEvent] = Field(default_factory=list)  # stored, newest first
    lessons: list[LessonRow] = Field(default_factory=list)  # the weakness trainer's lessons, oldest first

    @property
    def weak(self) -> list[DomainStats]:
        """The weak domains (see graphmem/weakness.py), weakest first."""
        return sorted((st for st in self.domains if st.weak), key=lambda st: (-(st.avg_gap or 0.0), st.domain))


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 6) if den else None


class DomainEvolution:
    """Domain evolution for one user (explicit dependencies, no Memory)."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def run(self, *, record: bool = True, history: int = 20) -> DomainReport:
        """Compute every domain's figures, events and gaps; with ``record``, store what changed."""
        if not isinstance(record, bool):
            raise InvalidInputError(f"record must be True or False, got {record!r}")
        if isinstance(history, bool) or not isinstance(history, int) or history < 0:
            raise InvalidInputError(f"history must be a whole number >= 0, got {history!r}")
        d = self.deps
        now = d.now()
        stats = self._figures()
        states = d.store.domain_states(d.user)
        report = DomainReport(generated_at=now, recorded=record)
        writes: list[tuple[DomainStats, list[DomainEvent], dict[str, Any] | None]] = []
        for st in stats:
            state = states.get(domain_id(d.user, DomainRef(kind=st.kind, name=st.name)))  # type: ignore[arg-type]
            prev = state["snapshot"] if state else None
            st.previous_follow_rate = state["follow_rate"] if state else None
            st.gaps = self._gaps(st)
            report.gaps.extend(st.gaps)
            if prev is not None and all(_same(prev.get(k), getattr(st, k)) for k in _FIGURES):
                continue  # nothing new in this domain since its last snapshot
            events = self._events(st, state, now)
            report.events.extend(events)
            writes.append((st, events, state))
        report.domains = stats
        if record and writes:
            with d.store.transaction():
                for st, events, _ in writes:
                    self._write(st, events, now)
            report.snapshots = len(writes)
        report.lessons = [
            LessonRow(id=r["id"], domain=f"{r['kind']}:{r['name']}", content=r["content"], status=r["status"],
                      validations=int(r["validations"] or 0), episodes=int(r["episodes"] or 0))
            for r in d.store.weakness_lesson_rows(d.user)
        ]
        if history:
            report.recent_events = [DomainEvent.model_validate(r) for r in d.store.domain_events(d.user, history)]
        return report

    # --- figures ------------------------------------------------------------------------------
    def _figures(self) -> list[DomainStats]:
        d, s = self.deps, self.deps.settings
        stats: dict[DomainRef, DomainStats] = {}

        def of(ref: DomainRef) -> DomainStats:
            if ref not in stats:
                stats[ref] = DomainStats(domain=ref.key, kind=ref.kind, name=ref.name)
            return stats[ref]

        confidences: dict[DomainRef, list[float]] = {}
        for row in d.store.domain_learnings(d.user):
            if row["status"] == "disabled":
                continue
            for ref in domains_of(row["tool"], row["topics"], row["objective_type"]):
                st = of(ref)
                st.learnings += 1
                st.live_learnings += row["status"] in ("active", "canary")
                confidences.setdefault(ref, []).append(float(row["confidence"] or 0.0))
        for kind, names in d.store.domain_activity(d.user).items():
            for name in names:
                of(DomainRef(kind=kind, name=name))  # type: ignore[arg-type]
        for state in d.store.domain_states(d.user).values():
            of(DomainRef(kind=state["kind"], name=state["name"]))
        showings = load_showings(d.store, d.user)
        for sh in showings:
            for ref in sh.domains:
                st = of(ref)
                st.showings += 1
                st.followed += sh.verdict == "accepted"
                st.unhelpful += sh.verdict == "rejected"
                src = st.sources.setdefault(sh.source_type or "unknown", SourceStats())
                src.showings += 1
                src.followed += sh.verdict == "accepted"
        for w in analyse(showings, s.weakness_surprise_gap, s.weakness_min_gap, s.weakness_min_surprises):
            st = of(DomainRef(kind=w.kind, name=w.name))  # type: ignore[arg-type]
            st.surprises, st.avg_gap, st.weak = w.surprises, w.avg_gap, w.weak
        for ref, st in stats.items():
            values = confidences.get(ref, [])
            st.avg_confidence = round(sum(values) / len(values), 4) if values else None
            st.follow_rate = _rate(st.followed, st.showings)
            for src in st.sources.values():
                src.follow_rate = _rate(src.followed, src.showings)
            ranked = sorted(((v.follow_rate or 0.0, k) for k, v in st.sources.items()
                             if v.showings >= s.domain_min_showings), key=lambda x: (-x[0], x[1]))
            if len(ranked) >= 2 and ranked[0][0] > ranked[-1][0]:
                st.top_source, st.weak_source = ranked[0][1], ranked[-1][1]
        return sorted(stats.values(), key=lambda st: (st.kind, st.name))

    def _gaps(self, st: DomainStats) -> list[DomainGap]:
        s = self.deps.settings
        if st.learnings == 0:
            return [DomainGap(domain=st.domain, kind="no_insights", severity=HIGH,
                              detail="worked in, but nothing learned about it yet")]
        if st.showings == 0:
            return [DomainGap(domain=st.domain, kind="unused_knowledge", severity=MEDIUM,
                              detail=f"{st.learnings} learning(s), never shown in a context with an outcome")]
        if st.showings >= s.domain_min_showings and (st.follow_rate or 0.0) < s.domain_low_effectiveness:
            return [DomainGap(domain=st.domain, kind="low_effectiveness", severity=HIGH,
                              detail=f"follow rate {(st.follow_rate or 0.0) * 100:.1f}% over {st.showings} showings "
                                     f"(below {s.domain_low_effectiveness * 100:.0f}%)")]
        return []

    def _events(self, st: DomainStats, state: dict[str, Any] | None, now: datetime) -> list[DomainEvent]:
        s = self.deps.settings
        out = []
        old = state["follow_rate"] if state else None
        if old is not None and st.follow_rate is not None and round(abs(st.follow_rate - old), 6) > s.domain_shift_min:
            out.append(DomainEvent(domain=st.domain, kind="effectiveness_shift", old=old, new=st.follow_rate,
                                   created_at=now, detail=f"follow rate {old * 100:.1f}% -> {st.follow_rate * 100:.1f}%"))
        for kind, source, before in (("top_source", st.top_source, state["top_source"] if state else None),
                                     ("weak_source", st.weak_source, state["weak_source"] if state else None)):
            if source is not None and source != before:
                rate = st.sources[source].follow_rate
                prior = st.sources[before].follow_rate if before in st.sources else None
                out.append(DomainEvent(domain=st.domain, kind=kind, source=source, old=prior, new=rate, created_at=now,
                                       detail=f"{source} learnings followed {(rate or 0.0) * 100:.1f}% of "
                                              f"{st.sources[source].showings} showings"
                                              + (f" (was {before})" if before else "")))
        return out

    def _write(self, st: DomainStats, events: list[DomainEvent], now: datetime) -> None:
        d = self.deps
        ref = DomainRef(kind=st.kind, name=st.name)  # type: ignore[arg-type]
        node = domain_id(d.user, ref)
        sid = new_id()
        d.store.upsert_domain(node, d.user, st.kind, st.name, now)
        figures = {k: getattr(st, k) for k in ("learnings", "live_learnings", "avg_confidence", "showings", "followed",
                                               "unhelpful", "follow_rate", "surprises", "avg_gap", "weak")}
        figures["sources"] = json.dumps({k: v.model_dump() for k, v in st.sources.items()}, sort_keys=True)
        d.store.add_domain_snapshot(node, sid, d.user, st.domain, figures, st.top_source, st.weak_source, now)
        for e in events:
            d.store.add_domain_event(node, {"id": new_id(), "user_id": d.user, "domain": st.domain, "snapshot_id": sid,
                                            "kind": e.kind, "source": e.source, "old": e.old, "new": e.new,
                                            "detail": e.detail, "created_at": now})
        for g in st.gaps:
            d.store.add_domain_gap(node, {"id": new_id(), "user_id": d.user, "domain": st.domain, "snapshot_id": sid,
                                          "kind": g.kind, "severity": g.severity, "detail": g.detail, "created_at": now})


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and abs(float(a) - float(b)) < 1e-4
    return bool(a == b)


__all__ = ["DomainEvent", "DomainEvolution", "DomainGap", "DomainReport", "DomainStats", "LessonRow", "SourceStats"]
