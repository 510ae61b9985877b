"""Bullet evolution (seed 002 "Darwin-Gödel"): a learning that keeps failing is rewritten by
crossover with its most helpful siblings, and the rewrite that the judges find most helpful on
the original's failed cases replaces it.

A learning is *failing* when it was rated at least ``Settings.evolve_min_ratings`` times
(helpful + harmful) and harmful ≥ helpful. Evolving it (``Memory.evolve``, ``graphmem evolve``,
and a step of ``run_cycle`` when ``Settings.evolve_in_cycle``):

1. **Cases**: up to ``Settings.evolve_test_cases`` (4) places where it failed, newest first:
   failed traces it was derived from (input, output, ground truth, the verdicts that failed),
   then contexts it was shown in whose outcome was rejected (the query, the outcome's reasons).
2. **Parents**: its live siblings in the same scope (same tool; with no tool, a shared topic)
   rated more helpful than harmful, most helpful first, at most ``Settings.evolve_parents`` (6).
3. **Crossover**: the LLM breeds ``Settings.evolve_candidates`` (4) candidate rewrites of the
   original with the parents, shown the failed cases.
   Candidates that copy the original, or are near-duplicates of a sibling or of each other
   (cosine ≥ ``Settings.dedup_similarity``, the curator's threshold), are dropped.
4. **Fitness**: every candidate *and the original* is tested on every case by the same judges
   that judged it (a trace's failed judges; else the judges configured for its node, else the
   default ``correctness`` judge): "would this bullet have helped?". A case counts as helpful
   when each of its judges says so; fitness = helpful cases / ``evolve_test_cases`` (the seed's
   helpful / 4). Per-judge evolution: ``judge=NAME`` tests with that judge only.
5. **Selection**: the fittest candidate (first on ties) is kept only if it beats the original's
   fitness. It is stored as a new learning (``source_type="evolution"``, the original's kind,
   tool, topics, entities and status; a candidate when the screening classifier doubts it) with
   ``EVOLVED_FROM`` edges to the original and each sibling parent, and it SUPERSEDES the original
   (which moves to the archive tier with ``superseded_by`` set and a logged Transition; never
   deleted). Either way the original is marked ``evolved_at`` so a cycle retries it only after
   new ratings.

Every LLM call runs before anything is written; an LLMError propagates and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from pydantic import BaseModel, Field

from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.learn.judges import DEFAULT_CRITERIA, DEFAULT_JUDGE
from graphmem.learn.screening import classify_text
from graphmem.llm.prompts_evolution import bullet_test_request, crossover_request
from graphmem.llm.schemas import BulletTest, CrossoverOutput
from graphmem.models import Learning, LearningLinks, Transition

if TYPE_CHECKING:
    from graphmem.config import Settings
    from graphmem.embed import Embedder
    from graphmem.store import KuzuGraphStore

EVOLUTION: Final = "evolution"  # Learning.source_type of an evolved learning


class Candidate(BaseModel):
    """One bullet tested: a candidate rewrite (or the original, index -1)."""

    index: int
    content: str
    applies_when: str | None = None
    recommendation: str | None = None
    helpful: int = 0
    fitness: float = 0.0
    by_judge: dict[str, float] = Field(default_factory=dict)  # helpful share of the cases each judge tested


class EvolutionResult(BaseModel):
    """What evolving one learning did."""

    learning_id: str
    content: str
    judge: str | None = None
    cases: int = 0
    parents: list[str] = Field(default_factory=list)  # the sibling parents (the original is a parent too)
    original: Candidate | None = None
    candidates: list[Candidate] = Field(default_factory=list)
    duplicates: int = 0  # candidates dropped as near-duplicates of a sibling or of each other
    evolved_id: str | None = None
    evolved_content: str | None = None
    reason: str = ""

    @property
    def improved(self) -> bool:
        """True when an evolved learning superseded the original."""
        return self.evolved_id is not None


class EvolutionReport(BaseModel):
    """What one evolution run did, one result per learning tried."""

    results: list[EvolutionResult] = Field(default_factory=list)

    @property
    def evolved(self) -> list[EvolutionResult]:
        """The results where a rewrite superseded the original."""
        return [r for r in self.results if r.improved]


def _bullet(x: Learning | Candidate) -> str:
    text = x.content
    if x.recommendation and x.recommendation.lower() not in text.lower():
        text += f" (action: {x.recommendation})"
    return text


class Evolver:
    """Bullet evolution for one user (explicit dependencies, no Memory)."""

    def __init__(self, store: KuzuGraphStore, embedder: Embedder, llm: Any, settings: Settings,
                 now: Callable[[], datetime], user: str,
                 on_changed: Callable[[Sequence[Learning], str], None] | None = None) -> None:
        """``on_changed(learnings, change)`` is called inside the write transaction with the
        evolved learning ("created") and the superseded original ("retired")."""
        self.store, self.embedder, self.llm, self.settings, self.now, self.user = (
            store, embedder, llm, settings, now, user)
        self.on_changed = on_changed

    def failing(self) -> list[str]:
        """Ids of the user's failing learnings not tried since their last rating."""
        return self.store.failing_learnings(self.user, self.settings.evolve_min_ratings)

    def run(self, judge: str | None = None) -> EvolutionReport:
        """Evolve the failing learnings (see :meth:`failing`), most harmful first, at most
        ``Settings.evolve_max_per_run`` (the rest wait for the next run)."""
        todo = self.failing()[: self.settings.evolve_max_per_run]
        return EvolutionReport(results=[self.evolve(lid, judge=judge) for lid in todo])

    # --- one learning ---------------------------------------------------------------------------
    def evolve(self, learning_id: str, judge: str | None = None) -> EvolutionResult:
        """Evolve one learning (see the module docstring); failing or not."""
        s = self.settings
        original = self.store.get_learning(learning_id)
        if original.user_id != self.user:
            raise NotFoundError(f"no learning with id {learning_id!r} for user {self.user!r}")
        if original.superseded_by:
            raise InvalidInputError(f"learning {learning_id} is already superseded by {original.superseded_by}; "
                                    "evolve that one instead")
        if original.kind == "prompt":
            raise InvalidInputError("prompt versions are improved by A/B tests (propose_prompt), not by evolve")
        result = EvolutionResult(learning_id=original.id, content=original.content, judge=judge)
        cases = self.store.failed_cases(original.id, s.evolve_test_cases)
        plans = [(c, self._judges(c, judge)) for c in cases]
        plans = [(c, js) for c, js in plans if js]
        result.cases = len(plans)
        if not plans:
            result.reason = ("no failed case to test on" if not cases else
                             f"no failed case was judged by {judge!r}")
            self._mark(original.id)
            return result
        siblings = self.store.get_learnings(
            self.store.evolution_siblings(self.user, original.id, original.tool, original.topics, s.evolve_parents))
        result.parents = [p.id for p in siblings]
        request = crossover_request(
            {"content": original.content, "applies_when": original.applies_when,
             "recommendation": original.recommendation},
            [{"content": p.content, "applies_when": p.applies_when, "recommendation": p.recommendation,
              "helpful": p.helpful, "harmful": p.harmful} for p in siblings],
            [{"input_text": c["input_text"], "output": c["output"], "ground_truth": c["ground_truth"],
              "reasoning": "; ".join(dict.fromkeys(self._why(c, j, tags=True) for j in js))} for c, js in plans],
            n=s.evolve_candidates,
        )
        bred = self.llm.generate(request, CrossoverOutput).candidates[: s.evolve_candidates]
        result.original = self._test(Candidate(index=-1, content=original.content, applies_when=original.applies_when,
                                               recommendation=original.recommendation), plans)
        vectors = self._distinct(original, siblings, [b.content.strip() for b in bred], result)
        for i, b in enumerate(bred):
            if i in vectors:
                result.candidates.append(self._test(Candidate(index=i, content=b.content.strip(),
                                                              applies_when=b.applies_when,
                                                              recommendation=b.recommendation), plans))
        best = max(result.candidates, key=lambda c: (c.fitness, -c.index), default=None)
        if best is None or best.fitness <= result.original.fitness:
            got = f"{best.fitness:.2f}" if best is not None else "none"
            result.reason = f"no candidate beat the original (best {got} vs {result.original.fitness:.2f})"
            self._mark(original.id)
            return result
        child = self._write(original, siblings, best, vectors[best.index])
        result.evolved_id, result.evolved_content = child.id, child.content
        result.reason = f"candidate {best.index + 1} scored {best.fitness:.2f} vs the original's {result.original.fitness:.2f}"
        return result

    def _distinct(self, original: Learning, siblings: list[Learning], texts: list[str],
                  result: EvolutionResult) -> dict[int, np.ndarray]:
        """The candidates worth testing, by index, with their embeddings: not a copy of the
        original, not a near-duplicate (cosine ≥ ``Settings.dedup_similarity``, the curator's
        threshold) of a sibling or of an earlier candidate (seed 002's curator step)."""
        if not texts:
            return {}
        vecs = [np.asarray(v, dtype=np.float32) for v in self.embedder.embed(texts)]
        unit = [v / (float(np.linalg.norm(v)) or 1.0) for v in vecs]
        others = [v / (float(np.linalg.norm(v)) or 1.0)
                  for v in self.store.learning_vectors([p.id for p in siblings]).values()]
        kept: dict[int, np.ndarray] = {}
        for i, (text, u) in enumerate(zip(texts, unit)):
            if not text or text.lower() == original.content.strip().lower():
                continue
            near = [float(o @ u) for o in others] + [float(unit[j] @ u) for j in kept]
            if near and max(near) >= self.settings.dedup_similarity:
                result.duplicates += 1
                continue
            kept[i] = vecs[i]
        return kept

    # --- judging --------------------------------------------------------------------------------
    def _judges(self, case: dict[str, Any], only: str | None) -> list[dict[str, Any]]:
        """The judges of one case: the trace's failed judges, else the node's, else the default."""
        configured = self.store.judges_for(case.get("node"), self.user)
        failed = {v["judge"] for v in case.get("verdicts") or []}
        judges = [j for j in configured if j["name"] in failed] if failed else configured
        if failed and not judges and DEFAULT_JUDGE in failed:
            judges = [{"name": DEFAULT_JUDGE, "criteria": DEFAULT_CRITERIA}]
        if not judges and not failed:
            judges = [{"name": DEFAULT_JUDGE, "criteria": DEFAULT_CRITERIA}]
        return [j for j in judges if only is None or j["name"] == only]

    @staticmethod
    def _why(case: dict[str, Any], judge: dict[str, Any], *, tags: bool = False) -> str:
        """The judge's own failed verdict on a trace; for a context, its outcome's reason tags
        (``tags=True``: shown to the crossover only, the judge reads its criteria)."""
        for v in case.get("verdicts") or []:
            if v["judge"] == judge["name"] and v.get("reasoning"):
                return str(v["reasoning"])
        return ", ".join(str(r) for r in case.get("reasons") or []) if tags else ""

    def _test(self, cand: Candidate, plans: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> Candidate:
        helpful = 0
        per: dict[str, list[int]] = {}
        for case, judges in plans:
            ok_all = True
            for j in judges:
                answer = self.llm.generate(bullet_test_request(
                    j["name"], j.get("criteria") or DEFAULT_CRITERIA, _bullet(cand), case["input_text"] or "(none)",
                    case["output"], case["ground_truth"], self._why(case, j) or None), BulletTest)
                tally = per.setdefault(j["name"], [0, 0])
                tally[0] += int(answer.helpful)
                tally[1] += 1
                ok_all = ok_all and answer.helpful
            helpful += int(ok_all)
        return cand.model_copy(update={
            "helpful": helpful, "fitness": helpful / self.settings.evolve_test_cases,
            "by_judge": {k: round(h / n, 4) for k, (h, n) in sorted(per.items())}})

    # --- writing --------------------------------------------------------------------------------
    def _mark(self, learning_id: str) -> None:
        with self.store.transaction():
            self.store.set_evolved_at(learning_id, self.now())

    def _write(self, original: Learning, siblings: list[Learning], best: Candidate, vector: np.ndarray) -> Learning:
        now = self.now()
        status = original.status if classify_text(best.content, self.settings).decision == "pass" else "candidate"
        child = Learning(
            user_id=self.user, kind=original.kind, content=best.content, recommendation=best.recommendation,
            applies_when=best.applies_when, source_type=EVOLUTION, sentiment=original.sentiment,
            confidence=max(0.5, original.confidence), status=status, tool=original.tool,
            objective_type=original.objective_type, topics=list(original.topics), entities=list(original.entities),
            created_at=now, updated_at=now,
        )
        links = LearningLinks(tool=child.tool, topics=child.topics, entities=child.entities,
                              objective_type=child.objective_type)
        reason = f"evolved by crossover: fitness {best.fitness:.2f} on its failed cases"
        with self.store.transaction():
            current = self.store.get_learning(original.id)  # re-read under the write lock
            if current.superseded_by:
                raise InvalidInputError(f"learning {original.id} was superseded by {current.superseded_by} meanwhile")
            self.store.insert_learning(child, vector, links)
            self.store.link_evolved(child.id, [original.id] + [p.id for p in siblings], best.fitness, now)
            version = current.version + 1
            retired = current.model_copy(update={"tier": "archive", "superseded_by": child.id, "updated_at": now,
                                                 "version": version})
            self.store.save_learning(retired)
            self.store.set_evolved_at(original.id, now)
            self.store.link_conflict("SUPERSEDES", child.id, original.id, reason, now)
            self.store.log_transition(Transition(learning_id=original.id, field="tier", old=current.tier, new="archive",
                                                 reason=f"superseded by {child.id}: {reason}", version=version,
                                                 created_at=now))
            if self.on_changed is not None:
                self.on_changed([child], "created")
                self.on_changed([retired], "retired")
        return child


__all__ = ["EVOLUTION", "Candidate", "EvolutionReport", "EvolutionResult", "Evolver"]
