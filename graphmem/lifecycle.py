"""The lifecycle cycle: windows and the status state machine, hypotheses, pruning, tiers, decay.

:func:`run_cycle` (``Memory.run_cycle()``, ``graphmem cycle``) runs, in this order:

1. **Windows and the state machine** (seed 000). A learning's window is the last
   ``window_size`` outcomes of contexts that showed it and credited it (not those whose outcome
   named other learnings in ``used=``, nor a rank share below ``credit_min_share``; a tag that
   differs from the outcome counts as the tag, see :func:`outcome_quality`). It *passes* when it holds at least
   ``window_min_samples`` outcomes, mean quality ≥ ``promote_quality``, pass rate ≥
   ``promote_pass_rate``, fallback rate ≤ ``promote_max_fallback_rate`` and mean regenerate
   count ≤ ``promote_max_regenerate``; it *fails* when it holds enough outcomes and does not pass.
   A window is only counted when it holds outcomes newer than the last counted one
   (``Learning.window_mark``), so streaks advance at most once per new evidence per cycle.
   Streaks: a pass sets ``pass_streak += 1, fail_streak = 0`` and a fail the reverse. Moves:
   shadow → candidate → canary (allocation ``canary_min_allocation``) → active (allocation 1)
   after ``promotion_streak`` passes; active → canary (allocation 0.2) → candidate after
   ``demotion_streak`` fails; candidate | shadow → disabled after ``disable_streak`` fails.
   With the quality prior on, a learning whose record says it helps (helpful > harmful,
   :func:`record_holds`; ``record_holds_status``) is not demoted by failing windows.
   A move resets the streak that caused it.
2. **Hypothesis → belief** (seed 003 system 8): a ``hypothesis`` whose accuracy
   helpful / (helpful + harmful) is > 0.70 over ≥ 3 outcomes becomes a ``rule`` (a belief),
   status active, no TTL; < 0.30 over ≥ 3 is disabled with a warning.
3. **Pruning** (seed 004): never a rule/prompt/checklist with confidence ≥ 0.9; otherwise a
   learning past its ``ttl_days``, or with confidence < 0.3 and older than 30 days, or superseded,
   is archived (tier archive, status disabled). Nothing is deleted.
4. **Tiers** (seed 003 system 4): pinned when validations ≥ 10 and net positive; archive when
   (stale: no validation for 30 days and validations < 5) or (contradictions > 0 and
   contradictions ≥ validations) or (confidence < 0.3 and validations < 3), never before the
   learning is 7 days old; active otherwise. Disabled learnings keep their tier.
5. **Decay** (seed 004): confidence loses ``confidence_decay_per_day`` per day without
   reinforcement (validation or application) after ``confidence_decay_grace_days``; pinned and
   disabled learnings do not decay; decay never compounds (``Learning.decayed_at``).

6. **Prompt A/B tests** (seed 004): decided by :meth:`graphmem.prompts.PromptService.decide`.
7. **Distillation** (seed 004): clusters of similar episodes become rules (:mod:`graphmem.distill`).
8. **Bullet evolution** (seed 002): learnings that keep failing are rewritten by crossover
   (:mod:`graphmem.evolution`).
   Then **clearly harmful learnings retire**: a live, unpinned learning whose ratings say with
   confidence that it fails more than it helps (:func:`clearly_harmful_record`: the Wilson upper
   bound, z = ``harmful_z``, of helpful / (helpful + harmful) below ``harmful_max_success``, the
   test ranking already drops them by) gets status disabled, tier archive and a Transition saying
   why, so it stops costing a ranking slot and shows up as retired in insights. Off with
   ``retire_harmful_in_cycle=False``, the quality prior off, or ``harmful_max_success=0``.
9. **Weak domains and domain evolution** (seed 003 systems 4 and 9): the weakness trainer proposes
   candidate lessons for weak domains (:mod:`graphmem.weakness`) and a domain snapshot records
   follow rates, events and gaps (:mod:`graphmem.domain_evolution`).

Every status/tier change goes through :meth:`graphmem.learnings.LearningService.apply_changes`: version + 1 and a Transition.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from graphmem.config import Settings
from graphmem.improve import ImproveService
from graphmem.learn.screening import classify_text
from graphmem.learnings import LearningService
from graphmem.models import Learning, Transition
from graphmem.outcomes import clearly_harmful_record, wilson_upper_bound
from graphmem.store.loop import WindowOutcome
from graphmem.tuning import TuningService

if TYPE_CHECKING:
    from graphmem.deps import Deps

WindowVerdict = Literal["pass", "fail", "none"]
RATING_QUALITY = {"good": 1.0, "okay": 0.5, "bad": 0.0}
FALLBACK_TAGS = frozenset({"fallback"})
REGENERATE_TAGS = frozenset({"retry", "regenerate", "try_again", "try-again"})
PROMOTE = {"shadow": "candidate", "candidate": "canary", "canary": "active"}
DEMOTE = {"active": "canary", "canary": "candidate"}
NEVER_PRUNE_KINDS = frozenset({"rule", "prompt", "checklist"})
_DAY = timedelta(days=1)


class Change(BaseModel):
    """One change a cycle made to a learning."""

    learning_id: str
    field: str
    old: str
    new: str
    reason: str = ""


class WindowStats(BaseModel):
    """A learning's outcome window and its verdict."""

    learning_id: str = ""
    sample: int = 0
    quality: float = 0.0
    pass_rate: float = 0.0
    fallback_rate: float = 0.0
    regenerate: float = 0.0
    verdict: WindowVerdict = "none"

    def describe(self) -> str:
        """A one-line account used as the transition reason."""
        return (
            f"window {self.verdict}: n={self.sample} quality={self.quality:.2f} "
            f"pass_rate={self.pass_rate:.2f} fallback={self.fallback_rate:.2f} regen={self.regenerate:.2f}"
        )


