"""Outcomes: crediting exactly the shown learnings, online updates, patterns, implicit outcomes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from graphmem import Memory, Settings
from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.models import Learning, new_id

SMALL = Settings(window_min_samples=3, window_size=10)


def show(mem: Memory, learnings: Sequence[Learning], query: str = "email Dana about the renewal",
         tool: str | None = "send_email") -> str:
    """Record a context that showed ``learnings`` (as Memory.context() does); its id."""
    app_id = new_id()
    mem.store.record_application(
        application_id=app_id, user_id=mem.user, query=query, tool=tool, created_at=mem.now(),
        reasons=[], shown=[(l.id, i + 1, 1.0, []) for i, l in enumerate(learnings)],
    )
    return app_id


@pytest.fixture
def m(make_memory: Callable[..., Memory], clock: Callable[[], object]) -> Memory:
    return make_memory(settings=SMALL, clock=clock, path=None)


def three(m: Memory) -> tuple[Learning, Learning, Learning]:
    a = m.add_learning("Keep emails under three paragraphs", tool="send_email")
    b = m.add_learning("Use bullet points when writing to Dana", tool="send_email")
    c = m.add_learning("Never schedule meetings on Fridays", tool="calendar")
    return a, b, c


def test_success_credits_exactly_the_shown_learnings(m: Memory) -> None:
    a, b, c = three(m)
    ctx = show(m, [a, b])
    report = m.record_outcome(ctx, success=True, reasons=["fast"])
    assert report.verdict == "accepted" and sorted(report.learning_ids) == sorted([a.id, b.id])
    # no used= and no tags: the outcome is shared by rank, 1/rank normalised (2/3 and 1/3)
    assert report.shares == pytest.approx({a.id: 2 / 3, b.id: 1 / 3})
    for lid in (a.id, b.id):
        l = m.get_learning(lid)
        assert (l.helpful, l.harmful, l.times_applied, l.validations) == (1, 0, 1, 1)
        share = report.shares[lid]
        assert l.score == pytest.approx(0.5 + 0.03 * share) and l.confidence == pytest.approx(0.5 + 0.015 * share)
        assert l.last_applied_at == m.now() and l.last_validated_at == m.now()
    untouched = m.get_learning(c.id)
    assert untouched.model_dump() == c.model_dump()
    row = m.cypher("MATCH (a:Application {id: $id}) RETURN a.outcome AS o, a.rating AS r, a.reasons AS why",
                   {"id": ctx})[0]
    assert row["o"] == "success" and row["r"] is None and "fast" in row["why"]


def test_failure_and_clamping(m: Memory) -> None:
    a, b, _ = three(m)
    m.update_learning(a.id, score=0.02, confidence=0.01)
    m.update_learning(b.id, score=0.99, confidence=0.995)
    m.record_outcome(show(m, [a]), success=False)
    low = m.get_learning(a.id)
    assert (low.score, low.confidence, low.harmful, low.helpful) == (0.0, 0.0, 1, 0)
    m.record_outcome(show(m, [b]), rating="good")
    high = m.get_learning(b.id)
    assert (high.score, high.confidence) == (1.0, 1.0)


def test_okay_is_neutral_and_rating_beats_success(m: Memory) -> None:
    a, b, _ = three(m)
    r = m.record_outcome(show(m, [a]), rating="okay", reasons=["retry", "Fallback"])
    assert r.verdict == "neutral" and r.reasons == ["retry", "fallback"]
    l = m.get_learning(a.id)
    assert (l.times_applied, l.helpful, l.harmful, l.score, l.confidence) == (1, 0, 0, 0.5, 0.5)
    r = m.record_outcome(show(m, [b]), success=True, rating="bad")
    assert r.verdict == "rejected" and m.get_learning(b.id).harmful == 1


def test_bad_input_and_double_outcome(m: Memory, make_memory: Callable[..., Memory]) -> None:
    a, _, _ = three(m)
    ctx = show(m, [a])
    with pytest.raises(NotFoundError):
        m.record_outcome("no-such-context", success=True)
    with pytest.raises(InvalidInputError):
        m.record_outcome(ctx)  # neither success nor rating
    with pytest.raises(InvalidInputError):
        m.record_outcome(ctx, rating="great")
    m.record_outcome(ctx, success=True)
    with pytest.raises(InvalidInputError, match="already has an outcome"):
        m.record_outcome(ctx, success=False)
    assert m.get_learning(a.id).helpful == 1 and m.get_learning(a.id).harmful == 0


def test_other_users_context_is_not_found(make_memory: Callable[..., Memory], tmp_path: object) -> None:
    alice = make_memory(user="alice", settings=SMALL)
    a = alice.add_learning("Keep emails short", tool="send_email")
    ctx = show(alice, [a])
    alice.close()
    bob = make_memory(user="bob", settings=SMALL)
    with pytest.raises(NotFoundError):
        bob.record_outcome(ctx, success=True)


def test_pattern_effectiveness(m: Memory) -> None:
    a, b, c = three(m)
    q = "email Dana about the Q3 renewal"
    r1 = m.record_outcome(show(m, [a, b], query=q), success=True)
    r2 = m.record_outcome(show(m, [a], query=q), success=False)
    r3 = m.record_outcome(show(m, [c], query="book a meeting room for the offsite"), success=True)
    assert r1.pattern_id and r1.pattern_id == r2.pattern_id != r3.pattern_id
    rows = m.cypher(
        "MATCH (l:Learning)-[r:EFFECTIVE_FOR]->(p:Pattern {id: $p}) RETURN l.id AS id, r.helpful AS h, r.harmful AS x",
        {"p": r1.pattern_id},
    )
    assert {r["id"]: (r["h"], r["x"]) for r in rows} == {a.id: (1, 1), b.id: (1, 0)}
    assert m.cypher("MATCH (p:Pattern {id: $p}) RETURN p.size AS n", {"p": r1.pattern_id})[0]["n"] == 2
    assert m.cypher("MATCH (:Application)-[:MATCHED]->(p:Pattern) RETURN count(*) AS n")[0]["n"] == 3
    scores = m.pattern_scores(m.embedder.embed([q])[0])
    assert scores == {a.id: 0.5, b.id: 1.0}
    assert m.pattern_scores(m.embedder.embed(["completely unrelated zebra topic"])[0]) == {}


def test_context_end_to_end(m: Memory) -> None:
    a, b, c = three(m)
    ctx = m.context("Email Dana about the renewal", tool="send_email")
    shown = {x.learning.id for x in ctx.learnings}
    assert shown
    report = m.record_outcome(ctx.id, success=True, rating="good")
    assert set(report.learning_ids) == shown
    for l in (a, b, c):
        assert m.get_learning(l.id).helpful == (1 if l.id in shown else 0)


# --- implicit outcomes (seed 003) -----------------------------------------------------------------
def test_implicit_failure_blames_recent_context(m: Memory, clock: object) -> None:
    a, b, c = three(m)
    ctx = show(m, [a, b])
    clock.advance(seconds=10)  # type: ignore[attr-defined]
    m.record_event("tool_call", "send it", tool="send_email")
    m.record_event("tool_result", "SMTP 550", tool="send_email", success=False)
    for l in (a, b):
        assert m.get_learning(l.id).harmful == 1
    assert m.get_learning(c.id).harmful == 0
    row = m.cypher("MATCH (a:Application {id: $id}) RETURN a.outcome AS o, a.reasons AS r", {"id": ctx})[0]
    assert row["o"] == "failure" and "implicit" in row["r"]


def test_implicit_success_is_followed_and_ttl_is_respected(m: Memory, clock: object) -> None:
    a, _, _ = three(m)
    show(m, [a])
    clock.advance(seconds=30)  # type: ignore[attr-defined]
    m.record_event("tool_result", "sent", tool="send_email", success=True)
    assert m.get_learning(a.id).helpful == 1
    show(m, [a])
    clock.advance(seconds=SMALL.advice_ttl_s + 1)  # type: ignore[attr-defined]
    m.record_event("tool_result", "sent", tool="send_email", success=True)
    m.record_event("tool_result", "boom", tool="send_email", success=False)
    l = m.get_learning(a.id)
    assert (l.helpful, l.harmful) == (1, 0)  # the old context is past advice_ttl_s
    other = show(m, [a], tool="calendar")
    m.record_event("tool_result", "ok", tool="send_email", success=True)
    assert m.store.get_application(other).outcome is None  # another tool's context


def test_correction_marks_advice_unhelpful(m: Memory, clock: object) -> None:
    a, b, _ = three(m)
    ctx = show(m, [a])
    clock.advance(seconds=5)  # type: ignore[attr-defined]
    m.record_event("tool_result", "bounced", tool="send_email", success=False)
    clock.advance(seconds=10)  # type: ignore[attr-defined]
    m.record_event("tool_call", "send again", tool="send_email")  # the correction
    reasons = m.store.get_application(ctx).reasons
    assert "retry" in reasons and "implicit" in reasons
    clock.advance(seconds=5)  # type: ignore[attr-defined]
    m.record_event("tool_result", "sent", tool="send_email", success=True)
    l = m.get_learning(a.id)
    assert (l.helpful, l.harmful) == (0, 1)  # the retry's success is not credited to the old advice
    # a context asked for after the failure is credited by the corrected success
    ctx2 = show(m, [b])
    clock.advance(seconds=60)  # type: ignore[attr-defined]
    m.record_event("tool_result", "bounced", tool="send_email", success=False)
    assert m.get_learning(b.id).harmful == 1
    clock.advance(seconds=1)  # type: ignore[attr-defined]
    ctx3 = show(m, [b])
    clock.advance(seconds=5)  # type: ignore[attr-defined]
    m.record_event("tool_result", "sent", tool="send_email", success=True)
    assert m.store.get_application(ctx3).outcome == "success" and m.get_learning(b.id).helpful == 1
    assert m.store.get_application(ctx2).outcome == "failure"


def test_explicit_outcome_replaces_implicit_once(m: Memory, clock: object) -> None:
    a, _, _ = three(m)
    ctx = show(m, [a])
    m.record_event("tool_result", "sent", tool="send_email", success=True)
    assert m.get_learning(a.id).helpful == 1
    report = m.record_outcome(ctx, rating="bad", reasons=["wrong tone"])
    assert report.replaced_implicit
    l = m.get_learning(a.id)
    assert (l.helpful, l.harmful, l.times_applied, l.validations) == (0, 1, 1, 0)
    assert l.score == pytest.approx(0.45) and l.confidence == pytest.approx(0.475)
    with pytest.raises(InvalidInputError):
        m.record_outcome(ctx, rating="good")
