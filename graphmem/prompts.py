"""Prompt versions with A/B tests (seed 004 "Prompt Versioning", seed 000 canary sampling).

A prompt version is a Learning of kind ``prompt`` for a *role* (``"orchestrator"``...), numbered
1, 2, 3... within the role and in one of three states (schema 008, ``Learning.prompt_state``):

- ``active``: the version served by default. :meth:`PromptService.active` returns the highest
  ``confidence × success rate`` non-deprecated version that is not under test (seed 004).
- ``candidate``: a new version under an A/B test. :meth:`PromptService.serve` sends the share
  ``Settings.prompt_ab_allocation`` of sessions to it: the split hashes (role, session id), so
  one session always gets the same version.
- ``deprecated``: the loser of a test, kept with ``superseded_by`` (the winner), a SUPERSEDES edge
  from the winner, tier archive and status disabled. Never deleted.

Each serve is a ``SERVED_IN`` edge from the version to the context it was served in (a context
from ``Memory.context()`` or one made for the serve). ``Memory.record_outcome(context_id)`` credits
the version served there: helpful/harmful, confidence and score move as for any learning, and
the serve's verdict is stored on the edge (implicit outcomes do not credit prompts).

The test (run by the lifecycle cycle, :meth:`PromptService.decide`) compares the two arms'
outcomes since the candidate was added with a Beta-Bernoulli model (uniform priors): once both
arms have ``prompt_ab_min_trials`` outcomes, the candidate is promoted when the posterior
P(candidate better) ≥ ``prompt_ab_confidence``, rejected when P(active better) ≥ it, and
dropped as inconclusive when both arms reached ``prompt_ab_max_trials``. The decision is
re-checked at every cycle, so the default confidence is 0.99: at 0.95 the repeated looks promoted
a truly equal candidate in 10-14 % of simulated runs (see :func:`simulate_ab`).

Prompt versions have status ``shadow``: context() never hands them out as advice.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.inputs import optional_string, require_text
from graphmem.learn.screening import classify_text
from graphmem.models import Learning, LearningLinks, Transition, new_id

if TYPE_CHECKING:
    from graphmem.config import Settings
    from graphmem.embed import Embedder
    from graphmem.store import KuzuGraphStore

PromptState = Literal["active", "candidate", "deprecated"]
Decision = Literal["promote", "reject", "inconclusive", "continue", "none"]


class PromptVersion(BaseModel):
    """One version of a role's prompt, with its performance."""

    id: str
    role: str
    version: int
    label: str  # "<role>_v<version>"
    text: str
    state: PromptState
    description: str | None = None
    source_type: str = "observation"
    confidence: float
    helpful: int = 0
    harmful: int = 0
    success_rate: float = 0.5  # helpful / (helpful + harmful); 0.5 when never rated
    served: int = 0
    superseded_by: str | None = None
    created_at: datetime

    @property
    def selection_score(self) -> float:
        """confidence × success rate: what :meth:`PromptService.active` maximises (seed 004)."""
        return self.confidence * self.success_rate


class PromptServe(BaseModel):
    """The prompt one context got: pass ``context_id`` to ``record_outcome``."""

    context_id: str
    role: str
    version_id: str
    label: str
    version: int
    text: str
    arm: Literal["active", "candidate"]
    session_id: str | None = None


class ArmCounts(BaseModel):
    """Outcomes of one arm since the test began."""

    served: int = 0
    successes: int = 0
    failures: int = 0

    @property
    def trials(self) -> int:
        """Outcomes that count (accepted + rejected)."""
        return self.successes + self.failures


class ABTest(BaseModel):
    """Where a role's A/B test stands (or what the cycle decided)."""

    role: str
    active: PromptVersion | None = None
    candidate: PromptVersion | None = None
    active_counts: ArmCounts = Field(default_factory=ArmCounts)
    candidate_counts: ArmCounts = Field(default_factory=ArmCounts)
    p_candidate_better: float | None = None
    decision: Decision = "none"
    reason: str = ""


# --- the statistics -------------------------------------------------------------------------------
def _lbeta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def p_better(successes_a: int, failures_a: int, successes_b: int, failures_b: int) -> float:
    """P(p_B > p_A) for A ~ Beta(1 + s_A, 1 + f_A), B ~ Beta(1 + s_B, 1 + f_B), exactly.

    The closed form for integer parameters: sum over i < α_B of
    B(α_A + i, β_A + β_B) / ((β_B + i) B(1 + i, β_B) B(α_A, β_A)).
    """
    a_a, b_a, a_b, b_b = 1 + successes_a, 1 + failures_a, 1 + successes_b, 1 + failures_b
    total = 0.0
    base = _lbeta(a_a, b_a)
    for i in range(a_b):
        total += math.exp(_lbeta(a_a + i, b_a + b_b) - math.log(b_b + i) - _lbeta(1 + i, b_b) - base)
    return min(1.0, max(0.0, total))