class CycleReport(BaseModel):
    """What one run of the cycle changed."""

    started_at: datetime
    windows: list[WindowStats] = Field(default_factory=list)
    transitions: list[Change] = Field(default_factory=list)
    beliefs: list[Change] = Field(default_factory=list)
    invalidated: list[Change] = Field(default_factory=list)
    pruned: list[Change] = Field(default_factory=list)
    tier_changes: list[Change] = Field(default_factory=list)
    decayed: list[Change] = Field(default_factory=list)
    prompts: list[Change] = Field(default_factory=list)  # A/B tests decided (graphmem/prompts.py)
    distilled: list[Change] = Field(default_factory=list)  # rules distilled (graphmem/distill.py)
    evolved: list[Change] = Field(default_factory=list)  # failing learnings evolved (graphmem/evolution.py)
    tuned: list[Change] = Field(default_factory=list)  # settings an auto-tuning step kept (graphmem/tuning.py)
    weakness: list[Change] = Field(default_factory=list)  # lessons from weak domains (graphmem/weakness.py)
    domains: list[Change] = Field(default_factory=list)  # domain events (graphmem/domain_evolution.py)
    warnings: list[str] = Field(default_factory=list)

    @property
    def changed(self) -> int:
        """How many changes the cycle made."""
        return sum(len(x) for x in (self.transitions, self.beliefs, self.invalidated, self.pruned,
                                    self.tier_changes, self.decayed, self.prompts, self.distilled, self.evolved,
                                    self.tuned, self.weakness, self.domains))

    def rows(self) -> list[dict[str, Any]]:
        """Every change as a table row (section, learning, field, old, new, reason)."""
        out = []
        for section in ("transitions", "beliefs", "invalidated", "pruned", "tier_changes", "decayed", "prompts", "distilled", "evolved",
                        "tuned", "weakness", "domains"):
            for c in getattr(self, section):
                out.append({"section": section, "learning": c.learning_id[:8], "field": c.field,
                            "old": c.old, "new": c.new, "reason": c.reason})
        return out


# --- windows and the state machine (seed 000) --------------------------------------------------
VERDICT_QUALITY = {"accepted": 1.0, "neutral": 0.5, "rejected": 0.0}


def _outcome_verdict(o: WindowOutcome) -> str:
    if o.rating in RATING_QUALITY:
        return {"good": "accepted", "bad": "rejected"}.get(o.rating, "neutral")
    return {"success": "accepted", "failure": "rejected"}.get(o.outcome or "", "neutral")


