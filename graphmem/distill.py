"""Distillation (seed 004 "DISTILL"): clusters of similar episodic learnings become one rule.

Candidates are the user's episodic learnings still in use and not distilled yet: kind
``observation``, or rules the reflector wrote (``source_type="reflection"``). A run

1. adds each candidate to the live distilled rule whose members' centroid it is closest to, at
   cosine ≥ ``Settings.distill_similarity`` (that rule is *touched*);
2. clusters the remaining candidates greedily (oldest first, each joins the nearest cluster
   centroid at cosine ≥ the same threshold, else starts one); a cluster of at least
   ``Settings.distill_min_size`` members becomes a new rule (kind ``rule``, source
   ``distillation``, confidence ``Settings.distill_confidence``, 0.8-0.9 in the seed; status
   active when every member was active, else candidate, onboarded like any candidate); smaller
   clusters wait for later runs;
3. writes each new or touched rule with ``DERIVED_FROM`` edges to every member and moves the new
   members to the archive tier (a logged Transition; never deleted).

Incremental: members carry ``distilled_at``, so a run only looks at new candidates and only
rewrites the rules they joined. The rule's text is the LLM's one-bullet summary of the members,
the most central member first (the offline LLM keeps that member's recommendation or content);
it is screened for injected instructions like any learning (doubted: stored as candidate).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, Field

from graphmem.learn.screening import classify_text
from graphmem.models import Learning, LearningLinks, Transition

if TYPE_CHECKING:
    from graphmem.config import Settings
    from graphmem.embed import Embedder
    from graphmem.store import KuzuGraphStore


class DistilledRule(BaseModel):
    """One rule a run created or extended."""

    rule_id: str
    content: str
    created: bool
    members: list[str] = Field(default_factory=list)
    new_members: list[str] = Field(default_factory=list)


class DistillReport(BaseModel):
    """What one distillation run did."""

    candidates: int = 0
    rules: list[DistilledRule] = Field(default_factory=list)
    pending: int = 0  # candidates in clusters still too small

    @property
    def created(self) -> list[DistilledRule]:
        """The rules this run created."""
        return [r for r in self.rules if r.created]

    @property
    def archived(self) -> int:
        """Members this run moved to the archive tier."""
        return sum(len(r.new_members) for r in self.rules)


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def greedy_clusters(vectors: Sequence[np.ndarray], threshold: float) -> list[list[int]]:
    """Indices grouped in order: each joins the cluster whose centroid is nearest at cosine ≥
    ``threshold``, else starts a new cluster (deterministic for a given order)."""
    sums: list[np.ndarray] = []
    groups: list[list[int]] = []
    for i, v in enumerate(vectors):
        u = _unit(np.asarray(v, dtype=np.float64))
        best, best_sim = -1, threshold
        for g, s in enumerate(sums):
            sim = float(_unit(s) @ u)
            if sim >= best_sim:
                best, best_sim = g, sim
        if best < 0:
            sums.append(u.copy())
            groups.append([i])
        else:
            sums[best] += u
            groups[best].append(i)
    return groups


def medoid(vectors: Sequence[np.ndarray]) -> int:
    """Index of the member with the highest summed cosine to the others."""
    m = np.stack([_unit(np.asarray(v, dtype=np.float64)) for v in vectors])
    return int(np.argmax((m @ m.T).sum(axis=1)))


class Distiller:
    """Distillation of one user's episodic learnings (explicit dependencies, no Memory)."""

    def __init__(self, store: KuzuGraphStore, embedder: Embedder, settings: Settings,
                 now: Callable[[], datetime], user: str, llm: Any = None,
                 on_changed: Callable[[Sequence[Learning], str], None] | None = None) -> None:
        """``on_changed(learnings, change)`` is called inside each write transaction with the
        rules written ("created" / "updated") and the members archived ("retired"), so the
        summaries they feed are marked stale."""
        self.store, self.embedder, self.settings, self.now, self.user, self.llm = (
            store, embedder, settings, now, user, llm)
        self.on_changed = on_changed

    def _changed(self, learnings: Sequence[Learning], change: str) -> None:
        if self.on_changed is not None and learnings:
            self.on_changed(learnings, change)

    def run(self) -> DistillReport:
        """One incremental run (see the module docstring)."""
        s = self.settings
        candidates = self.store.distill_candidates(self.user)
        report = DistillReport(candidates=len(candidates))
        if not candidates:
            return report
        rules = self.store.distilled_rules(self.user)
        vectors = self.store.learning_vectors(candidates + [m for ms in rules.values() for m in ms])
        centroids = {rid: _unit(np.sum([_unit(vectors[m]) for m in ms if m in vectors], axis=0))
                     for rid, ms in rules.items() if any(m in vectors for m in ms)}
        joined: dict[str, list[str]] = {}
        rest: list[str] = []
        for cid in candidates:
            u = _unit(vectors[cid])
            best = max(centroids.items(), key=lambda kv: float(kv[1] @ u), default=None)
            if best is not None and float(best[1] @ u) >= s.distill_similarity:
                joined.setdefault(best[0], []).append(cid)
            else:
                rest.append(cid)
        for rid, new in sorted(joined.items()):
            report.rules.append(self._extend(rid, rules[rid], new, vectors))
        for group in greedy_clusters([vectors[c] for c in rest], s.distill_similarity):
            members = [rest[i] for i in group]
            if len(members) >= s.distill_min_size:
                report.rules.append(self._create(members, vectors))
            else:
                report.pending += len(members)
        return report

    # --- writing --------------------------------------------------------------------------------
    def _text(self, members: list[Learning], vectors: dict[str, np.ndarray]) -> tuple[str, str | None]:
        """(content, recommendation) of the rule: the LLM's one-bullet summary, central member first."""
        centre = members[medoid([vectors[m.id] for m in members])]
        ordered = [centre] + [m for m in members if m.id != centre.id]
        bullet = None
        if self.llm is not None:
            from graphmem.errors import LLMError
            from graphmem.llm.prompts import summary_request
            from graphmem.llm.schemas import SummaryOutput

            items = [{"content": m.content, "recommendation": m.recommendation, "sentiment": m.sentiment,
                      "kind": "rule", "tool": m.tool} for m in ordered[:20]]
            try:
                out = self.llm.generate(summary_request("", items, [], 1), SummaryOutput)
                bullet = out.bullets[0].strip() if out.bullets else None
            except LLMError:
                bullet = None
        text = bullet or centre.recommendation or centre.content
        content = text if text.lower().startswith("rule:") else f"Rule: {text}"
        return content, centre.applies_when

    def _create(self, member_ids: list[str], vectors: dict[str, np.ndarray]) -> DistilledRule:
        members = self.store.get_learnings(member_ids)
        content, applies_when = self._text(members, vectors)
        now = self.now()
        tools = Counter(m.tool for m in members if m.tool)
        topics = list(dict.fromkeys(t for m in members for t in m.topics))[:5]
        vetted = all(m.status == "active" for m in members)  # unvetted reflection rules: the rule waits too
        status = "active" if vetted and classify_text(content, self.settings).decision == "pass" else "candidate"
        rule = Learning(
            user_id=self.user, kind="rule", content=content, applies_when=applies_when, source_type="distillation",
            confidence=self.settings.distill_confidence, status=status, validations=len(members),  # type: ignore[arg-type]
            tool=tools.most_common(1)[0][0] if tools else None, topics=topics, created_at=now, updated_at=now,
        )
        vector = np.asarray(self.embedder.embed([content])[0], dtype=np.float32)
        with self.store.transaction():
            self.store.insert_learning(rule, vector, LearningLinks(tool=rule.tool, topics=topics))
            self._changed([rule], "created")
            self._archive_members(rule.id, members, now)
        return DistilledRule(rule_id=rule.id, content=content, created=True, members=member_ids, new_members=member_ids)

    def _extend(self, rule_id: str, old: list[str], new: list[str], vectors: dict[str, np.ndarray]) -> DistilledRule:
        members = self.store.get_learnings(old + new)
        content, applies_when = self._text(members, vectors)
        now = self.now()
        with self.store.transaction():
            rule = self.store.get_learning(rule_id)
            updated = rule.model_copy(update={"content": content, "applies_when": applies_when, "updated_at": now,
                                              "validations": rule.validations + len(new), "last_validated_at": now})
            embedding = None
            if content != rule.content:
                embedding = np.asarray(self.embedder.embed([content])[0], dtype=np.float32)
            self.store.save_learning(updated, embedding)
            self._changed([updated], "updated")
            self._archive_members(rule_id, [m for m in members if m.id in set(new)], now)
        return DistilledRule(rule_id=rule_id, content=content, created=False, members=old + new, new_members=new)

    def _archive_members(self, rule_id: str, members: list[Learning], now: datetime) -> None:
        """Inside a transaction: DERIVED_FROM edges, members archived (logged), distilled_at set."""
        self.store.link_distilled(rule_id, [m.id for m in members], now)
        archived = []
        for m in self.store.get_learnings([x.id for x in members]):  # re-read under the write lock
            if m.tier == "archive":
                continue
            version = m.version + 1
            archived.append(m.model_copy(update={"tier": "archive", "version": version, "updated_at": now}))
            self.store.save_learning(archived[-1])
            self.store.log_transition(Transition(learning_id=m.id, field="tier", old=m.tier, new="archive",
                                                 reason=f"distilled into rule {rule_id}", version=version,
                                                 created_at=now))
        self._changed(archived, "retired")


__all__ = ["DistillReport", "DistilledRule", "Distiller", "greedy_clusters", "medoid"]
