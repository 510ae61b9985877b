"""The owner's correction is a verdict on the learning the agent just acted on (part of the
quality prior, README "Counters that pay").

When the owner corrects the agent (``observe_message(..., is_owner=True)`` writes a learning
about a tool) right after a context for that tool whose outcome was recorded (within
``Settings.correction_window_s``), the learnings that outcome credited in full (the ones the
agent named in ``used=``, or tagged; not a share by rank) and that are in the correction's scope
(:func:`graphmem.learn.contradiction.same_scope`: a shared entity, compatible tools) are what
the owner corrected:

- **the verdict**: a success the agent reported for such a learning is overruled: the owner's
  "No, …" says it failed. Its helpful count and deltas are undone and it is counted harmful
  (the APPLIED_IN edge and the Pattern statistics follow), so a misreported success does not
  keep a wrong rule looking good. A failure already recorded is not counted twice;
- **the replacement**: when its record then does not say it helps (helpful ≤ harmful), the
  correction supersedes it (tier archive, ``superseded_by``, a Transition "the owner corrected it
  right after it was acted on"), even where the wording gives the contradiction test nothing to
  go on ("run EXPLAIN first" vs "query directly"). A rule with a good record stays: one
  correction may be about another aspect of the task, and its record already counts the failure.

Never the correction's own learning (the owner restating the rule used is no correction of it),
pinned learnings, another user's shared learnings, or learnings already out of use. Off with
``correction_replaces_used=False`` or the quality prior off (it is a use of the counters).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from graphmem.learn.contradiction import same_scope
from graphmem.learnings import LearningService
from graphmem.models import Learning
from graphmem.outcomes import credit

if TYPE_CHECKING:
    from graphmem.deps import Deps

REASON = "the owner corrected it right after it was acted on"


def corrected_learnings(deps: Deps, correction: Learning, at: datetime) -> list[Learning]:
    """Apply the owner's ``correction`` (made at ``at``) to the learnings the agent had just acted
    on in its scope; returns those learnings as stored afterwards (see the module docstring)."""
    s = deps.settings
    if not (s.quality_prior_enabled and s.correction_replaces_used) or deps.store.read_only:
        return []
    if correction.tool is None or correction.status not in ("active", "canary") or correction.superseded_by:
        return []
    apps = deps.store.applications_for_tool(
        deps.user, correction.tool, at - timedelta(seconds=s.correction_window_s), at)
    if not apps or apps[0].outcome is None:  # the newest context for the tool, once it has an outcome
        return []
    app = apps[0]
    credits = deps.store.applied_credit(app.id)
    out: list[Learning] = []
    service = LearningService(deps)
    for lid, (verdict, share) in credits.items():
        if lid == correction.id or verdict == "none" or share < 1.0:
            continue
        l = deps.store.get_learning(lid)
        if (l.user_id != deps.user or l.tier in ("pinned", "archive") or l.status == "disabled"
                or l.superseded_by or not same_scope(correction.tool, correction.entities, l.tool, l.entities)):
            continue
        if verdict == "accepted":  # the owner overrules the success the agent reported
            now = deps.now()
            with deps.store.transaction():
                fixed = credit(credit(l, "accepted", now, deps, sign=-1), "rejected", now, deps, count_applied=False)
                deps.store.save_learning(fixed)
                deps.store.set_credit(app.id, {lid: ("rejected", 1.0)})
                if app.pattern_id:
                    deps.store.add_effectiveness(lid, app.pattern_id, -1, 1)
                deps.on_learnings_changed([fixed], change="outcome")
            deps.after_write()
            l = fixed
        if l.helpful <= l.harmful:
            service.supersede(correction.id, l.id, reason=REASON)
        out.append(deps.store.get_learning(l.id))
    return out


__all__ = ["REASON", "corrected_learnings"]
