"""Credit by rank, per-learning credit in the lifecycle windows, and reflector tags as credit."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from graphmem import Memory, Settings
from graphmem.lifecycle import evaluate_window, outcome_quality
from graphmem.models import Learning, new_id
from graphmem.outcomes import rank_shares

SMALL = Settings(window_min_samples=3, window_size=10)


def show(mem: Memory, learnings: Sequence[Learning], query: str = "email Dana about the renewal") -> str:
    """Record a context that showed ``learnings`` in this order (as Memory.context() does); its id."""
    app_id = new_id()
    mem.store.record_application(
        application_id=app_id, user_id=mem.user, query=query, tool="send_email", created_at=mem.now(),
        reasons=[], shown=[(l.id, i + 1, 1.0, []) for i, l in enumerate(learnings)],
    )
    return app_id


def five(mem: Memory) -> list[Learning]:
    return [mem.add_learning(f"Email rule number {i}: {w}", tool="send_email")
            for i, w in enumerate(["bullets", "short", "sign off", "cc finance", "no emoji"], start=1)]


@pytest.fixture
def m(make_memory: Callable[..., Memory], clock: Callable[[], object]) -> Memory:
    return make_memory(settings=SMALL, clock=clock, path=None)


def test_rank_shares_are_one_over_rank_normalised() -> None:
    shares = rank_shares(4)
    h = 1 + 1 / 2 + 1 / 3 + 1 / 4
    assert shares == pytest.approx([1 / h, 1 / (2 * h), 1 / (3 * h), 1 / (4 * h)])
    assert sum(rank_shares(7, 2.0)) == pytest.approx(1.0)
    assert rank_shares(3, 0.0) == pytest.approx([1 / 3] * 3)  # power 0: an equal split


def test_without_used_the_outcome_is_shared_by_rank_not_given_in_full(m: Memory) -> None:
    ls = five(m)
    report = m.record_outcome(show(m, ls), success=True)
    shares = rank_shares(5)
    counted = [i for i, w in enumerate(shares) if w >= SMALL.credit_min_share]
    assert counted == [0, 1]  # 0.44, 0.22 | 0.15, 0.11, 0.09
    assert set(report.learning_ids) == {ls[i].id for i in counted}
    for i, l in enumerate(ls):
        got = m.get_learning(l.id)
        if i in counted:
            assert (got.helpful, got.times_applied) == (1, 1)
            assert got.score == pytest.approx(0.5 + SMALL.accept_score_delta * shares[i])
        else:
            assert got.model_dump() == l.model_dump()  # untouched
    # the windows count the outcome only for the credited learnings
    assert len(m.store.outcome_window(ls[0].id, 10)) == 1
    assert m.store.outcome_window(ls[4].id, 10) == []
    # a failure blames by rank the same way: the top learning loses the most score
    report = m.record_outcome(show(m, ls[::-1]), success=False)
    assert report.shares[ls[4].id] > report.shares[ls[3].id] and ls[0].id not in report.shares


def test_min_share_zero_and_power_zero_credit_every_learning_equally(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(credit_min_share=0.0, credit_rank_power=0.0), path=None)
    ls = five(mem)
    report = mem.record_outcome(show(mem, ls), success=True)
    assert report.shares == pytest.approx({l.id: 0.2 for l in ls})
    assert all(mem.get_learning(l.id).helpful == 1 for l in ls)


def test_used_feeds_the_windows_of_the_used_learning_only(m: Memory) -> None:
    a, b, c, *_ = five(m)
    for _ in range(3):
        m.record_outcome(show(m, [a, b, c]), success=False, used=[b.id])
    assert m.store.outcome_window(a.id, 10) == [] and m.store.outcome_window(c.id, 10) == []
    window = m.store.outcome_window(b.id, 10)
    assert len(window) == 3 and evaluate_window(window, SMALL).verdict == "fail"
    m.run_cycle()
    assert m.get_learning(b.id).fail_streak == 1
    assert m.get_learning(a.id).fail_streak == 0 and m.get_learning(c.id).fail_streak == 0


def test_a_tag_against_the_outcome_counts_as_the_tag_in_the_window(m: Memory) -> None:
    a, b, *_ = five(m)
    for _ in range(3):
        m.record_outcome(show(m, [a, b]), success=True, used=[a.id], harmful=[b.id])
    good, bad = m.store.outcome_window(a.id, 10), m.store.outcome_window(b.id, 10)
    assert [outcome_quality(o) for o in good] == [1.0] * 3
    assert [outcome_quality(o) for o in bad] == [0.0] * 3
    assert evaluate_window(bad, SMALL).verdict == "fail" and evaluate_window(good, SMALL).verdict == "pass"


def test_an_explicit_outcome_undoes_the_implicit_rank_shares_it_replaces(m: Memory, clock: object) -> None:
    ls = five(m)
    ctx = show(m, ls)
    m.record_event("tool_result", "sent", tool="send_email", success=True)  # implicit: shared by rank
    assert [m.get_learning(l.id).helpful for l in ls] == [1, 1, 0, 0, 0]
    report = m.record_outcome(ctx, success=False, used=[ls[3].id])
    assert report.replaced_implicit
    after = [m.get_learning(l.id) for l in ls]
    assert [(x.helpful, x.harmful) for x in after] == [(0, 0), (0, 0), (0, 0), (0, 1), (0, 0)]
    assert after[0].score == pytest.approx(0.5) and after[1].confidence == pytest.approx(0.5)
    assert m.store.outcome_window(ls[0].id, 10) == [] and len(m.store.outcome_window(ls[3].id, 10)) == 1


# --- the reflector tags which shown learnings helped or hurt --------------------------------------


def _email_rules(mem: Memory) -> tuple[Learning, Learning]:
    a = mem.add_learning("Use bullet points in emails to Dana", tool="send_email", entities=["Dana"])
    b = mem.add_learning("Mention the invoice number when writing to Dana", tool="send_email", entities=["Dana"])
    return a, b


def test_the_offline_reflector_tags_the_followed_learning_and_credits_only_it(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(path=None)
    a, b = _email_rules(mem)
    ctx = mem.context("Email Dana about the renewal", tool="send_email", entities=["Dana"])
    assert {s.learning.id for s in ctx.learnings} >= {a.id, b.id}
    record = mem.reflect("Email Dana about the renewal", "Hi Dana,\n- bullet points: renewal is due\n- see you",
                         success=False, tools_used=["send_email"], context_id=ctx.id)
    assert record.hurt == [a.id] and record.helped == []
    assert record.outcome is not None and record.outcome.verdict == "rejected"
    assert (mem.get_learning(a.id).harmful, mem.get_learning(b.id).harmful) == (1, 0)
    assert mem.store.outcome_window(b.id, 10) == []  # not followed: not credited, not in its window
    ctx2 = mem.context("Email Dana about the invoice", tool="send_email", entities=["Dana"])
    record = mem.reflect("Email Dana about the invoice", "Dana, invoice number 42 is attached, writing to you now.",
                         success=True, context_id=ctx2.id)
    assert record.helped == [b.id] and mem.get_learning(b.id).helpful == 1
    with pytest.raises(Exception, match="already has an outcome"):
        mem.reflect("again", "again", success=True, context_id=ctx2.id)


def test_the_llm_reflector_sees_the_shown_learnings_and_its_tags_become_credit(
    make_memory: Callable[..., Memory],
) -> None:
    from graphmem.llm import AnthropicLLM

    try:
        from tests.fake_anthropic import FakeAnthropic, tool_use
    except ImportError:
        from fake_anthropic import FakeAnthropic, tool_use  # type: ignore[no-redef]

    with FakeAnthropic() as fake:
        fast = Settings(anthropic_model="claude-test-model", llm_timeout_s=2.0, llm_max_retries=1, llm_backoff_s=0.01)
        mem = make_memory(llm=AnthropicLLM(fast, api_key="sk-test", base_url=fake.url))
        a, b = _email_rules(mem)
        ctx = mem.context("Email Dana about the renewal", tool="send_email", entities=["Dana"])
        order = [s.learning.id for s in ctx.learnings]
        fake.push(tool_use({"reflection": "The bullets helped; the invoice rule misled.", "rules": [],
                            "helped": [order.index(a.id) + 1], "hurt": [order.index(b.id) + 1, 99]}))
        record = mem.reflect("Email Dana about the renewal", "Hi Dana, - renewal due", success=True,
                             context_id=ctx.id)
        [prompt] = [c for r in fake.requests if "LEARNINGS SHOWN" in (c := r.json["messages"][0]["content"])]
        assert "Use bullet points in emails to Dana" in prompt
        assert (record.helped, record.hurt) == ([a.id], [b.id])  # 99 names nothing shown: ignored
        assert (mem.get_learning(a.id).helpful, mem.get_learning(b.id).harmful) == (1, 1)


# --- exploration: a learning with few ratings gets a chance to be shown -----------------------------


def _rated_and_new(mem: Memory) -> tuple[Learning, Learning]:
    old = mem.add_learning("Email Dana a short summary of the renewal terms", tool="send_email", entities=["Dana"])
    for _ in range(4):  # a good record: 4 helpful ratings
        mem.record_outcome(show(mem, [old]), success=True)
    new = mem.add_learning("Email Dana a short summary of the renewal terms with dates", tool="send_email",
                           entities=["Dana"])
    return old, new


def test_a_new_learning_gets_a_chance_with_the_exploration_bonus(make_memory: Callable[..., Memory]) -> None:
    query = "Email Dana a short summary of the renewal terms"
    # the bonus was sized against rank fusion, where the 1st and 2nd of two close matches differ
    # little in relevance; score fusion (the default) scales a two-row pool to 1 and 0
    off = make_memory(settings=Settings(exploration_bonus=0.0, rank_fusion="rrf"), path=None)
    old, new = _rated_and_new(off)
    ctx = off.context(query, tool="send_email", entities=["Dana"], limit=1)
    assert [s.learning.id for s in ctx.learnings] == [old.id]  # without exploration the rated one wins
    assert "exploration" not in ctx.learnings[0].signals

    on = make_memory(settings=Settings(exploration_bonus=1.0, exploration_ratings=5, rank_fusion="rrf"), path=None)
    old, new = _rated_and_new(on)
    ctx = on.context(query, tool="send_email", entities=["Dana"], limit=2)
    by_id = {s.learning.id: s for s in ctx.learnings}
    assert ctx.learnings[0].learning.id == new.id  # never rated: the full bonus puts it first
    assert by_id[new.id].signals["exploration"] == pytest.approx(1.0)
    assert by_id[old.id].signals["exploration"] == pytest.approx(0.2)  # 4 of 5 ratings: a fifth of it
    assert any(r.startswith("exploration +1.00 (0 ratings)") for r in by_id[new.id].reasons)