def outcome_quality(o: WindowOutcome) -> float:
    """Mean of the outcome's signals: success 1 / failure 0, rating good 1 / okay 0.5 / bad 0.

    When the learning was tagged with a verdict other than the outcome's (``harmful=`` on a
    success, ``helpful=`` on a failure), the tag decides: accepted 1, neutral 0.5, rejected 0.
    """
    if o.verdict in VERDICT_QUALITY and o.verdict != _outcome_verdict(o):
        return VERDICT_QUALITY[o.verdict]
    signals = []
    if o.outcome in ("success", "failure"):
        signals.append(1.0 if o.outcome == "success" else 0.0)
    if o.rating in RATING_QUALITY:
        signals.append(RATING_QUALITY[o.rating])
    return sum(signals) / len(signals) if signals else 0.5


def evaluate_window(outcomes: list[WindowOutcome], s: Settings, learning_id: str = "") -> WindowStats:
    """The window's figures and verdict (an outcome passes when its quality is ≥ 0.5)."""
    n = len(outcomes)
    if n == 0:
        return WindowStats(learning_id=learning_id)
    qualities = [outcome_quality(o) for o in outcomes]
    stats = WindowStats(
        learning_id=learning_id,
        sample=n,
        quality=sum(qualities) / n,
        pass_rate=sum(1 for q in qualities if q >= 0.5) / n,
        fallback_rate=sum(1 for o in outcomes if FALLBACK_TAGS & set(o.reasons)) / n,
        regenerate=sum(sum(1 for t in o.reasons if t in REGENERATE_TAGS) for o in outcomes) / n,
    )
    if n < s.window_min_samples:
        return stats
    passes = (
        stats.quality >= s.promote_quality
        and stats.pass_rate >= s.promote_pass_rate
        and stats.fallback_rate <= s.promote_max_fallback_rate
        and stats.regenerate <= s.promote_max_regenerate
    )
    return stats.model_copy(update={"verdict": "pass" if passes else "fail"})


def step(learning: Learning, verdict: WindowVerdict, s: Settings) -> dict[str, Any]:
    """The changes one counted window makes to a learning (streaks and maybe its status)."""
    if verdict == "none" or learning.status == "disabled":
        return {}
    if verdict == "pass":
        changes: dict[str, Any] = {"pass_streak": learning.pass_streak + 1, "fail_streak": 0}
        if changes["pass_streak"] >= s.promotion_streak and learning.status in PROMOTE:
            new = PROMOTE[learning.status]
            changes.update(status=new, pass_streak=0)
            if new == "canary":
                changes["canary_allocation"] = s.canary_min_allocation
            elif new == "active":
                changes["canary_allocation"] = 1.0
        return changes
    changes = {"fail_streak": learning.fail_streak + 1, "pass_streak": 0}
    streak = changes["fail_streak"]
    if learning.status in DEMOTE and streak >= s.demotion_streak:
        if record_holds(learning, s):
            return changes  # the record says it helps: it keeps its status (the streak still counts)
        new = DEMOTE[learning.status]
        changes.update(status=new, fail_streak=0)
        if new == "canary":
            changes["canary_allocation"] = s.canary_min_allocation
    elif learning.status in ("candidate", "shadow") and streak >= s.disable_streak:
        changes.update(status="disabled", fail_streak=0)
    return changes


def record_holds(learning: Learning, s: Settings) -> bool:
    """True when, with the quality prior on (``record_holds_status``), the learning's record says
    it helps more often than it hurts (helpful > harmful): failing windows then do not demote it.
    The windows' bar (``promote_pass_rate``) is for promotion; under noisy outcomes a learning that
    mostly helps fails it now and then, and on canary it would be shown a fifth of the time while
    the agent goes without advice. Learnings that do hurt are the record's to drop and retire."""
    return s.quality_prior_enabled and s.record_holds_status and learning.helpful > learning.harmful


def _windows(deps: Deps, report: CycleReport) -> None:
    s = deps.settings
    for lid in deps.store.learnings_with_new_outcomes(deps.user):
        learning = deps.store.get_learning(lid)
        outcomes = deps.store.outcome_window(lid, s.window_size)
        if not outcomes:
            continue
        stats = evaluate_window(outcomes, s, lid)
        report.windows.append(stats)
        changes = step(learning, stats.verdict, s)
        if changes:
            updated = LearningService(deps).apply_changes(learning, changes, reason=stats.describe())
            if updated.status != learning.status:
                report.transitions.append(
                    Change(learning_id=lid, field="status", old=learning.status, new=updated.status,
                           reason=stats.describe())
                )
        deps.store.set_window_mark(lid, max(o.outcome_at for o in outcomes))