def ab_decision(active: ArmCounts, candidate: ArmCounts, s: Settings) -> tuple[Decision, float, str]:
    """(decision, P(candidate better), reason) under the Settings' thresholds."""
    p = p_better(active.successes, active.failures, candidate.successes, candidate.failures)
    figures = (f"candidate {candidate.successes}/{candidate.trials} vs active {active.successes}/{active.trials}, "
               f"P(candidate better) = {p:.3f}")
    if min(active.trials, candidate.trials) < s.prompt_ab_min_trials:
        return "continue", p, f"{figures}; {s.prompt_ab_min_trials} outcomes per arm needed"
    if p >= s.prompt_ab_confidence:
        return "promote", p, f"{figures} >= {s.prompt_ab_confidence}"
    if 1.0 - p >= s.prompt_ab_confidence:
        return "reject", p, f"{figures}: the active version is better with P >= {s.prompt_ab_confidence}"
    if min(active.trials, candidate.trials) >= s.prompt_ab_max_trials:
        return "inconclusive", p, f"{figures}: no difference after {s.prompt_ab_max_trials} outcomes per arm"
    return "continue", p, figures


def bucket(role: str, key: str) -> float:
    """A deterministic number in [0, 1) for (role, session key): the A/B split."""
    digest = hashlib.sha256(f"{role}\x1f{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def simulate_ab(
    p_active: float, p_candidate: float, s: Settings, *, seed: int, cycle_every: int = 50,
    max_sessions: int = 20_000, role: str = "sim",
) -> tuple[Decision, int]:
    """One simulated test: sessions split by :func:`bucket`, each a success with its arm's true
    rate, the decision checked every ``cycle_every`` sessions. Returns (decision, sessions used)."""
    rng = random.Random(seed)
    arms = {"active": ArmCounts(), "candidate": ArmCounts()}
    for i in range(max_sessions):
        arm = "candidate" if bucket(role, f"{seed}-{i}") < s.prompt_ab_allocation else "active"
        won = rng.random() < (p_candidate if arm == "candidate" else p_active)
        c = arms[arm]
        c.served += 1
        if won:
            c.successes += 1
        else:
            c.failures += 1
        if (i + 1) % cycle_every == 0:
            decision, _, _ = ab_decision(arms["active"], arms["candidate"], s)
            if decision != "continue":
                return decision, i + 1
    return "continue", max_sessions


# --- the service -----------------------------------------------------------------------------------
_SUGGESTION = re.compile(r'^Add "(.+)" to the system prompt$')


