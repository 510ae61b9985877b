"""The weakness trainer: surprise moments point at weak domains, and their lessons become
candidate learnings.

**Surprise moments.** Every time a learning is shown in a context whose outcome credits it (a
*showing*, see :mod:`graphmem.domains`), the learning's confidence when shown is a prediction and
the outcome (1 accepted, 0 rejected; neutral outcomes do not count) what happened. The
confidence gap is ``|confidence - outcome|``. A showing is a *surprise* when its gap exceeds
``Settings.weakness_surprise_gap`` (0.5): a learning trusted more than even that failed, or one
trusted less than even that worked.

**Weak domains.** Per domain (a tool, topic or objective type, :mod:`graphmem.domains`), the
average gap over its judged showings; a domain is *weak* when that average exceeds
``Settings.weakness_min_gap`` (0.5) and it holds at least ``Settings.weakness_min_surprises`` (2)
surprises. Weakest first: highest average gap, then most surprises.

**Training.** For each weak domain (at most ``Settings.weakness_max_domains``, or ``top``), the
surprises no lesson consolidates yet go to the LLM (task ``weakness``; the OfflineLLM's rule is
deterministic, :mod:`graphmem.llm.offline_weakness`), which returns at most
``Settings.weakness_max_lessons`` lessons. A lesson is stored as a learning with status
``candidate`` (never served until the lifecycle or a person promotes it), kind ``rule``,
``source_type="weakness"``, linked to the domain's Tool/Topic/ObjectiveType, ``WEAKNESS_OF`` its
Domain node, ``SURPRISED_BY`` each surprise episode (the Application) and ``DERIVED_FROM`` each
learning that surprised. A lesson that repeats one the domain already has (cosine ≥
``Settings.dedup_similarity``) is not stored again: the existing one gains the new episodes and a
validation (re-derived from new evidence), which is what the lifecycle's onboarding counts to put
a candidate on canary. Running twice on the same outcomes changes nothing the second time.
Surprises the answer names in no lesson are linked to its first lesson, so they are not asked
about again. Lessons the injection screen refuses are dropped. Every LLM call runs before anything
is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final

import numpy as np
from pydantic import BaseModel, Field

from graphmem.deps import Deps
from graphmem.domains import DomainRef, Showing, domain_id, domain_label, load_showings
from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.learn.screening import classify_text
from graphmem.llm.prompts_weakness import weakness_request
from graphmem.llm.schemas import WeaknessLessons
from graphmem.models import Learning, LearningLinks, Transition

WEAKNESS: Final = "weakness"  # Learning.source_type of a lesson
MAX_SURPRISES_PER_REQUEST = 20


class Surprise(BaseModel):
    """One surprise moment: a learning shown in a context whose outcome contradicted its confidence."""

    application_id: str
    learning_id: str
    learning: str
    confidence: float
    outcome: str  # success (a distrusted learning worked) | failure (a trusted one failed)
    gap: float
    query: str = ""
    reasons: list[str] = Field(default_factory=list)
    at: datetime | None = None


class DomainWeakness(BaseModel):
    """How surprising one domain's advice is."""

    domain: str  # kind:name
    kind: str
    name: str
    showings: int = 0  # judged showings (accepted or rejected)
    surprises: int = 0
    avg_gap: float | None = None
    weak: bool = False
    moments: list[Surprise] = Field(default_factory=list)


class Lesson(BaseModel):
    """One lesson a run stored (``created``) or found again (new episodes linked to it)."""

    learning_id: str
    domain: str
    content: str
    created: bool
    episodes: int = 0  # surprise episodes this run linked to it


class WeaknessReport(BaseModel):
    """What the weakness trainer found and proposed."""

    generated_at: datetime
    domains: list[DomainWeakness] = Field(default_factory=list)  # every domain with judged showings, weakest first
    lessons: list[Lesson] = Field(default_factory=list)
    trained: bool = False

    @property
    def weak(self) -> list[DomainWeakness]:
        """The weak domains, weakest first."""
        return [d for d in self.domains if d.weak]

    @property
    def created(self) -> list[Lesson]:
        """The lessons this run stored as new candidates."""
        return [l for l in self.lessons if l.created]


