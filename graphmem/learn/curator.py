"""The curator (seed 002): every learning the learning pipelines write goes through it.

Order of checks for one new learning (``Curator.curate``):

1. **Injection screen** (:mod:`graphmem.learn.screening`), on every channel, the owner's
   included: text that tries to exfiltrate secrets, change the agent's authority or address, or
   disable safeguards is refused when the screen is sure (``None``, a logged warning; the event or
   trace it came from stays logged) and kept as a ``candidate`` when it doubts (never served,
   never summarised; a Transition says why). A doubted learning is never merged into, nor allowed
   to supersede or contradict, another learning (only an exact duplicate is merged).
2. **Actionability (seed 003 system 9).** A rule/preference/checklist/bug_fix/prompt whose content
   and recommendation are both below ``Settings.actionability_threshold`` becomes
   ``kind="observation"`` with ``status="shadow"`` and the observation TTL. That is what "out of
   the advice pool" means here: observations are stored, searchable and listed
   (``Memory.learnings(kind="observation")``) but :meth:`Memory.context` never serves them,
   because retrieval only serves active (and sampled canary) learnings.
3. **Exact duplicate** (same user, same normalised text): merged.
4. **Contradiction, scoped.** Only the same user's live learnings about the *same tool* or
   mentioning one of the *same entities* are compared (never the whole graph). A pair contradicts
   when the embeddings are at least ``Settings.contradiction_similarity`` alike and the
   polarities are opposite (never/don't/avoid… vs always/use/prefer…) on the same subject
   (content-word overlap ≥ 0.6 once polarity and stop words are left out). If the new learning is user
   feedback it SUPERSEDES the older one (older: tier archive, superseded_by set, a Transition
   logged); otherwise both are kept, linked CONTRADICTS, and ``contradictions`` +1 on both.
5. **Near duplicate**: cosine ≥ ``Settings.dedup_similarity`` (0.85) with one of the user's live
   learnings that it does not oppose merges into it: validations +1, links added, and the better
   wording kept (the more actionable text; ties go to the higher confidence, then the existing).
6. Otherwise inserted.

Nothing is ever deleted. Every write runs in one transaction and calls
``deps.on_learnings_changed`` inside it, then ``deps.after_write`` after the commit (the Deps hooks).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.learn.actionability import score_actionability
from graphmem.learn.contradiction import opposed, polarity, subject_overlap, supersedes
from graphmem.learn.injection import score_injection
from graphmem.learn.screening import Screening, screen
from graphmem.learnings import LearningService, merged_learning
from graphmem.models import Learning, LearningLinks, Transition
from graphmem.store.catalog import STATUS_CODE, TIER_CODE
from graphmem.store.text import content_key

if TYPE_CHECKING:
    from graphmem.deps import Deps

log = logging.getLogger("graphmem.learn")

ADVICE_KINDS = frozenset({"rule", "preference", "checklist", "bug_fix", "prompt"})
"""Kinds that are advice; the actionability classifier may turn them into observations."""

_INJECTION = re.compile(
    r"\b(ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|any|your|the|"
    r"system|existing)\b[^.\n]{0,30}\b(rules?|instructions?|prompts?|guidelines?|directives?|policies|polic(y))\b"
    r"|\byou are now\b|\bnew (system )?instructions?\s*:|\bsystem prompt\s*:|\bact as (an? )?(unrestricted|jailbroken)"
    r"|\b(exfiltrate|leak)\b[^.\n]{0,40}\b(secrets?|passwords?|credentials?|keys?|tokens?)\b"
    r"|\b(send|forward|email|post|upload)\b[^.\n]{0,40}\b(passwords?|credentials?|api keys?|secrets?|tokens?)\b",
    re.IGNORECASE,
)


def looks_like_injection(text: str | None) -> bool:
    """True when ``text`` reads like an instruction aimed at the agent itself (prompt injection):
    the old guard's patterns, or a classifier score of at least 0.5."""
    if not text:
        return False
    return bool(_INJECTION.search(text)) or score_injection(text).score >= 0.5


_SCOPE_CANDIDATES = 8
"""How many same-scope learnings (most similar first) the owner's feedback is checked against."""

def learning_text(learning: Learning) -> str:
    """What the curator compares and embeds: content plus a recommendation it does not contain."""
    parts = [learning.content]
    if learning.recommendation and learning.recommendation not in learning.content:
        parts.append(learning.recommendation)
    return " ".join(parts)


def _plain(links: LearningLinks) -> LearningLinks:
    """``links`` without the event/objective ids (the curator links those itself)."""
    return links.model_copy(update={"source_event_id": None, "objective_id": None})


