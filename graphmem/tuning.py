"""Auto-tuning with a safety harness: measure health, move a few settings one step, keep or roll back.

One step (:meth:`TuningService.tune`):

1. **Health**: over the contexts of the last ``Settings.tune_window_days``, the follow rate
   (accepted / (accepted + rejected) outcomes), the share of contexts that got an outcome, the
   learnings shown per context, and the lifecycle's promotions and demotions; plus the retrieval
   guard on the labelled set (P@5, noise, median context latency) with the current settings.
2. **Recommendations** (:func:`recommend`): each moves one :data:`TUNABLES` entry by one step
   within its bounds, at most ``Settings.tune_max_changes`` per step.
3. **Snapshot**: the tunable values in effect go into a ``TuningSnapshot`` node (the last
   ``Settings.tune_keep_snapshots`` per user are kept).
4. **Apply and verify**: the new values are persisted (``TunedSettings``) and the guard runs again;
   when P@5 fell more than ``Settings.tune_p5_drop`` (10 %, relative) from before the step or from
   before the user's first step (so small steps cannot add up to a larger drop), or noise exceeds
   ``Settings.tune_noise_max`` (0), the snapshot is restored at once (status ``rolled_back``).

Precedence: a Memory's settings are the ``Settings`` it was constructed with; when
``Settings.auto_tune`` is True the user's persisted tuned values replace those tunable fields
(:func:`effective_settings`). With ``auto_tune`` False a tuning step still persists its values, but
no Memory uses them until it is opened with ``Settings(auto_tune=True)``.

The guard's evaluator is injectable (``evaluator(settings) -> GuardScore``); the default one
(:func:`labelled_set_evaluator`) runs the labelled set of ``benchmarks/data/learnings.json`` through
the ``benchmarks.tuning`` module of a source checkout.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from graphmem.config import Settings
from graphmem.errors import GraphmemError, InvalidInputError, NotFoundError, ReadOnlyError
from graphmem.models import new_id

if TYPE_CHECKING:
    from graphmem.deps import Deps
    from graphmem.embed import Embedder
    from graphmem.store import KuzuGraphStore


@dataclass(frozen=True)
class Tunable:
    """One setting the tuner may move: a ``Settings`` field, its bounds and its step."""

    name: str
    low: float
    high: float
    step: float
    why: str

    def clamp(self, value: float) -> float:
        """``value`` within [low, high], rounded to the step's precision."""
        return self._round(min(self.high, max(self.low, float(value))))

    def move(self, value: float, direction: int) -> float:
        """One step up (+1) or down (-1) from ``value``, within the bounds."""
        return self.clamp(float(value) + direction * self.step)

    def _round(self, value: float) -> float:
        digits = max(0, -math.floor(math.log10(self.step))) + 2 if self.step < 1 else 0
        return round(value, digits)


#: Every setting the tuner may change, with its bounds and step (one place).
TUNABLES: tuple[Tunable, ...] = (
    Tunable("min_success_rate", 0.1, 0.6, 0.05,
            "learnings rated below this success rate are dropped: raised when the agent rejects what it is shown"),
    Tunable("quality_weight", 0.05, 0.4, 0.05,
            "weight of the proven-quality prior in the ranking: raised when the agent rejects what it is shown"),
    Tunable("vector_only_min_similarity", 0.1, 0.4, 0.05,
            "floor on rows only the vector signal found: raised to cut weak matches, lowered to let more through"),
    Tunable("budget_learnings", 100, 600, 50,
            "token cap of the learnings section: raised when what is shown is followed"),
    Tunable("candidates_per_source", 20, 100, 10,
            "candidates each signal hands the fusion: lowered when contexts are slow"),
    Tunable("promote_quality", 0.6, 0.8, 0.02,
            "window quality a canary needs for promotion: raised when promotions get demoted again, "
            "lowered when canaries wait without promotions"),
)
_BY_NAME = {t.name: t for t in TUNABLES}


class GuardScore(BaseModel):
    """The retrieval guard on the labelled set for one Settings."""

    p5: float
    noise: int
    latency_ms: float = 0.0  # median context() time over the labelled queries
    queries: int = 0


Evaluator = Callable[[Settings], GuardScore]