# --- hypotheses (seed 003 system 8) ------------------------------------------------------------
def _hypotheses(deps: Deps, learnings: dict[str, Learning], report: CycleReport) -> None:
    s = deps.settings
    for lid, l in list(learnings.items()):
        if l.kind != "hypothesis" or l.status == "disabled":
            continue
        samples = l.helpful + l.harmful
        if samples == 0:
            continue
        accuracy = l.helpful / samples
        why = f"hypothesis accuracy {accuracy:.2f} over {samples} outcomes"
        if accuracy > s.hypothesis_promote_accuracy and samples >= s.hypothesis_promote_min_samples:
            updated = LearningService(deps).apply_changes(
                l, {"kind": "rule", "status": "active", "ttl_days": s.ttl_days.get("rule")}, reason=why
            )
            with deps.store.transaction():
                deps.store.log_transition(Transition(learning_id=lid, field="kind", old="hypothesis", new="rule",
                                                    reason=why, version=updated.version, created_at=deps.now()))
            report.beliefs.append(Change(learning_id=lid, field="kind", old="hypothesis", new="rule", reason=why))
            learnings[lid] = updated
        elif accuracy < s.hypothesis_invalidate_accuracy and samples >= s.hypothesis_invalidate_min_samples:
            learnings[lid] = LearningService(deps).apply_changes(l, {"status": "disabled"}, reason=why + ": invalidated")
            report.invalidated.append(Change(learning_id=lid, field="status", old=l.status, new="disabled", reason=why))
            report.warnings.append(f"hypothesis invalidated ({why}): {l.content[:120]}")


# --- onboarding (the gap seed 000 names) ---------------------------------------------------------
def _onboard(deps: Deps, learnings: dict[str, Learning], report: CycleReport) -> None:
    """candidate → canary once re-derived ``candidate_promote_validations`` times.

    context() never shows shadow or candidate learnings, so they collect no outcome windows;
    without another path nothing new would ever reach the stage (seed 000's known gap). The
    evidence used instead, for candidates without any outcome: the same rule derived again in
    later episodes (the curator merges it, counting a validation). Once on canary it is sampled by its allocation and judged by real
    outcome windows like everything else.
    """
    s = deps.settings
    if s.candidate_promote_validations <= 0:
        return
    for lid, l in list(learnings.items()):
        if l.status != "candidate" or l.validations < s.candidate_promote_validations or l.contradictions:
            continue
        if classify_text(f"{l.content} {l.recommendation or ''} {l.applies_when or ''}", s).decision != "pass":
            continue  # held back by the injection screen: only a person promotes it
        if any(t.reason.startswith("injection screen") for t in deps.store.transitions(lid)):
            continue
        if l.helpful + l.harmful:  # it has outcome evidence: the windows decide
            continue
        why = f"re-derived {l.validations} times ({s.candidate_promote_validations} needed to go on canary)"
        learnings[lid] = LearningService(deps).apply_changes(l, {"status": "canary"}, reason=why)
        report.transitions.append(Change(learning_id=lid, field="status", old="candidate", new="canary", reason=why))


# --- clearly harmful learnings retire ------------------------------------------------------------
def _retire_harmful(deps: Deps, report: CycleReport) -> None:
    s = deps.settings
    if not (s.retire_harmful_in_cycle and s.quality_prior_enabled) or deps.store.read_only:
        return
    for l in deps.store.find_learnings(user_id=deps.user, include_shared=False):
        if l.status == "disabled" or l.superseded_by:
            continue
        why = clearly_harmful_record(l, s)
        if why is None:
            continue
        LearningService(deps).apply_changes(l, {"status": "disabled", "tier": "archive"}, reason="retired: " + why)
        report.transitions.append(Change(learning_id=l.id, field="status", old=l.status, new="disabled", reason=why))