@dataclass
class CurationResult:
    """What the curator did with one learning."""

    learning: Learning | None
    action: str  # inserted | merged | superseded | contradicted | refused
    related: list[str] = field(default_factory=list)
    screening: Screening | None = None


class Curator:
    """Deduplicates, classifies and reconciles the learnings the learning pipelines produce."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    # --- classification -------------------------------------------------------------------
    def classify(self, learning: Learning) -> Learning:
        """Turn non-actionable advice into a shadow observation (see the module docstring)."""
        if learning.kind not in ADVICE_KINDS:
            return learning
        settings = self.deps.settings
        texts = [learning.content] + ([learning.recommendation] if learning.recommendation else [])
        if any(score_actionability(t, settings).is_actionable for t in texts):
            return learning
        return learning.model_copy(update={
            "kind": "observation", "status": "shadow", "ttl_days": settings.ttl_days.get("observation"),
        })

    # --- the pipeline -------------------------------------------------------------------------
    def curate(
        self,
        learning: Learning,
        links: LearningLinks,
        *,
        trusted_text: str | None = None,
        derived: Sequence[tuple[str, str]] = (),
        source_text: str | None = None,
        channel: str | None = None,
    ) -> CurationResult:
        """Store ``learning`` (merge, supersede, contradict or insert); see the module docstring.

        ``source_text`` is the text the learning was derived from (a trace output…);
        ``trusted_text`` is the owner's own message, screened like any other source (the name
        stays for compatibility); ``channel`` names the channel for the LLM judge (default: the
        learning's source_type). ``derived`` are extra (label, id) DERIVED_FROM targets (Trace,
        Reflection) linked to whichever learning ends up holding the knowledge.
        """
        text = learning_text(learning)
        deps = self.deps
        screening = screen(
            " ".join(p for p in (text, learning.applies_when) if p), deps.settings,
            source_text=source_text or trusted_text, llm=deps.llm, channel=channel or learning.source_type,
        )
        if screening.decision == "refuse":
            log.warning("graphmem: refused a learning that reads like an injected instruction (%s): %.120r",
                        screening.summary, text)
            return CurationResult(None, "refused", screening=screening)
        learning = self.classify(learning)
        if screening.decision == "doubt":
            return self._quarantine(learning, links, derived, screening)
        embedding = np.asarray(deps.embedder.embed([learning_text(learning)])[0], dtype=np.float32)
        catalog = deps.store.learning_catalog
        existing_id = catalog.find_exact(learning.user_id, content_key(learning.content))
        if existing_id is not None:
            merged = self._merge(deps.store.get_learning(existing_id), learning, links, embedding, derived)
            return CurationResult(merged, "merged", [existing_id])
        sims, rows = self._live_similarities(learning.user_id, embedding)
        conflicts = self._conflicts(learning, text, sims, rows)
        if conflicts:
            return self._insert_conflicting(learning, links, embedding, derived, conflicts)
        best = self._near_duplicate(text, sims, rows)
        if best is not None:
            merged = self._merge(deps.store.get_learning(best), learning, links, embedding, derived)
            return CurationResult(merged, "merged", [best])
        self._insert(learning, links, embedding, derived)
        return CurationResult(learning, "inserted")

    def _quarantine(
        self, learning: Learning, links: LearningLinks, derived: Sequence[tuple[str, str]], screening: Screening
    ) -> CurationResult:
        """Store a doubted learning as a candidate (exact duplicates merge; nothing else is touched)."""
        deps = self.deps
        wanted = learning.status
        if wanted in ("active", "canary"):
            learning = learning.model_copy(update={"status": "candidate", "canary_allocation": 1.0})
        log.warning("graphmem: kept a learning as %s, it may be an injected instruction (%s): %.120r",
                    learning.status, screening.summary, learning.content)
        embedding = np.asarray(deps.embedder.embed([learning_text(learning)])[0], dtype=np.float32)
        existing_id = deps.store.learning_catalog.find_exact(learning.user_id, content_key(learning.content))
        if existing_id is not None:
            merged = self._merge(deps.store.get_learning(existing_id), learning, links, embedding, derived)
            return CurationResult(merged, "merged", [existing_id], screening=screening)
        # always logged (even when the status was already candidate): the lifecycle reads it and never
        # onboards the learning; a person decides
        note = Transition(learning_id=learning.id, field="status", old=wanted, new=learning.status,
                          reason=screening.summary[:500], version=learning.version, created_at=deps.now())
        self._insert(learning, links, embedding, derived, note=note)
        return CurationResult(learning, "inserted", screening=screening)

    # --- lookups ------------------------------------------------------------------------------
    def _live_similarities(self, user: str, embedding: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cosine to every live learning of ``user`` (not superseded, archived or disabled)."""
        catalog = self.deps.store.learning_catalog
        if len(catalog) == 0:
            return np.zeros(0, np.float32), np.zeros(0, np.int64)
        users = np.asarray(catalog.user, dtype=object)
        live = (
            (users == user)
            & (catalog.col("superseded") == 0)
            & (catalog.col("tier") != TIER_CODE["archive"])
            & (catalog.col("status") != STATUS_CODE["disabled"])
        )
        rows = np.flatnonzero(live)
        if rows.size == 0:
            return np.zeros(0, np.float32), rows
        return catalog.vectors.cosine(embedding, rows), rows

    def _near_duplicate(self, text: str, sims: np.ndarray, rows: np.ndarray) -> str | None:
        """The most similar live learning at or above the dedup threshold with the same polarity."""
        threshold = self.deps.settings.dedup_similarity
        catalog = self.deps.store.learning_catalog
        for i in np.argsort(-sims):
            if sims[i] < threshold:
                break
            candidate = self.deps.store.get_learning(catalog.ids[int(rows[i])])
            if not opposed(text, learning_text(candidate)):
                return candidate.id
        return None

    def _conflicts(self, learning: Learning, text: str, sims: np.ndarray, rows: np.ndarray) -> list[Learning]:
        """Older learnings on the same tool/entity that this one contradicts (scoped, capped at 5).

        Two tests. Opposite polarity on the same subject, among candidates at least
        ``contradiction_similarity`` alike. And, for the owner's own feedback only, a same-aspect
        conflict in the same scope (:func:`graphmem.learn.contradiction.supersedes`: "use bullet
        points instead" vs "long flowing paragraphs" for the same person), among the
        ``_SCOPE_CANDIDATES`` most similar same-scope learnings whatever their similarity."""
        if sims.size == 0 or not (learning.tool or learning.entities):
            return []
        owner = learning.source_type == "user_feedback"
        if polarity(text) == 0 and not owner:
            return []
        deps, settings = self.deps, self.deps.settings
        catalog = deps.store.learning_catalog
        scope = set(deps.store.learning_ids_mentioning(learning.user_id, learning.entities))
        tools = np.asarray(catalog.tool, dtype=object)[rows]
        in_scope = (tools == learning.tool) if learning.tool is not None else np.zeros(rows.size, bool)
        if scope:
            ids = catalog.ids
            in_scope |= np.fromiter((ids[int(r)] in scope for r in rows), bool, rows.size)
        found: list[Learning] = []
        judged: list[Learning] = []
        scoped = np.flatnonzero(in_scope)
        for i in scoped[np.argsort(-sims[scoped])][:_SCOPE_CANDIDATES]:
            close = bool(sims[i] >= settings.contradiction_similarity)
            if not (close or owner):
                break
            other = deps.store.get_learning(catalog.ids[int(rows[i])])
            if close and opposed(text, learning_text(other)):
                found.append(other)
            elif owner:
                judged.append(other)
        if judged:
            found += self._judge_contradictions(learning, text, judged)
        return found[:5]

    def _judge_contradictions(self, learning: Learning, text: str, candidates: list[Learning]) -> list[Learning]:
        """The same-scope candidates the owner's new rule replaces, judged by the LLM
        (``contradiction`` task; the OfflineLLM applies :func:`supersedes`). On an LLM failure
        the offline rule decides."""
        from graphmem.errors import LLMError
        from graphmem.llm.prompts import contradiction_request
        from graphmem.llm.schemas import ContradictionJudgement

        def item(l: Learning, content: str) -> dict[str, Any]:
            return {"content": content, "tool": l.tool, "entities": list(l.entities)}

        try:
            answer = self.deps.llm.generate(
                contradiction_request(item(learning, text), [item(c, learning_text(c)) for c in candidates]),
                ContradictionJudgement,
            )
            hits = {i for i in answer.replaces if 0 <= i < len(candidates)}
        except LLMError as e:
            log.error("graphmem: contradiction judgement failed, using the offline rule: %s", e)
            hits = {i for i, c in enumerate(candidates) if supersedes(
                text, learning.tool, learning.entities, learning_text(c), c.tool, c.entities)}
        return [c for i, c in enumerate(candidates) if i in hits]

    # --- writes -------------------------------------------------------------------------------
    def _link_derived(
        self, learning_id: str, derived: Sequence[tuple[str, str]], links: LearningLinks | None = None
    ) -> None:
        """DERIVED_FROM and FOR_OBJECTIVE edges (written here, with exactly the parameters each
        query uses; ``LearningLinks``' own event/objective edges are stripped by :func:`_plain`)."""
        store = self.deps.store
        if links is not None and links.source_event_id:
            store.link_derived(learning_id, "Event", links.source_event_id)
        if links is not None and links.objective_id:
            store.link_objective(learning_id, links.objective_id)
        for label, ident in derived:
            store.link_derived(learning_id, label, ident)

    def _insert(
        self, learning: Learning, links: LearningLinks, embedding: np.ndarray, derived: Sequence[tuple[str, str]],
        *, note: Transition | None = None,
    ) -> None:
        deps = self.deps
        with deps.store.transaction():
            deps.store.insert_learning(learning, embedding, _plain(links))
            self._link_derived(learning.id, derived, links)
            if note is not None:
                deps.store.log_transition(note)
            deps.on_learnings_changed([learning], change="created")
        deps.after_write()

    def _merge(
        self,
        existing: Learning,
        new: Learning,
        links: LearningLinks,
        embedding: np.ndarray,
        derived: Sequence[tuple[str, str]],
    ) -> Learning:
        """validations +1, links merged, the better wording kept; one transaction."""
        deps = self.deps
        now = deps.now()
        settings = deps.settings
        old_score = score_actionability(learning_text(existing), settings).score
        new_score = score_actionability(learning_text(new), settings).score
        reword = (new_score > old_score + 1e-9) or (
            abs(new_score - old_score) <= 1e-9 and new.confidence > existing.confidence
        )
        reword = reword and content_key(new.content) != content_key(existing.content)
        update: dict[str, Any] = {}
        if reword:
            update.update({"content": new.content, "recommendation": new.recommendation or existing.recommendation,
                           "applies_when": new.applies_when or existing.applies_when})
        if existing.kind == "observation" and new.kind in ADVICE_KINDS:
            update.update({"kind": new.kind})  # the advice wording wins over a bare observation
        merged = merged_learning(existing, new, now).model_copy(update=update)
        extra = LearningLinks(
            tool=new.tool if new.tool and new.tool != existing.tool else None,
            topics=[t for t in new.topics if t not in existing.topics],
            entities=[e for e in new.entities if e not in existing.entities],
            objective_type=new.objective_type if new.objective_type != existing.objective_type else None,
            objective_id=links.objective_id,
            source_event_id=links.source_event_id,
        )
        new_vector = np.asarray(deps.embedder.embed([learning_text(merged)])[0], np.float32) if reword else None
        with deps.store.transaction():
            deps.store.save_learning(merged, new_vector)
            deps.store.add_links(merged.id, _plain(extra))
            self._link_derived(merged.id, derived, extra)
            deps.on_learnings_changed([merged], change="merged")
        deps.after_write()
        return merged

    def _insert_conflicting(
        self,
        learning: Learning,
        links: LearningLinks,
        embedding: np.ndarray,
        derived: Sequence[tuple[str, str]],
        olders: list[Learning],
    ) -> CurationResult:
        """Insert ``learning``; it SUPERSEDES the olders (user feedback) or CONTRADICTS them."""
        deps = self.deps
        now = deps.now()
        supersede = learning.source_type == "user_feedback"
        changed: list[Learning] = []
        if not supersede:
            learning = learning.model_copy(update={"contradictions": learning.contradictions + len(olders)})
        with deps.store.transaction():
            deps.store.insert_learning(learning, embedding, _plain(links))
            self._link_derived(learning.id, derived, links)
            for old in olders:
                if supersede:
                    reason = f"the owner's newer feedback {learning.content[:80]!r} replaces it"
                    updated = LearningService(deps).archive_superseded(old, learning.id, reason)
                else:
                    reason = "opposite advice on the same tool/entity"
                    updated = old.model_copy(update={"contradictions": old.contradictions + 1, "updated_at": now})
                    deps.store.save_learning(updated)
                    deps.store.link_conflict("CONTRADICTS", learning.id, old.id, reason, now)
                changed.append(updated)
            deps.on_learnings_changed([learning], change="created")
            if changed:
                deps.on_learnings_changed(changed, change="retired" if supersede else "updated")
        deps.after_write()
        return CurationResult(learning, "superseded" if supersede else "contradicted", [o.id for o in olders])


__all__ = [
    "ADVICE_KINDS",
    "CurationResult",
    "Curator",
    "learning_text",
    "looks_like_injection",
    "merged_learning",
    "opposed",
    "polarity",
    "subject_overlap",
]