def analyse(showings: Sequence[Showing], surprise_gap: float, min_gap: float, min_surprises: int) -> list[DomainWeakness]:
    """Per domain: judged showings, surprises, average gap and whether it is weak; weakest first."""
    per: dict[DomainRef, list[Showing]] = {}
    for s in showings:
        if s.gap is None:
            continue
        for ref in s.domains:
            per.setdefault(ref, []).append(s)
    out = []
    for ref, items in per.items():
        gaps = [float(s.gap) for s in items if s.gap is not None]
        moments = [
            Surprise(application_id=s.application_id, learning_id=s.learning_id, learning=s.content,
                     confidence=s.confidence, outcome="success" if s.outcome_value == 1.0 else "failure",
                     gap=float(s.gap), query=s.query, reasons=s.reasons, at=s.outcome_at)
            for s in items if s.gap is not None and s.gap > surprise_gap
        ]
        avg = round(sum(gaps) / len(gaps), 6)
        out.append(DomainWeakness(domain=ref.key, kind=ref.kind, name=ref.name, showings=len(gaps),
                                  surprises=len(moments), avg_gap=avg,
                                  weak=avg > min_gap and len(moments) >= min_surprises, moments=moments))
    return sorted(out, key=lambda d: (not d.weak, -(d.avg_gap or 0.0), -d.surprises, d.domain))