# --- pruning (seed 004) --------------------------------------------------------------------------
def prune_reason(l: Learning, now: datetime, s: Settings) -> str | None:
    """Why ``l`` should be archived (seed 004 should_prune), or None to keep it."""
    if l.confidence >= s.never_prune_confidence and l.kind in NEVER_PRUNE_KINDS:
        return None
    age = (now - l.created_at) / _DAY
    if l.ttl_days and age > l.ttl_days:
        return f"ttl expired: {age:.0f} days old, ttl {l.ttl_days} days"
    if l.confidence < s.prune_low_confidence and age > s.prune_low_confidence_age_days:
        return f"low confidence {l.confidence:.2f} at {age:.0f} days old"
    if l.superseded_by:
        return f"superseded by {l.superseded_by}"
    return None


def _prune(deps: Deps, learnings: dict[str, Learning], now: datetime, report: CycleReport) -> None:
    for lid, l in list(learnings.items()):
        if l.status == "disabled" and l.tier == "archive":
            continue
        why = prune_reason(l, now, deps.settings)
        if why is None:
            continue
        learnings[lid] = LearningService(deps).apply_changes(l, {"status": "disabled", "tier": "archive"}, reason="pruned: " + why)
        report.pruned.append(Change(learning_id=lid, field="status/tier", old=f"{l.status}/{l.tier}",
                                    new="disabled/archive", reason=why))


# --- tiers (seed 003 system 4) ---------------------------------------------------------------------
def classify_tier(l: Learning, now: datetime, s: Settings) -> tuple[str, str]:
    """(tier, reason) for one learning under seed 003's rules."""
    if l.validations >= s.pinned_min_validations and l.helpful >= l.harmful and l.validations > l.contradictions:
        return "pinned", f"{l.validations} validations, net positive"
    age = (now - l.created_at) / _DAY
    if age >= s.archive_min_age_days:
        idle = (now - (l.last_validated_at or l.created_at)) / _DAY
        if idle > s.archive_stale_days and l.validations < s.archive_stale_max_validations:
            return "archive", f"stale: no validation for {idle:.0f} days, {l.validations} validations"
        if l.contradictions > 0 and l.contradictions >= l.validations:
            return "archive", f"contradicted: {l.contradictions} contradictions vs {l.validations} validations"
        if l.confidence < s.archive_low_confidence and l.validations < s.archive_low_confidence_max_validations:
            return "archive", f"low confidence {l.confidence:.2f} with {l.validations} validations"
    return "active", "in use"


def _tiers(deps: Deps, learnings: dict[str, Learning], now: datetime, report: CycleReport) -> None:
    for lid, l in list(learnings.items()):
        if l.status == "disabled":
            continue
        tier, why = classify_tier(l, now, deps.settings)
        if tier != l.tier:
            learnings[lid] = LearningService(deps).apply_changes(l, {"tier": tier}, reason="tier: " + why)
            report.tier_changes.append(Change(learning_id=lid, field="tier", old=l.tier, new=tier, reason=why))


# --- decay (seed 004) -----------------------------------------------------------------------------
def decay_amount(l: Learning, decayed_at: datetime | None, now: datetime, s: Settings) -> float:
    """Confidence to take off now: per day idle past the grace period, not counted twice."""
    if s.confidence_decay_per_day <= 0 or l.status == "disabled" or l.tier == "pinned":
        return 0.0
    ref = max(t for t in (l.last_validated_at, l.last_applied_at, l.created_at) if t is not None)
    start = ref + timedelta(days=s.confidence_decay_grace_days)
    if decayed_at is not None and decayed_at > start:
        start = decayed_at
    days = (now - start) / _DAY
    return s.confidence_decay_per_day * days if days > 0 else 0.0


def _decay(deps: Deps, learnings: dict[str, Learning], now: datetime, report: CycleReport) -> None:
    marks = deps.store.decay_marks(deps.user)
    for lid, l in list(learnings.items()):
        amount = decay_amount(l, marks.get(lid), now, deps.settings)
        if amount <= 0:
            continue
        new = round(max(0.0, l.confidence - amount), 6)
        if new != l.confidence:
            learnings[lid] = LearningService(deps).apply_changes(l, {"confidence": new}, reason="decay")
            report.decayed.append(Change(learning_id=lid, field="confidence", old=f"{l.confidence:.4f}",
                                         new=f"{new:.4f}", reason=f"no reinforcement: -{amount:.4f}"))
        deps.store.set_decayed_at(lid, now)