class PromptService:
    """Prompt versions of one user: add, list, select, serve, credit, test, decide, propose."""

    def __init__(self, store: KuzuGraphStore, embedder: Embedder, settings: Settings,
                 now: Callable[[], datetime], user: str, llm: Any = None) -> None:
        self.store, self.embedder, self.settings, self.now, self.user, self.llm = (
            store, embedder, settings, now, user, llm)

    # --- reading -----------------------------------------------------------------------------
    def versions(self, role: str | None = None) -> list[PromptVersion]:
        """Every version (of one role), by role then version number."""
        role = optional_string("role", role)
        rows = self.store.prompt_rows(self.user, role)
        learnings = {l.id: l for l in self.store.get_learnings([r["id"] for r in rows])}
        served = self.store.serve_counts([r["id"] for r in rows])
        return [_version(learnings[r["id"]], r, served[r["id"]]["served"]) for r in rows if r["id"] in learnings]

    def _role_versions(self, role: str) -> list[PromptVersion]:
        found = self.versions(require_text("role", role, max_chars=200))
        if not found:
            raise NotFoundError(f"no prompt for role {role!r}; add one with add_prompt(role, text)")
        return found

    def active(self, role: str) -> PromptVersion:
        """The highest confidence × success-rate non-deprecated version not under test (if every
        live version is under test: the best of those). NotFoundError for an unknown role."""
        found = self._role_versions(role)
        live = [v for v in found if v.state == "active"] or [v for v in found if v.state == "candidate"]
        if not live:
            raise NotFoundError(f"every prompt version of role {role!r} is deprecated; add a new one")
        return max(live, key=lambda v: (v.selection_score, v.version))

    def candidate(self, role: str) -> PromptVersion | None:
        """The version under A/B test for the role, if any (the newest candidate)."""
        found = [v for v in self._role_versions(role) if v.state == "candidate"]
        return found[-1] if found else None

    # --- writing -----------------------------------------------------------------------------
    def add(self, role: str, text: str, *, activate: bool = False, description: str | None = None,
            source_type: str = "observation") -> PromptVersion:
        """A new version of the role's prompt: the first is active; later ones start an A/B test
        as the candidate, or (``activate``) replace the active version at once."""
        role = require_text("role", role, max_chars=200)
        text = require_text("text", text, max_chars=self.settings.max_content_chars)
        description = None if description is None else require_text("description", description, max_chars=1000)
        existing = self.versions(role)
        for v in existing:
            if v.text.strip() == text.strip() and v.state != "deprecated":
                raise InvalidInputError(f"this text is already {v.label} ({v.state}); change it or use that version")
        live_active = [v for v in existing if v.state == "active"]
        if not activate and live_active and any(v.state == "candidate" for v in existing):
            raise InvalidInputError(
                f"role {role!r} already has a candidate under test; let the cycle decide it, or pass "
                "activate=True (CLI: --activate) to replace the active version now"
            )
        state: PromptState = "active" if activate or not live_active else "candidate"
        now = self.now()
        version = max((v.version for v in existing), default=0) + 1
        learning = Learning(
            user_id=self.user, kind="prompt", content=text, applies_when=description,
            source_type=source_type, confidence=self.settings.prompt_initial_confidence,  # type: ignore[arg-type]
            status="shadow", ttl_days=None, created_at=now, updated_at=now,
        )
        vector = np.asarray(self.embedder.embed([text])[0], dtype=np.float32)
        with self.store.transaction():
            self.store.insert_learning(learning, vector, LearningLinks())
            self.store.set_prompt_fields(learning.id, role=role, version=version, state=state)
            if state == "active":
                for old in live_active:
                    self._deprecate(old, learning.id, f"replaced by {role}_v{version}", now)
        return _version(learning, {"role": role, "version": version, "state": state}, 0)

    def _deprecate(self, loser: PromptVersion, winner_id: str, reason: str, now: datetime) -> None:
        """Inside a transaction: the loser deprecated, superseded by the winner, archived."""
        learning = self.store.get_learning(loser.id)
        self.store.save_learning(learning.model_copy(update={
            "status": "disabled", "tier": "archive", "superseded_by": winner_id, "updated_at": now,
            "version": learning.version + 1,
        }))
        self.store.set_prompt_fields(loser.id, state="deprecated")
        self.store.link_conflict("SUPERSEDES", winner_id, loser.id, reason, now)
        self.store.log_transition(Transition(learning_id=loser.id, field="prompt_state", old=loser.state,
                                             new="deprecated", reason=reason, version=learning.version + 1,
                                             created_at=now))

    def serve(self, role: str, *, session_id: str | None = None, context_id: str | None = None) -> PromptServe:
        """The version this session gets (A/B split when a candidate is under test), recorded as
        served in ``context_id`` (a ``context()`` id the caller owns) or in a new context."""
        session_id = optional_string("session_id", session_id)
        active = self.active(role)
        candidate = self.candidate(role) if active.state == "active" else None
        ctx = context_id or new_id()
        key = session_id if session_id is not None else ctx
        chosen, arm = active, "active"
        if candidate is not None and bucket(active.role, key) < self.settings.prompt_ab_allocation:
            chosen, arm = candidate, "candidate"
        now = self.now()
        with self.store.transaction():
            if context_id is None:
                self.store.create_prompt_application(ctx, self.user, active.role, now)
            self.store.link_served(chosen.id, ctx, role=active.role, arm=arm, session_id=session_id, at=now)
        return PromptServe(context_id=ctx, role=active.role, version_id=chosen.id, label=chosen.label,
                           version=chosen.version, text=chosen.text, arm=arm,  # type: ignore[arg-type]
                           session_id=session_id)

    def credit(self, context_id: str, verdict: str) -> list[str]:
        """Credit the verdict (accepted | rejected | neutral) of a context's outcome to the prompt
        versions served in it; returns their ids. One transaction."""
        s, now = self.settings, self.now()
        credited: list[str] = []
        if not self.store.uncredited_serves(context_id):  # the common case: no prompt served there
            return credited
        with self.store.transaction():
            for lid in self.store.uncredited_serves(context_id):
                l = self.store.get_learning(lid)
                update: dict[str, Any] = {"times_applied": l.times_applied + 1, "last_applied_at": now,
                                          "updated_at": now}
                if verdict == "accepted":
                    update.update(helpful=l.helpful + 1, validations=l.validations + 1, last_validated_at=now,
                                  confidence=_clamp(l.confidence + s.accept_confidence_delta),
                                  score=_clamp(l.score + s.accept_score_delta))
                elif verdict == "rejected":
                    update.update(harmful=l.harmful + 1, confidence=_clamp(l.confidence + s.reject_confidence_delta),
                                  score=_clamp(l.score + s.reject_score_delta))
                self.store.save_learning(l.model_copy(update=update))
                self.store.set_serve_verdict(lid, context_id, verdict)
                credited.append(lid)
        return credited

    # --- the test ------------------------------------------------------------------------------
    def test(self, role: str) -> ABTest:
        """Where the role's A/B test stands: both arms' outcomes since the candidate was added,
        P(candidate better) and what the cycle would decide now."""
        active = self.active(role)
        candidate = self.candidate(role) if active.state == "active" else None
        if candidate is None:
            return ABTest(role=active.role, active=active, reason="no candidate under test")
        counts = self.store.serve_counts([active.id, candidate.id], since=candidate.created_at)
        arms = {k: ArmCounts(served=c["served"], successes=c["accepted"], failures=c["rejected"])
                for k, c in counts.items()}
        decision, p, reason = ab_decision(arms[active.id], arms[candidate.id], self.settings)
        return ABTest(role=active.role, active=active, candidate=candidate, active_counts=arms[active.id],
                      candidate_counts=arms[candidate.id], p_candidate_better=p, decision=decision, reason=reason)

    def decide(self) -> list[ABTest]:
        """The cycle step: decide every test that can be decided; returns those decided."""
        roles = sorted({r["role"] for r in self.store.prompt_rows(self.user) if r["state"] == "candidate"})
        decided = []
        for role in roles:
            t = self.test(role)
            if t.candidate is None or t.active is None or t.decision not in ("promote", "reject", "inconclusive"):
                continue
            now = self.now()
            with self.store.transaction():
                if t.decision == "promote":
                    self.store.set_prompt_fields(t.candidate.id, state="active")
                    self.store.log_transition(Transition(
                        learning_id=t.candidate.id, field="prompt_state", old="candidate", new="active",
                        reason="A/B test: " + t.reason, created_at=now))
                    self._deprecate(t.active, t.candidate.id, "A/B test: " + t.reason, now)
                else:
                    self._deprecate(t.candidate, t.active.id, f"A/B test {t.decision}: " + t.reason, now)
            decided.append(t)
        return decided

    # --- the reflector ----------------------------------------------------------------------------
    def propose(self, role: str, feedback: Iterable[str]) -> PromptVersion:
        """A candidate version written by the reflector from negative feedback on the active one
        (seed 004: reflection → prompt suggestion → new version under A/B test)."""
        from graphmem.llm.prompts import reflection_request
        from graphmem.llm.schemas import EpisodeReflection

        notes = [require_text("feedback", f, max_chars=self.settings.max_content_chars) for f in feedback]
        if not notes:
            raise InvalidInputError("propose_prompt needs at least one piece of negative feedback")
        if self.llm is None:
            raise InvalidInputError("propose_prompt needs an LLM")
        active = self.active(role)
        answer = self.llm.generate(
            reflection_request(f"the {active.role} prompt", active.text, False, [], "\n".join(notes)),
            EpisodeReflection,
        )
        lines = []
        for suggestion in answer.prompt_suggestions:
            m = _SUGGESTION.match(suggestion.strip())
            line = (m.group(1) if m else suggestion).strip()
            if line and line not in active.text and line not in lines:
                lines.append(line)
        if not lines:
            raise InvalidInputError("the reflector suggested no change to the prompt from this feedback")
        text = active.text.rstrip() + "\n" + "\n".join(f"- {line}" for line in lines)
        if classify_text(text, self.settings).decision != "pass":
            raise InvalidInputError("the proposed prompt looks like injected instructions; not stored")
        return self.add(active.role, text, description=f"reflected from feedback on {active.label}",
                        source_type="reflection")


def _clamp(x: float) -> float:
    return round(min(1.0, max(0.0, x)), 10)


def _version(l: Learning, row: dict[str, Any], served: int) -> PromptVersion:
    total = l.helpful + l.harmful
    return PromptVersion(
        id=l.id, role=row["role"], version=int(row["version"] or 0), label=f"{row['role']}_v{int(row['version'] or 0)}",
        text=l.content, state=row["state"] or "active", description=l.applies_when, source_type=l.source_type,
        confidence=l.confidence, helpful=l.helpful, harmful=l.harmful,
        success_rate=l.helpful / total if total else 0.5, served=served, superseded_by=l.superseded_by,
        created_at=l.created_at,
    )


__all__ = [
    "ABTest", "ArmCounts", "PromptServe", "PromptService", "PromptVersion", "ab_decision", "bucket",
    "p_better", "simulate_ab",
]