class TuningHealth(BaseModel):
    """What the tuner measured before recommending."""

    since: datetime
    contexts: int = 0
    accepted: int = 0
    rejected: int = 0
    neutral: int = 0
    follow_rate: float | None = None  # accepted / (accepted + rejected)
    outcome_rate: float | None = None  # contexts with an outcome / contexts
    shown_per_context: float | None = None
    promotions: int = 0
    demotions: int = 0
    canaries: int = 0
    p5: float | None = None
    noise: int | None = None
    latency_ms: float | None = None


class Recommendation(BaseModel):
    """One tunable moved one step."""

    name: str
    old: float
    new: float
    reason: str


class TuneReport(BaseModel):
    """What one tuning step measured, recommended and did."""

    dry_run: bool
    status: str = Field(description="dry_run | unchanged | kept | rolled_back")
    health: TuningHealth
    recommendations: list[Recommendation] = Field(default_factory=list)
    snapshot_id: str | None = None
    p5_before: float | None = None
    noise_before: int | None = None
    p5_after: float | None = None
    noise_after: int | None = None
    reason: str = ""
    settings: dict[str, float] = Field(default_factory=dict, description="the tunable values in effect afterwards")
    note: str | None = None

    @property
    def kept(self) -> bool:
        """True when the step's changes stay in effect."""
        return self.status == "kept"


class TuningSnapshot(BaseModel):
    """One ``TuningSnapshot`` node: the values before a step and what became of it."""

    id: str
    user_id: str
    created_at: datetime
    settings: dict[str, float]
    changes: list[dict[str, Any]] = Field(default_factory=list)
    health: dict[str, Any] = Field(default_factory=dict)
    p5_before: float | None = None
    noise_before: int | None = None
    p5_after: float | None = None
    noise_after: int | None = None
    status: str | None = None
    reason: str | None = None
    restored_at: datetime | None = None


def tunable_values(settings: Settings) -> dict[str, float]:
    """The current value of every tunable in ``settings``."""
    return {t.name: float(getattr(settings, t.name)) for t in TUNABLES}


def apply_values(settings: Settings, values: Mapping[str, Any]) -> Settings:
    """``settings`` with the known tunables of ``values`` (clamped to their bounds) in place."""
    update: dict[str, Any] = {}
    for name, value in values.items():
        tunable = _BY_NAME.get(name)
        if tunable is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        v = tunable.clamp(value)
        update[name] = int(v) if isinstance(getattr(settings, name), int) else v
    if not update:
        return settings
    return Settings(**{**settings.model_dump(), **update})


def effective_settings(store: KuzuGraphStore, user: str, settings: Settings) -> Settings:
    """``settings`` overlaid with the user's persisted tuned values when ``settings.auto_tune``."""
    if not settings.auto_tune:
        return settings
    values = store.tuned_settings(user)
    return apply_values(settings, values) if values else settings


def recommend(health: TuningHealth, settings: Settings) -> list[Recommendation]:
    """The moves health calls for, one step per tunable, at most ``settings.tune_max_changes``."""
    wanted: list[tuple[str, int, str]] = []
    rated = health.accepted + health.rejected
    if rated >= settings.tune_min_outcomes and health.follow_rate is not None:
        rate = f"follow rate {health.follow_rate:.0%} over {rated} rated contexts"
        if health.follow_rate < settings.tune_low_follow_rate:
            why = f"{rate} < {settings.tune_low_follow_rate:.0%}: tighten"
            wanted += [("min_success_rate", +1, why), ("quality_weight", +1, why),
                       ("vector_only_min_similarity", +1, why)]
        elif health.follow_rate > settings.tune_high_follow_rate:
            why = f"{rate} > {settings.tune_high_follow_rate:.0%}: loosen"
            wanted += [("vector_only_min_similarity", -1, why), ("budget_learnings", +1, why),
                       ("min_success_rate", -1, why)]
    if health.latency_ms is not None and health.latency_ms > settings.tune_latency_ms:
        wanted.append(("candidates_per_source", -1,
                       f"median context latency {health.latency_ms:.0f} ms > {settings.tune_latency_ms:.0f} ms"))
    if health.demotions >= 2 and health.demotions > health.promotions:
        wanted.append(("promote_quality", +1, f"{health.demotions} demotions > {health.promotions} promotions"))
    elif health.promotions == 0 and health.canaries >= 3:
        wanted.append(("promote_quality", -1, f"{health.canaries} canaries and no promotion in the window"))
    out: list[Recommendation] = []
    for name, direction, why in wanted:
        if len(out) >= settings.tune_max_changes or any(r.name == name for r in out):
            continue
        tunable = _BY_NAME[name]
        old = float(getattr(settings, name))
        new = tunable.move(old, direction)
        if (new - old) * direction <= 0:  # at its bound already (or outside it, the other way)
            continue
        out.append(Recommendation(name=name, old=old, new=new, reason=f"{why} ({tunable.why})"))
    return out