def run_cycle(deps: Deps) -> CycleReport:
    """Run windows, hypotheses, pruning, tiers, decay, prompt A/B tests and distillation once
    for the Memory's user."""
    now = deps.now()
    report = CycleReport(started_at=now)
    _windows(deps, report)
    learnings = {l.id: l for l in deps.store.find_learnings(user_id=deps.user, include_shared=False)}
    _hypotheses(deps, learnings, report)
    _onboard(deps, learnings, report)
    _prune(deps, learnings, now, report)
    _tiers(deps, learnings, now, report)
    _decay(deps, learnings, now, report)
    _prompt_tests(deps, report)
    for rule in ImproveService(deps).distill().rules:  # graphmem/distill.py
        report.distilled.append(Change(learning_id=rule.rule_id, field="members", old=str(len(rule.members) - len(rule.new_members)),
                                       new=str(len(rule.members)), reason=("created: " if rule.created else "extended: ") + rule.content[:120]))
    if deps.settings.evolve_in_cycle:
        for res in ImproveService(deps).evolve().evolved:  # graphmem/evolution.py
            report.evolved.append(Change(learning_id=res.learning_id, field="superseded_by", old="",
                                         new=str(res.evolved_id), reason=res.reason))
    _retire_harmful(deps, report)
    _domains(deps, report)
    if deps.settings.auto_tune and not deps.store.read_only:
        _tune(deps, report)
    return report


def _tune(deps: Deps, report: CycleReport) -> None:
    """One auto-tuning step (graphmem/tuning.py); a failure becomes a warning, not a failed cycle."""
    from graphmem.errors import GraphmemError

    try:
        step = TuningService(deps).tune()
    except GraphmemError as e:
        report.warnings.append(f"auto-tuning skipped: {e}")
        return
    if step.status == "rolled_back":
        report.warnings.append(f"auto-tuning step rolled back: {step.reason}")
    elif step.status == "kept":
        report.tuned += [Change(learning_id=step.snapshot_id or "", field=r.name, old=f"{r.old:g}", new=f"{r.new:g}",
                                reason=r.reason) for r in step.recommendations]


def _domains(deps: Deps, report: CycleReport) -> None:
    """The weakness trainer and a domain snapshot (graphmem/weakness.py, graphmem/domain_evolution.py)."""
    from graphmem.domain_evolution import DomainEvolution
    from graphmem.errors import LLMError
    from graphmem.weakness import WeaknessTrainer

    if deps.settings.weakness_in_cycle:
        try:
            lessons = WeaknessTrainer(deps, on_changed=deps.changed_hook).run().lessons
        except LLMError as err:  # the LLM failed: nothing was written; the next cycle asks again
            lessons = []
            report.warnings.append(f"weakness trainer skipped: the LLM failed: {err}")
        if lessons:
            deps.after_write()
        for lesson in lessons:
            report.weakness.append(Change(learning_id=lesson.learning_id, field="status" if lesson.created else "validations",
                                          old="" if lesson.created else "re-derived", new="candidate" if lesson.created else "+1",
                                          reason=f"{lesson.domain}: {lesson.content[:120]}"))
    if deps.settings.domains_in_cycle:
        for e in DomainEvolution(deps).run().events:
            report.domains.append(Change(learning_id="", field=e.kind, old="" if e.old is None else f"{e.old:.3f}",
                                         new="" if e.new is None else f"{e.new:.3f}", reason=f"{e.domain}: {e.detail}"))


def _prompt_tests(deps: Deps, report: CycleReport) -> None:
    """Decide the prompt A/B tests that can be decided (graphmem/prompts.py)."""
    for t in ImproveService(deps).prompt_service().decide():
        assert t.candidate is not None and t.active is not None
        winner = t.candidate if t.decision == "promote" else t.active
        loser = t.active if t.decision == "promote" else t.candidate
        report.prompts.append(Change(learning_id=loser.id, field="prompt_state", old=loser.state, new="deprecated",
                                     reason=f"{t.decision}: {winner.label} over {loser.label}; {t.reason}"))


__all__ = [
    "Change",
    "CycleReport",
    "WindowStats",
    "classify_tier",
    "clearly_harmful_record",
    "decay_amount",
    "evaluate_window",
    "outcome_quality",
    "prune_reason",
    "run_cycle",
    "step",
    "wilson_upper_bound",
]
