"""The lifecycle cycle: every state-machine transition, window gates, tiers, TTL, decay, hypotheses."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from graphmem import Memory, Settings
from graphmem.lifecycle import classify_tier, evaluate_window, step
from graphmem.models import Learning
from graphmem.store.loop import WindowOutcome
from tests.test_outcomes import show

SMALL = Settings(window_min_samples=3, window_size=10, retire_harmful_in_cycle=False)  # the state machine alone


@pytest.fixture
def m(make_memory: Callable[..., Memory], clock: Any) -> Memory:
    return make_memory(settings=SMALL, clock=clock, path=None)


def feed(m: Memory, clock: Any, learning: Learning, n: int, **outcome: Any) -> None:
    """``n`` contexts showing ``learning``, each with the same outcome, a minute apart."""
    for _ in range(n):
        clock.advance(minutes=1)
        m.record_outcome(show(m, [learning]), **outcome)


def status_path(m: Memory, lid: str) -> list[tuple[str, str]]:
    return [(t.old, t.new) for t in m.store.transitions(lid) if t.field == "status"]


def test_promotion_shadow_to_active(m: Memory, clock: Any) -> None:
    l = m.add_learning("Keep emails under three paragraphs", tool="send_email", status="shadow")
    feed(m, clock, l, 3, success=True)
    report = m.run_cycle()
    assert report.windows[0].verdict == "pass" and m.get_learning(l.id).pass_streak == 1
    assert m.run_cycle().windows == []  # no new outcomes: the window is not counted again
    assert m.get_learning(l.id).pass_streak == 1
    expected = [("candidate", None), ("canary", 0.2), ("active", 1.0)]
    for status, allocation in expected:
        feed(m, clock, l, 1, rating="good")
        report = m.run_cycle()
        now = m.get_learning(l.id)
        assert now.status == status and now.pass_streak == 0
        assert [c.new for c in report.transitions] == [status]
        if allocation is not None:
            assert now.canary_allocation == allocation
        feed(m, clock, l, 1, success=True)
        m.run_cycle()  # first pass of the next streak
    assert status_path(m, l.id) == [("shadow", "candidate"), ("candidate", "canary"), ("canary", "active")]
    final = m.get_learning(l.id)
    assert final.version == 4 and final.status == "active" and final.pass_streak == 1
    reasons = [t.reason for t in m.store.transitions(l.id)]
    assert all(r.startswith("window pass") for r in reasons)


def test_demotion_active_to_disabled(m: Memory, clock: Any) -> None:
    l = m.add_learning("Always CC the whole team", tool="send_email")
    feed(m, clock, l, 3, success=False)
    m.run_cycle()
    assert m.get_learning(l.id).fail_streak == 1
    feed(m, clock, l, 1, success=False)
    m.run_cycle()
    now = m.get_learning(l.id)
    assert (now.status, now.canary_allocation, now.fail_streak) == ("canary", 0.2, 0)
    for _ in range(2):
        feed(m, clock, l, 1, rating="bad")
        m.run_cycle()
    assert m.get_learning(l.id).status == "candidate"
    for i in range(3):
        feed(m, clock, l, 1, success=False)
        m.run_cycle()
        assert m.get_learning(l.id).status == ("disabled" if i == 2 else "candidate")
    assert status_path(m, l.id) == [("active", "canary"), ("canary", "candidate"), ("candidate", "disabled")]
    assert m.get_learning(l.id).score == pytest.approx(0.05)  # 9 rejections at -0.05 from 0.5
    feed(m, clock, l, 1, success=True)
    assert m.run_cycle().windows == []  # disabled learnings are no longer evaluated


def test_shadow_to_disabled_and_a_pass_resets_the_fail_streak(m: Memory, clock: Any) -> None:
    l = m.add_learning("Reply in French", status="shadow")
    feed(m, clock, l, 3, success=False)
    m.run_cycle()
    feed(m, clock, l, 1, success=False)
    m.run_cycle()
    assert m.get_learning(l.id).fail_streak == 2
    feed(m, clock, l, 10, success=True)  # the whole window is now successes
    m.run_cycle()
    assert (m.get_learning(l.id).fail_streak, m.get_learning(l.id).pass_streak) == (0, 1)
    feed(m, clock, l, 10, success=False)
    for _ in range(3):
        m.run_cycle()
        feed(m, clock, l, 1, success=False)
    assert status_path(m, l.id) == [("shadow", "disabled")]


def _o(outcome: str | None = "success", rating: str | None = None, reasons: tuple[str, ...] = ()) -> WindowOutcome:
    return WindowOutcome(application_id="x", outcome=outcome, rating=rating, reasons=list(reasons),
                         outcome_at=datetime(2026, 1, 1, tzinfo=UTC))


def test_window_gates() -> None:
    s = Settings(window_min_samples=5, window_size=10)
    assert evaluate_window([_o()] * 4, s).verdict == "none"
    assert evaluate_window([_o()] * 5, s).verdict == "pass"
    w = evaluate_window([_o()] * 4 + [_o(reasons=("fallback",))] * 1, s)  # fallback rate 0.2: allowed
    assert w.fallback_rate == 0.2 and w.verdict == "pass"
    assert evaluate_window([_o()] * 3 + [_o(reasons=("fallback",))] * 2, s).verdict == "fail"
    retry = evaluate_window([_o(reasons=("retry", "regenerate"))] * 5, s)  # 2 per outcome > 1.3
    assert retry.regenerate == 2.0 and retry.verdict == "fail"
    okay = evaluate_window([_o("unknown", "okay")] * 5, s)  # quality 0.5 < 0.68
    assert okay.quality == 0.5 and okay.pass_rate == 1.0 and okay.verdict == "fail"
    mixed = evaluate_window([_o()] * 4 + [_o("failure")] * 2, s)  # pass rate 0.67 < 0.72
    assert mixed.verdict == "fail"
    assert evaluate_window([_o("success", "okay")] * 5, s).quality == 0.75


def test_step_is_pure_and_leaves_disabled_alone() -> None:
    s = Settings()
    l = Learning(content="x", status="disabled", fail_streak=5)
    assert step(l, "fail", s) == {} and step(l.model_copy(update={"status": "active"}), "none", s) == {}
    active = Learning(content="x", status="active", pass_streak=7)
    assert step(active, "pass", s) == {"pass_streak": 8, "fail_streak": 0}


# --- tiers ------------------------------------------------------------------------------------------
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_tier_rules() -> None:
    s = Settings()
    day = timedelta(days=1)
    base = Learning(content="x", created_at=T0, updated_at=T0)
    assert classify_tier(base.model_copy(update={"validations": 10, "helpful": 3}), T0, s)[0] == "pinned"
    assert classify_tier(base.model_copy(update={"validations": 10, "harmful": 3}), T0, s)[0] == "active"
    # stale: 31 days without validation and < 5 validations; 5 validations protect it
    assert classify_tier(base, T0 + 31 * day, s)[0] == "archive"
    assert classify_tier(base.model_copy(update={"validations": 5, "last_validated_at": T0}), T0 + 31 * day, s)[0] == "active"
    # contradicted, only past the 7-day safety age
    contra = base.model_copy(update={"contradictions": 2, "validations": 1, "last_validated_at": T0})
    assert classify_tier(contra, T0 + 6 * day, s)[0] == "active"
    assert classify_tier(contra, T0 + 7 * day, s)[0] == "archive"
    # low confidence with < 3 validations, again only past 7 days
    low = base.model_copy(update={"confidence": 0.2})
    assert classify_tier(low, T0 + 3 * day, s)[0] == "active"
    assert classify_tier(low, T0 + 8 * day, s)[0] == "archive"
    assert classify_tier(low.model_copy(update={"validations": 3}), T0 + 8 * day, s)[0] == "active"


def test_cycle_applies_tiers(m: Memory, clock: Any) -> None:
    pin = m.add_learning("Dana prefers bullet points", confidence=0.95)
    stale = m.add_learning("The VPN needs a restart on Mondays")
    gone = m.add_learning("Old rule", status="disabled")
    m.update_learning(pin.id, validations=10, helpful=4)
    report = m.run_cycle()
    assert [(c.learning_id, c.new) for c in report.tier_changes] == [(pin.id, "pinned")]
    clock.advance(days=31)
    report = m.run_cycle()
    assert (stale.id, "archive") in [(c.learning_id, c.new) for c in report.tier_changes]
    assert m.get_learning(gone.id).tier == "active"  # disabled learnings keep their tier
    m.update_learning(pin.id, harmful=9)  # no longer net positive
    m.run_cycle()
    assert m.get_learning(pin.id).tier == "active"
    tiers = [(t.old, t.new) for t in m.store.transitions(pin.id) if t.field == "tier"]
    assert tiers == [("active", "pinned"), ("pinned", "active")]


def test_ttl_and_pruning(make_memory: Callable[..., Memory], clock: Any) -> None:
    m = make_memory(settings=Settings(confidence_decay_per_day=0.0), clock=clock, path=None)
    obs = m.add_learning("Saw a timeout at noon", kind="observation")  # ttl 90 days
    keep = m.add_learning("Always sign emails with the full name", kind="rule", confidence=0.95)
    weak = m.add_learning("Maybe use emojis", kind="preference", confidence=0.2)
    new = m.add_learning("Use the new template", kind="preference")
    old = m.add_learning("Use the old template", kind="preference")
    m.cypher("MATCH (l:Learning) WHERE l.id IN [$a, $b] SET l.superseded_by = $n",
             {"a": old.id, "b": keep.id, "n": new.id}, write=True, scope="all")
    clock.advance(days=31)
    report = m.run_cycle()
    pruned = {c.learning_id: c.reason for c in report.pruned}
    assert set(pruned) == {weak.id, old.id}  # high-confidence rules are never pruned, even superseded
    assert "low confidence" in pruned[weak.id] and "superseded" in pruned[old.id]
    for lid in pruned:
        l = m.get_learning(lid)
        assert (l.status, l.tier) == ("disabled", "archive")  # archived, never deleted
    clock.advance(days=60)
    report = m.run_cycle()
    assert [c.learning_id for c in report.pruned] == [obs.id] and "ttl expired" in report.pruned[0].reason
    assert m.get_learning(keep.id).status == "active"
    assert m.run_cycle().pruned == []


def test_decay_without_reinforcement(m: Memory, clock: Any) -> None:
    l = m.add_learning("Check the calendar before booking", confidence=0.5)
    pinned = m.add_learning("Dana prefers bullet points", tier="pinned", confidence=0.5)
    m.update_learning(pinned.id, validations=10)
    clock.advance(days=14)
    assert m.run_cycle().decayed == []  # within the grace period
    clock.advance(days=6)
    report = m.run_cycle()
    assert [c.learning_id for c in report.decayed] == [l.id]
    assert m.get_learning(l.id).confidence == pytest.approx(0.5 - 6 * 0.002)
    assert m.run_cycle().decayed == []  # never twice for the same days
    clock.advance(days=1)
    m.run_cycle()
    assert m.get_learning(l.id).confidence == pytest.approx(0.5 - 7 * 0.002)
    m.record_outcome(show(m, [l]), success=True)  # reinforcement restarts the grace period
    clock.advance(days=10)
    assert m.run_cycle().decayed == []
    assert m.get_learning(pinned.id).confidence == 0.5


def test_hypothesis_to_belief_and_invalidation(m: Memory, clock: Any) -> None:
    good = m.add_learning("Dana answers faster in the morning", kind="hypothesis")
    bad = m.add_learning("Dana likes long emails", kind="hypothesis")
    unsure = m.add_learning("Dana reads on mobile", kind="hypothesis")
    feed(m, clock, good, 3, success=True)
    feed(m, clock, bad, 3, success=False)
    feed(m, clock, unsure, 2, success=True)
    report = m.run_cycle()
    assert [c.learning_id for c in report.beliefs] == [good.id]
    belief = m.get_learning(good.id)
    assert (belief.kind, belief.status, belief.ttl_days) == ("rule", "active", None)
    assert ("hypothesis", "rule") in [(t.old, t.new) for t in m.store.transitions(good.id) if t.field == "kind"]
    assert [c.learning_id for c in report.invalidated] == [bad.id]
    assert m.get_learning(bad.id).status == "disabled"
    assert len(report.warnings) == 1 and "Dana likes long emails" in report.warnings[0]
    assert m.get_learning(unsure.id).kind == "hypothesis"


def test_climb_to_active_and_pinned(m: Memory, clock: Any) -> None:
    l = m.add_learning("Attach the invoice as PDF", tool="send_email", status="candidate")
    feed(m, clock, l, 3, success=True)
    for _ in range(7):
        m.run_cycle()
        feed(m, clock, l, 1, success=True)
    m.run_cycle()
    final = m.get_learning(l.id)
    assert (final.status, final.tier, final.validations) == ("active", "pinned", 10)


def test_cli_outcome_and_cycle(db_path: Any, clock: Any) -> None:
    from graphmem.cli import _register_groups, app
    from graphmem.embed import HashEmbedder

    mem = Memory(db_path, user="alice", embedder=HashEmbedder())
    l = mem.add_learning("Keep emails short", tool="send_email")
    ctx = show(mem, [l])
    mem.close()
    _register_groups()
    runner = CliRunner()
    base = ["--db", str(db_path), "--user", "alice", "--embedder", "hash"]
    r = runner.invoke(app, base + ["outcome", ctx, "--failure", "--rating", "bad", "--reason", "fallback", "--json"])
    assert r.exit_code == 0, r.output
    assert '"verdict": "rejected"' in r.output
    r = runner.invoke(app, base + ["outcome", ctx, "--success"])
    assert r.exit_code == 1 and "already has an outcome" in r.output
    r = runner.invoke(app, base + ["cycle", "--json"])
    assert r.exit_code == 0 and '"transitions"' in r.output
    r = runner.invoke(app, base + ["cycle"])
    assert r.exit_code == 0, r.output


def test_a_candidate_rederived_enough_times_goes_on_canary(make_memory) -> None:  # type: ignore[no-untyped-def]
    mem = make_memory()
    rule = mem.add_learning("Check the invoice currency before sending", status="candidate", source_type="reflection")
    once = mem.add_learning("Check the invoice currency before sending", status="candidate")  # merged: 1 validation
    assert once.id == rule.id and mem.run_cycle().transitions == []
    for _ in range(2):
        mem.add_learning("Check the invoice currency before sending", status="candidate")
    report = mem.run_cycle()
    assert [(c.learning_id, c.old, c.new) for c in report.transitions] == [(rule.id, "candidate", "canary")]
    onboarded = mem.get_learning(rule.id)
    assert onboarded.status == "canary" and onboarded.canary_allocation == mem.settings.canary_min_allocation
    assert [t.new for t in mem.store.transitions(rule.id) if t.field == "status"] == ["canary"]