def labelled_set_evaluator(embedder: Embedder) -> Evaluator:
    """The default guard: the labelled learnings set through ``benchmarks.tuning`` (a source checkout)."""
    try:
        module = importlib.import_module("benchmarks.tuning")
    except ImportError as e:
        raise GraphmemError(
            f"the tuner's retrieval guard needs the benchmarks package of a graphmem source checkout ({e}); "
            "run from the repository, or pass an evaluator"
        ) from e
    evaluator: Evaluator = module.LabelledSetEvaluator(embedder)
    return evaluator


class TuningService:
    """Tuning steps, snapshots and rollbacks for one user (see the module docstring)."""

    def __init__(self, deps: Deps, evaluator: Evaluator | None = None) -> None:
        self.deps = deps
        self._evaluator = evaluator

    @property
    def evaluator(self) -> Evaluator:
        """The guard's evaluator (the labelled set unless one was injected)."""
        if self._evaluator is None:
            self._evaluator = labelled_set_evaluator(self.deps.embedder)
        return self._evaluator

    def current(self) -> Settings:
        """The settings a tuning step starts from: the deps' settings with the persisted values."""
        values = self.deps.store.tuned_settings(self.deps.user)
        return apply_values(self.deps.settings, values) if values else self.deps.settings

    def health(self, settings: Settings, guard: GuardScore | None = None) -> TuningHealth:
        """Health over the last ``tune_window_days`` (and the guard's figures when given)."""
        store, user = self.deps.store, self.deps.user
        since = self.deps.now() - timedelta(days=settings.tune_window_days)
        c = store.context_health(user, since)
        rated = c["accepted"] + c["rejected"]
        moves = store.status_moves(user, since)
        promotions = sum(n for old, new, n in moves if new == "active" and old in ("canary", "candidate", "shadow"))
        demotions = sum(n for old, new, n in moves
                        if old in ("active", "canary") and new in ("shadow", "disabled", "candidate"))
        return TuningHealth(
            since=since, contexts=c["contexts"], accepted=c["accepted"], rejected=c["rejected"], neutral=c["neutral"],
            follow_rate=c["accepted"] / rated if rated else None,
            outcome_rate=(rated + c["neutral"]) / c["contexts"] if c["contexts"] else None,
            shown_per_context=c["shown"] / c["contexts"] if c["contexts"] else None,
            promotions=promotions, demotions=demotions, canaries=store.status_counts(user).get("canary", 0),
            p5=None if guard is None else guard.p5, noise=None if guard is None else guard.noise,
            latency_ms=None if guard is None else guard.latency_ms,
        )

    def tune(self, *, dry_run: bool = False) -> TuneReport:
        """One tuning step (or, with ``dry_run``, only what it would recommend; nothing is written)."""
        store, user = self.deps.store, self.deps.user
        if not dry_run and store.read_only:
            raise ReadOnlyError("tuning writes a snapshot and the tuned values: open the file without read_only "
                                "(or use dry_run=True / `graphmem tune --dry-run`)")
        current = self.current()
        before = self.evaluator(current)
        health = self.health(current, before)
        recs = recommend(health, current)
        note = None if self.deps.settings.auto_tune else (
            "auto_tune is off: tuned values apply to a Memory opened with Settings(auto_tune=True)")
        report = TuneReport(dry_run=dry_run, status="dry_run" if dry_run else "unchanged", health=health,
                            recommendations=recs, p5_before=before.p5, noise_before=before.noise,
                            settings=tunable_values(current), note=note)
        if dry_run:
            report.reason = f"{len(recs)} recommendation(s); nothing applied"
            return report
        if not recs:
            report.reason = "health calls for no change"
            return report
        old_values = tunable_values(current)
        new_values = {**old_values, **{r.name: r.new for r in recs}}
        snapshot_id, now = new_id(), self.deps.now()
        with store.transaction():
            store.insert_tuning_snapshot({
                "id": snapshot_id, "user_id": user, "created_at": now, "settings": old_values,
                "changes": [r.model_dump() for r in recs], "health": health.model_dump(mode="json"),
                "p5_before": before.p5, "noise_before": before.noise, "status": "applying",
            })
            reference = store.tuning_reference_p5(user)
            store.set_tuned_settings(user, new_values, snapshot_id, now, reference_p5=before.p5)
            store.prune_tuning_snapshots(user, self.deps.settings.tune_keep_snapshots)
        try:
            after = self.evaluator(apply_values(current, new_values))
        except Exception:
            self._restore(snapshot_id, old_values, "rolled_back", None, None, "the guard failed after the change")
            raise
        harmful = self._harm(before, after, current, reference)
        report.snapshot_id, report.p5_after, report.noise_after = snapshot_id, after.p5, after.noise
        if harmful:
            self._restore(snapshot_id, old_values, "rolled_back", after.p5, after.noise, harmful)
            report.status, report.reason, report.settings = "rolled_back", harmful, old_values
            return report
        reason = f"P@5 {before.p5:.3f} -> {after.p5:.3f}, noise {after.noise}"
        with store.transaction():
            store.finish_tuning_snapshot(snapshot_id, status="kept", p5_after=after.p5, noise_after=after.noise,
                                         reason=reason)
        report.status, report.reason, report.settings = "kept", reason, new_values
        return report

    @staticmethod
    def _harm(before: GuardScore, after: GuardScore, settings: Settings, reference: float | None) -> str | None:
        """Why a step must be rolled back (None when it may stay): noise, a drop of P@5 from before
        the step, or a drift below the P@5 measured before the user's first step."""
        drop = settings.tune_p5_drop
        if after.noise > settings.tune_noise_max:
            return f"noise {after.noise} > {settings.tune_noise_max}: ineligible learnings returned"
        if before.p5 > 0 and (before.p5 - after.p5) / before.p5 > drop:
            return f"P@5 dropped {before.p5:.3f} -> {after.p5:.3f} (more than {drop:.0%} relative)"
        if reference and (reference - after.p5) / reference > drop:
            return (f"P@5 {after.p5:.3f} drifted more than {drop:.0%} below {reference:.3f}, "
                    "its value before the first tuning step")
        return None

    def _restore(self, snapshot_id: str, values: Mapping[str, float], status: str, p5: float | None,
                 noise: int | None, reason: str) -> None:
        store, now = self.deps.store, self.deps.now()
        with store.transaction():
            store.set_tuned_settings(self.deps.user, values, snapshot_id, now)
            store.finish_tuning_snapshot(snapshot_id, status=status, p5_after=p5, noise_after=noise, reason=reason)

    def snapshots(self, limit: int = 10) -> list[TuningSnapshot]:
        """The user's tuning snapshots, newest first."""
        return [TuningSnapshot.model_validate(r) for r in self.deps.store.tuning_snapshots(self.deps.user, limit)]

    def rollback(self, snapshot_id: str | None = None) -> TuningSnapshot:
        """Restore the values a snapshot holds (the newest when ``snapshot_id`` is None); returns it."""
        store, user = self.deps.store, self.deps.user
        if store.read_only:
            raise ReadOnlyError("a rollback writes the tuned values: open the file without read_only")
        if snapshot_id is None:
            latest = store.tuning_snapshots(user, 1)
            if not latest:
                raise InvalidInputError("nothing to roll back: this user has no tuning snapshot yet (run a tuning step)")
            snap = TuningSnapshot.model_validate(latest[0])
        else:
            if not isinstance(snapshot_id, str) or not snapshot_id.strip():
                raise InvalidInputError("snapshot_id must be a snapshot id (see `graphmem tune --history`)")
            snap = TuningSnapshot.model_validate(store.get_tuning_snapshot(snapshot_id.strip()))
            if snap.user_id != user:
                raise NotFoundError(f"no tuning snapshot with id {snapshot_id!r} for user {user!r}")
        now = self.deps.now()
        with store.transaction():
            store.set_tuned_settings(user, snap.settings, snap.id, now)
            store.mark_tuning_restored(snap.id, now)
        return TuningSnapshot.model_validate(store.get_tuning_snapshot(snap.id))


__all__ = [
    "TUNABLES",
    "Evaluator",
    "GuardScore",
    "Recommendation",
    "Tunable",
    "TuneReport",
    "TuningHealth",
    "TuningService",
    "TuningSnapshot",
    "apply_values",
    "effective_settings",
    "labelled_set_evaluator",
    "recommend",
    "tunable_values",
]