class WeaknessTrainer:
    """The weakness trainer for one user (explicit dependencies, no Memory)."""

    def __init__(self, deps: Deps, on_changed: Callable[[Sequence[Learning], str], None] | None = None) -> None:
        """``on_changed(learnings, change)`` is called inside the write transaction with the lessons
        created ("created") or re-derived ("updated")."""
        self.deps = deps
        self.on_changed = on_changed

    def analyse(self) -> list[DomainWeakness]:
        """Every domain with judged showings, weakest first (nothing is written)."""
        s = self.deps.settings
        return analyse(load_showings(self.deps.store, self.deps.user), s.weakness_surprise_gap, s.weakness_min_gap,
                       s.weakness_min_surprises)

    def run(self, *, train: bool = True, top: int | None = None) -> WeaknessReport:
        """Find the weak domains and, with ``train``, store lessons for the ``top`` weakest
        (default ``Settings.weakness_max_domains``). See the module docstring."""
        if not isinstance(train, bool):
            raise InvalidInputError(f"train must be True or False, got {train!r}")
        if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
            raise InvalidInputError(f"top must be a whole number >= 1 (how many weak domains to train), got {top!r}")
        report = WeaknessReport(generated_at=self.deps.now(), domains=self.analyse(), trained=train)
        if not train:
            return report
        limit = top if top is not None else self.deps.settings.weakness_max_domains
        consumed = self.deps.store.consumed_surprises(self.deps.user)
        plans = []
        for weak in report.weak[:limit]:
            fresh = [m for m in weak.moments if (m.application_id, m.learning_id) not in consumed]
            if fresh:
                plans.append((weak, fresh[-MAX_SURPRISES_PER_REQUEST:], self._ask(weak, fresh[-MAX_SURPRISES_PER_REQUEST:])))
        for weak, fresh, answer in plans:  # every LLM call is done: now write
            report.lessons.extend(self._store(weak, fresh, answer))
        return report

    # --- one weak domain ------------------------------------------------------------------------
    def _ask(self, weak: DomainWeakness, fresh: list[Surprise]) -> WeaknessLessons:
        ref = DomainRef(kind=weak.kind, name=weak.name)  # type: ignore[arg-type]
        request = weakness_request(
            domain_label(ref),
            [{"learning": m.learning, "confidence": round(m.confidence, 4), "outcome": m.outcome, "query": m.query,
              "reasons": m.reasons} for m in fresh],
            n=self.deps.settings.weakness_max_lessons,
        )
        answer: WeaknessLessons = self.deps.llm.generate(request, WeaknessLessons)
        return answer

    def _store(self, weak: DomainWeakness, fresh: list[Surprise], answer: WeaknessLessons) -> list[Lesson]:
        d, s = self.deps, self.deps.settings
        ref = DomainRef(kind=weak.kind, name=weak.name)  # type: ignore[arg-type]
        node = domain_id(d.user, ref)
        lessons = [l for l in answer.lessons[: s.weakness_max_lessons] if l.content.strip()]
        lessons = [l for l in lessons if classify_text(l.content, s).decision != "refuse"]
        if not lessons:
            return []
        vectors = [np.asarray(v, dtype=np.float32) for v in d.embedder.embed([l.content.strip() for l in lessons])]
        now = d.now()
        out: list[Lesson] = []
        with d.store.transaction():
            d.store.upsert_domain(node, d.user, ref.kind, ref.name, now)
            existing = d.store.get_learnings(d.store.weakness_lessons(d.user, node))
            known = d.store.learning_vectors([l.id for l in existing])
            by_id = {l.id: l for l in existing}
            made: set[str] = set()
            for lesson, vec in zip(lessons, vectors):
                picked = [fresh[i] for i in lesson.sources if 0 <= i < len(fresh)] or list(fresh)
                links = [(m.application_id, m.learning_id, m.gap) for m in picked]
                twin = _nearest(vec, known, s.dedup_similarity)
                if twin is not None and twin in made:  # the answer repeats a lesson it just gave
                    d.store.link_weakness(twin, node, links)
                    continue
                if twin is not None:
                    old = by_id[twin]
                    updated = old.model_copy(update={"validations": old.validations + 1, "last_validated_at": now,
                                                     "updated_at": now, "version": old.version + 1})
                    d.store.save_learning(updated)
                    d.store.log_transition(Transition(
                        learning_id=old.id, field="validations", old=str(old.validations), new=str(updated.validations),
                        reason=f"weakness trainer: re-derived from {len(links)} new surprise(s) in {ref.key}",
                        version=updated.version, created_at=now))
                    d.store.link_weakness(old.id, node, links)
                    by_id[twin] = updated
                    self._changed([updated], "updated")
                    out.append(Lesson(learning_id=old.id, domain=ref.key, content=old.content, created=False,
                                      episodes=len(links)))
                    continue
                learning = self._lesson(ref, lesson, picked, now)
                d.store.insert_learning(learning, vec, LearningLinks(
                    tool=learning.tool, topics=learning.topics, entities=learning.entities,
                    objective_type=learning.objective_type))
                d.store.link_weakness(learning.id, node, links)
                known[learning.id], by_id[learning.id] = vec, learning
                made.add(learning.id)
                self._changed([learning], "created")
                out.append(Lesson(learning_id=learning.id, domain=ref.key, content=learning.content, created=True,
                                  episodes=len(links)))
            covered = {(a, l) for lesson in lessons for i in lesson.sources if 0 <= i < len(fresh)
                       for a, l in [(fresh[i].application_id, fresh[i].learning_id)]}
            rest = [(m.application_id, m.learning_id, m.gap) for m in fresh if (m.application_id, m.learning_id) not in covered]
            if rest and out and any(l.sources for l in lessons):  # asked about, named by no lesson: not asked again
                d.store.link_weakness(out[0].learning_id, node, rest)
        return out

    def _lesson(self, ref: DomainRef, lesson: Any, picked: list[Surprise], now: datetime) -> Learning:
        entities: list[str] = []
        for m in picked:
            for e in self._entities(m.learning_id):
                if e not in entities and len(entities) < 5:
                    entities.append(e)
        return Learning(
            user_id=self.deps.user, kind="rule", content=lesson.content.strip(), applies_when=lesson.applies_when,
            recommendation=lesson.recommendation, source_type=WEAKNESS, confidence=0.5, status="candidate",
            canary_allocation=self.deps.settings.canary_min_allocation,
            tool=ref.name if ref.kind == "tool" else None,
            topics=[ref.name] if ref.kind == "topic" else [],
            objective_type=ref.name if ref.kind == "objective_type" else None,
            entities=entities, created_at=now, updated_at=now,
        )

    def _entities(self, learning_id: str) -> list[str]:
        try:
            return list(self.deps.store.get_learning(learning_id).entities)
        except NotFoundError:  # forgotten meanwhile: no entities to lend
            return []

    def _changed(self, learnings: Sequence[Learning], change: str) -> None:
        if self.on_changed is not None and learnings:
            self.on_changed(learnings, change)


def _nearest(vec: np.ndarray, known: dict[str, np.ndarray], threshold: float) -> str | None:
    """The id of the known vector most similar to ``vec`` at cosine ≥ ``threshold``, else None."""
    u = vec / (float(np.linalg.norm(vec)) or 1.0)
    best, best_sim = None, threshold
    for lid, other in known.items():
        o = np.asarray(other, dtype=np.float32)
        sim = float(u @ (o / (float(np.linalg.norm(o)) or 1.0)))
        if sim >= best_sim:
            best, best_sim = lid, sim
    return best


__all__ = ["WEAKNESS", "DomainWeakness", "Lesson", "Surprise", "WeaknessReport", "WeaknessTrainer", "analyse"]
