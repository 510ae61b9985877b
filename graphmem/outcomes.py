"""Outcomes close the loop: crediting the learnings a context showed (seeds 000, 002, 003).

- :func:`record_outcome` — an explicit outcome for one context (``Memory.record_outcome``).
- :func:`after_event` — the implicit outcome tracker (seed 003 system 3), run after each event.
- :func:`pattern_scores` — per-pattern effectiveness (seed 002) for ranking.

Verdicts. An outcome is *accepted*, *rejected* or *neutral*:

- a rating decides when given: ``good`` → accepted, ``bad`` → rejected, ``okay`` → neutral;
- otherwise ``success=True`` → accepted, ``success=False`` → rejected.

Accepted: helpful + 1, validations + 1 (last_validated_at = now), score + 0.03, confidence
+ 0.015. Rejected: harmful + 1, score − 0.05, confidence − 0.025. Neutral: no counter or score
move. Every verdict counts ``times_applied`` + 1 and sets ``last_applied_at``. Scores clamp to
[0, 1]. Only the learnings the context showed (its APPLIED_IN edges) are touched, and only the
user's own: another user's shared learning shown in the context is read-only to this user, so
the outcome counts only in this user's Pattern statistics (EFFECTIVE_FOR) and never changes the
shared learning's counters, score, confidence or lifecycle (``OutcomeReport.learnings`` lists
only the learnings changed).

Per learning: ``used=[ids]`` limits the verdict to the learnings the agent acted on, and
``helpful=[ids]`` / ``harmful=[ids]`` tag learnings individually (accepted / rejected whatever the
outcome); learnings shown but neither used nor tagged are then left untouched.

Credit by rank. When the agent says neither which learnings it used nor tags any, the outcome is
shared by rank over the learnings shown: the learning at rank r gets the share
w_r = r^-p / Σ_k k^-p (p = ``Settings.credit_rank_power``, 1 by default: 1/rank normalised to sum
to 1). Its score and confidence deltas are multiplied by w_r; a learning whose share is below
``Settings.credit_min_share`` is left untouched (the first one never is), so the whole-number
counters (helpful/harmful, validations, times_applied, Pattern statistics) and the lifecycle
window count only the learnings ranked high enough to have plausibly been acted on. A learning
that was used or tagged has share 1. Each APPLIED_IN edge records the learning's own verdict and
share (``none`` for a learning not credited), and the lifecycle windows read that: a context whose
outcome did not credit a learning is not in its window, and a tag that differs from the outcome
counts as the tag in the window too.

Implicit outcomes are tagged ``implicit``. An explicit outcome may follow an implicit one on the
same context once: it replaces it (the implicit verdict's counters and deltas are undone first).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from graphmem.config import Settings
from graphmem.errors import InvalidInputError
from graphmem.inputs import names, require_choice, require_id
from graphmem.models import RATINGS, Application, Event, Learning, new_id
from graphmem.trust import own_application

if TYPE_CHECKING:
    from graphmem.deps import Deps

Verdict = Literal["accepted", "rejected", "neutral"]
IMPLICIT = "implicit"


class OutcomeReport(BaseModel):
    """What one outcome changed."""

    context_id: str
    outcome: str  # success | failure | unknown (success not given)
    rating: str | None = None
    verdict: Verdict
    reasons: list[str] = Field(default_factory=list)
    implicit: bool = False
    replaced_implicit: bool = False
    pattern_id: str | None = None
    learnings: list[Learning] = Field(default_factory=list)
    shares: dict[str, float] = Field(default_factory=dict)  # learning id -> its share of the outcome

    @property
    def learning_ids(self) -> list[str]:
        """Ids of the learnings credited or blamed."""
        return [l.id for l in self.learnings]


def verdict_of(success: bool | None, rating: str | None) -> Verdict:
    """accepted | rejected | neutral: the rating decides when given, else success."""
    if rating is not None:
        return {"good": "accepted", "bad": "rejected"}.get(rating, "neutral")  # type: ignore[return-value]
    if success is None:
        raise InvalidInputError("an outcome needs success=True/False or rating='good'|'okay'|'bad'")
    return "accepted" if success else "rejected"


def outcome_label(success: bool | None) -> str:
    """The Application.outcome text for a success flag."""
    return "unknown" if success is None else ("success" if success else "failure")


def credit(
    learning: Learning, verdict: Verdict, now: datetime, deps: Deps, *, sign: int = 1, count_applied: bool = True,
    share: float = 1.0,
) -> Learning:
    """The learning after one verdict (``sign=-1`` undoes a verdict's counters and deltas).

    ``share`` (the learning's part of the outcome, see "Credit by rank") scales the score and
    confidence deltas; the counters move by one.
    """
    s = deps.settings
    sign_w = sign * share
    update: dict[str, object] = {"updated_at": now}
    if sign > 0 and count_applied:
        update["times_applied"] = learning.times_applied + 1
        update["last_applied_at"] = now
    if verdict == "accepted":
        update["helpful"] = max(0, learning.helpful + sign)
        update["validations"] = max(0, learning.validations + sign)
        if sign > 0:
            update["last_validated_at"] = now
        update["score"] = _clamp(learning.score + sign_w * s.accept_score_delta)
        update["confidence"] = _clamp(learning.confidence + sign_w * s.accept_confidence_delta)
    elif verdict == "rejected":
        update["harmful"] = max(0, learning.harmful + sign)
        update["score"] = _clamp(learning.score + sign_w * s.reject_score_delta)
        update["confidence"] = _clamp(learning.confidence + sign_w * s.reject_confidence_delta)
    return learning.model_copy(update=update)


def _clamp(x: float) -> float:
    return round(min(1.0, max(0.0, x)), 10)


def record_outcome(
    deps: Deps,
    context_id: str,
    *,
    success: bool | None = None,
    rating: str | None = None,
    reasons: object = (),
    implicit: bool = False,
    used: object = None,
    helpful: object = (),
    harmful: object = (),
) -> OutcomeReport:
    """Credit or blame exactly the learnings shown in one context; see the module docstring.

    Raises NotFoundError for an unknown context (or another user's), InvalidInputError for bad
    arguments or when the context already has an outcome (an implicit one can be replaced once).
    On a store shared by several processes, work refused for a conflict with another process's
    commit runs again on the current data (``store.rerun_on_conflict``).
    """
    return deps.store.rerun_on_conflict(lambda: _record_outcome(  # type: ignore[no-any-return]
        deps, context_id, success=success, rating=rating, reasons=reasons, implicit=implicit, used=used,
        helpful=helpful, harmful=harmful))


def _record_outcome(
    deps: Deps,
    context_id: str,
    *,
    success: bool | None = None,
    rating: str | None = None,
    reasons: object = (),
    implicit: bool = False,
    used: object = None,
    helpful: object = (),
    harmful: object = (),
) -> OutcomeReport:
    context_id = require_id("context_id", context_id)
    if success is not None and not isinstance(success, bool):
        raise InvalidInputError(f"success must be True, False or None, got {success!r}")
    if rating is not None:
        rating = require_choice("rating", str(rating).lower(), RATINGS)
    tags = [t.lower() for t in names("reason", reasons, max_chars=100)]
    verdict = verdict_of(success, rating)
    app = _own_application(deps, context_id)
    _check_open(app, implicit)
    targets = _targets(app, verdict, used, helpful, harmful, deps.settings.credit_rank_power,
                       deps.settings.credit_min_share)
    query_vec = deps.embed_one(app.query) if app.query.strip() and app.pattern_id is None else None
    now = deps.now()
    with deps.store.transaction():
        app = _own_application(deps, context_id)  # re-read under the write lock
        replaced = _check_open(app, implicit)
        old_verdict = verdict_of(*_stored_signal(app)) if replaced else None
        old_credit = deps.store.applied_credit(app.id) if replaced else {}
        pattern_id = app.pattern_id or _classify(deps, app, query_vec, now)
        all_tags = _merge(app.reasons if not replaced else [t for t in app.reasons if t != IMPLICIT], tags)
        if implicit:
            all_tags = _merge(all_tags, [IMPLICIT])
        deps.store.set_outcome(app.id, outcome=outcome_label(success), rating=rating, reasons=all_tags,
                              at=now, pattern_id=pattern_id)
        deps.store.set_credit(app.id, {lid: targets.get(lid, ("none", 0.0)) for lid in app.learning_ids})
        changed: list[Learning] = []
        for learning in deps.store.get_learnings(app.learning_ids):
            target = targets.get(learning.id)
            mine = target[0] if target else None
            old = _old_credit(old_verdict, old_credit, learning.id)
            if learning.user_id != app.user_id:
                # another user's shared learning is read-only to this user: their outcome feeds
                # only their own Pattern statistics, never its counters, score or lifecycle
                if pattern_id and old is not None:
                    deps.store.add_effectiveness(learning.id, pattern_id, *_counts(old[0], -1))
                if pattern_id and mine is not None and mine != "neutral":
                    deps.store.add_effectiveness(learning.id, pattern_id, *_counts(mine, 1))
                continue
            if old is not None:
                learning = credit(learning, old[0], now, deps, sign=-1, share=old[1])
                if pattern_id:
                    deps.store.add_effectiveness(learning.id, pattern_id, *_counts(old[0], -1))
            if target is None or mine is None:
                if old is not None:
                    deps.store.save_learning(learning)
                    changed.append(learning)
                continue
            updated = credit(learning, mine, now, deps, count_applied=old_verdict is None, share=target[1])
            deps.store.save_learning(updated)
            if pattern_id and mine != "neutral":
                deps.store.add_effectiveness(updated.id, pattern_id, *_counts(mine, 1))
            changed.append(updated)
        deps.on_learnings_changed(changed, change="outcome")
    deps.after_write()
    return OutcomeReport(
        context_id=app.id, outcome=outcome_label(success), rating=rating, verdict=verdict,
        reasons=all_tags, implicit=implicit, replaced_implicit=replaced, pattern_id=pattern_id,
        learnings=changed, shares={lid: w for lid, (_, w) in targets.items()},
    )


def _ids(name: str, value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)):
        raise InvalidInputError(f"{name} must be a list of learning ids (from ctx.learnings), got {value!r}")
    out = [str(v) for v in value]
    if any(not v.strip() for v in out):
        raise InvalidInputError(f"{name} has an empty learning id")
    return out


def rank_shares(n: int, power: float = 1.0) -> list[float]:
    """Each of ``n`` ranks' share of an outcome: r^-power normalised to sum to 1 (rank 1 first)."""
    raw = [1.0 / (r**power) for r in range(1, n + 1)]
    total = sum(raw)
    return [w / total for w in raw]


def _old_credit(
    old_verdict: Verdict | None, stored: dict[str, tuple[str, float]], learning_id: str
) -> tuple[Verdict, float] | None:
    """What the replaced (implicit) outcome gave a learning: its recorded verdict and share, or
    the outcome's verdict in full when the edge predates recorded credit."""
    if old_verdict is None:
        return None
    if not stored:
        return old_verdict, 1.0
    v, w = stored.get(learning_id, ("none", 0.0))
    return None if v == "none" else (v, w)  # type: ignore[return-value]


def _targets(
    app: Application, verdict: Verdict, used: object, helpful: object, harmful: object,
    power: float = 1.0, min_share: float = 0.0,
) -> dict[str, tuple[Verdict, float]]:
    """Which shown learnings get which verdict, and their share of it.

    Without ``used`` or tags, the outcome's verdict is shared by rank (:func:`rank_shares`);
    learnings whose share is below ``min_share`` (never the first) get nothing. ``used`` limits
    the verdict to the learnings the agent acted on; ``helpful`` / ``harmful`` tag learnings
    individually (as ACE's reflector tags bullets): accepted / rejected whatever the outcome. Used
    or tagged learnings have share 1; learnings neither used nor tagged are left untouched. Ids
    must come from the context (InvalidInputError otherwise).
    """
    used_ids, good, bad = _ids("used", used), _ids("helpful", helpful), _ids("harmful", harmful)
    shown = set(app.learning_ids)
    for name, ids in (("used", used_ids), ("helpful", good), ("harmful", bad)):
        unknown = [i for i in ids if i not in shown]
        if unknown:
            raise InvalidInputError(
                f"{name} names learning {unknown[0]!r}, which context {app.id} did not show; "
                "pass ids from ctx.learnings"
            )
    both = set(good) & set(bad)
    if both:
        raise InvalidInputError(f"learning {sorted(both)[0]!r} is tagged both helpful and harmful")
    if used is None and not good and not bad:
        shares = rank_shares(len(app.learning_ids), power)
        return {lid: (verdict, w) for i, (lid, w) in enumerate(zip(app.learning_ids, shares))
                if i == 0 or w >= min_share}
    out: dict[str, tuple[Verdict, float]] = dict.fromkeys(used_ids, (verdict, 1.0))
    out.update(dict.fromkeys(good, ("accepted", 1.0)))
    out.update(dict.fromkeys(bad, ("rejected", 1.0)))
    return out


def _own_application(deps: Deps, context_id: str) -> Application:
    return own_application(deps, context_id)  # another user's context: NotFoundError, like an unknown id


def _check_open(app: Application, implicit: bool) -> bool:
    """True when an implicit outcome is there to be replaced; raises if the context is closed."""
    if app.outcome is None:
        return False
    if IMPLICIT in app.reasons and not implicit:
        return True
    raise InvalidInputError(
        f"context {app.id} already has an outcome ({app.outcome}, rating {app.rating}); "
        "record one outcome per context: ask for a new context for the next attempt"
    )


def _stored_signal(app: Application) -> tuple[bool | None, str | None]:
    success = {"success": True, "failure": False}.get(app.outcome or "")
    return success, app.rating


def _counts(verdict: Verdict, sign: int) -> tuple[int, int]:
    return (sign if verdict == "accepted" else 0, sign if verdict == "rejected" else 0)


def _merge(a: list[str], b: list[str]) -> list[str]:
    return list(a) + [x for x in b if x not in a]


# --- patterns (seed 002) ------------------------------------------------------------------------
def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def nearest_pattern(deps: Deps, vec: np.ndarray, user: str) -> tuple[str, int, np.ndarray, float] | None:
    """The user's Pattern nearest to ``vec``: (id, size, centroid, cosine); None if none exist."""
    patterns = deps.store.patterns(user)
    if not patterns:
        return None
    cents = np.asarray([p.centroid for p in patterns], dtype=np.float32)
    norms = np.linalg.norm(cents, axis=1)
    norms[norms == 0] = 1.0
    sims = (cents / norms[:, None]) @ _unit(np.asarray(vec, dtype=np.float32))
    i = int(np.argmax(sims))
    return patterns[i].id, patterns[i].size, cents[i], float(sims[i])


def _classify(deps: Deps, app: Application, vec: np.ndarray | None, now: datetime) -> str | None:
    """Put the context's query in the nearest Pattern (cosine ≥ pattern_similarity) or a new one."""
    if vec is None:
        return None
    found = nearest_pattern(deps, vec, app.user_id)
    if found is not None and found[3] >= deps.settings.pattern_similarity:
        pid, size, centroid, _ = found
        deps.store.grow_pattern(pid, _unit((centroid * size + _unit(vec)) / (size + 1)), size + 1)
    else:
        pid = new_id()
        deps.store.create_pattern(pid, app.user_id, app.query[:80], _unit(vec), now)
    deps.store.link_matched(app.id, pid)
    return pid


def checked_pattern_scores(deps: Deps, query_embedding: Any, user: str | None = None) -> dict[str, float]:
    """:func:`pattern_scores` for a caller's input: another ``user``'s patterns need an admin
    (PermissionDeniedError), and the embedding must be the embedder's size of finite numbers."""
    from graphmem.errors import PermissionDeniedError
    from graphmem.inputs import optional_text

    if user is not None and user != deps.user and not deps.admin:
        raise PermissionDeniedError("only an admin Memory may read another user's pattern scores")
    user = optional_text("user", user, max_chars=200)
    try:
        vector = np.asarray(query_embedding, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"query_embedding must be a vector of numbers: {e}") from e
    if vector.shape != (deps.embedder.dim,) or not np.all(np.isfinite(vector)):
        raise InvalidInputError(f"query_embedding must be {deps.embedder.dim} finite numbers (the embedder's dim)")
    return pattern_scores(deps, vector, user)


def pattern_scores(deps: Deps, query_embedding: np.ndarray, user: str | None = None) -> dict[str, float]:
    """``{learning_id: helpful / (helpful + harmful)}`` in the Pattern nearest the query.

    Empty when no Pattern of ``user`` (default: the Memory's user) is within
    ``Settings.pattern_similarity``. Ranking adds ``Settings.pattern_boost * value``.
    """
    found = nearest_pattern(deps, query_embedding, user or deps.user)
    if found is None or found[3] < deps.settings.pattern_similarity:
        return {}
    return {lid: h / (h + x) for lid, (h, x) in deps.store.effectiveness(found[0]).items() if h + x > 0}


# --- implicit outcomes (seed 003 system 3) ------------------------------------------------------
def after_event(deps: Deps, event: Event) -> list[OutcomeReport]:
    """Turn tool events into implicit outcomes of recent contexts for the same tool.

    - a failed ``tool_result`` → the newest context for that tool created within
      ``advice_ttl_s`` and still without outcome is blamed (tags ``implicit``, ``failure``);
    - a ``tool_call``/``tool_result`` for the same tool within ``correction_window_s`` after a
      failed ``tool_result`` is a correction: the context active at that failure is marked
      unhelpful (blamed if it had no outcome yet; tagged ``retry`` in any case);
    - a successful ``tool_result`` with no correction → the newest pending context is credited
      as followed (tags ``implicit``, ``followed``). After a correction only contexts asked for
      since the failure can be credited.
    """
    tool = event.tool_name
    if not tool or event.kind not in ("tool_call", "tool_result") or event.user_id != deps.user:
        return []
    s = deps.settings
    t = event.created_at
    ttl = timedelta(seconds=s.advice_ttl_s)
    reports: list[OutcomeReport] = []
    failures = deps.store.tool_results(deps.user, tool, t - timedelta(seconds=s.correction_window_s), t, success=False)
    since = t - ttl
    if failures:
        failed_at = failures[0].created_at
        since = max(since, failed_at + timedelta(microseconds=1))
        blamed = deps.store.applications_for_tool(
            deps.user, tool, failed_at - ttl, failed_at - timedelta(microseconds=1)
        )
        if blamed:
            app = blamed[0]
            if app.outcome is None:
                reports.append(record_outcome(deps, app.id, success=False, reasons=["retry"], implicit=True))
            elif IMPLICIT in app.reasons and "retry" not in app.reasons:
                deps.store.set_application_reasons(app.id, _merge(app.reasons, ["retry"]))
    if event.kind == "tool_result" and event.success is not None:
        pending = deps.store.applications_for_tool(deps.user, tool, since, t, pending_only=True)
        if pending:
            tag = "followed" if event.success else "failure"
            reports.append(record_outcome(deps, pending[0].id, success=event.success, reasons=[tag], implicit=True))
    return reports


# --- the record's verdict (run_cycle retires by it, an owner's restatement resets it) -----------
def wilson_upper_bound(helpful: int, n: int, z: float) -> float:
    """Upper Wilson score bound of the success share helpful / n (1.0 when n is 0)."""
    if n <= 0:
        return 1.0
    p = helpful / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (centre + margin) / (1 + z2 / n)


def clearly_harmful_record(l: Learning, s: Settings) -> str | None:
    """Why ``l``'s ratings say with confidence that it hurts (the test ranking drops it by), or None."""
    if s.harmful_max_success <= 0 or l.tier == "pinned":
        return None
    n = l.helpful + l.harmful
    upper = wilson_upper_bound(l.helpful, n, s.harmful_z)
    if n == 0 or upper >= s.harmful_max_success:
        return None
    return (f"clearly harmful: {l.helpful} of {n} ratings helpful, success at most {upper:.2f} "
            f"(< harmful_max_success {s.harmful_max_success:g})")


__all__ = ["OutcomeReport", "after_event", "clearly_harmful_record", "credit", "pattern_scores", "rank_shares",
           "record_outcome", "verdict_of", "wilson_upper_bound"]
