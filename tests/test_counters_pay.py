"""The helpful/harmful counters in ranking: the evidence-weighted record and the drop of learnings
whose ratings say with confidence that they hurt (graphmem/retrieve/fusion.py), and run_cycle
retiring them (graphmem/lifecycle.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from graphmem import Memory, Settings
from graphmem.lifecycle import clearly_harmful_record
from graphmem.retrieve.fusion import wilson_upper

QUERY = "Book meetings with Dana for a full hour"


def _pair(mem: Memory) -> tuple[str, str]:
    """Two same-scope learnings: the first matches the query better, the second is new."""
    stale = mem.add_learning("Book full-hour meetings with Dana", tool="create_calendar_event", entities=["Dana"])
    fresh = mem.add_learning("Keep meetings with Dana to 25 minutes", tool="create_calendar_event", entities=["Dana"])
    return stale.id, fresh.id


def _order(mem: Memory, limit: int = 5) -> list[str]:
    ctx = mem.context(QUERY, tool="create_calendar_event", entities=["Dana"], limit=limit)
    return [i.learning.id for i in ctx.learnings]


def test_a_learning_that_keeps_failing_falls_under_a_new_same_scope_one(make_memory: Callable[..., Memory]) -> None:
    # record_weight was sized against rank fusion, where two same-scope learnings ranked 1st and
    # 2nd differ little in relevance; under score fusion (the default) this pair's cosine (0.79
    # against 0.45) and BM25 keep the clearly better match first at 2 helpful / 6 harmful
    mem = make_memory(settings=Settings(rank_fusion="rrf"))
    stale, fresh = _pair(mem)
    assert _order(mem)[:2] == [stale, fresh]  # unrated: the better match first
    mem.update_learning(stale, helpful=2, harmful=6)  # mostly failing, not yet clearly harmful
    assert _order(mem)[:2] == [fresh, stale]
    ctx = mem.context(QUERY, tool="create_calendar_event", entities=["Dana"])
    rated = next(i for i in ctx.learnings if i.learning.id == stale)
    assert rated.signals["record"] < 0
    assert any(r.startswith("record -") for r in rated.reasons)


def test_without_the_record_the_quality_prior_alone_keeps_the_better_match_first(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory(settings=Settings(record_weight=0.0))
    stale, fresh = _pair(mem)
    mem.update_learning(stale, helpful=2, harmful=6)
    assert _order(mem)[:2] == [stale, fresh]


def test_few_ratings_move_a_learning_less_than_many(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    stale, _ = _pair(mem)
    mem.update_learning(stale, helpful=0, harmful=1)
    few = next(i for i in mem.context(QUERY, tool="create_calendar_event").learnings if i.learning.id == stale)
    mem.update_learning(stale, helpful=6, harmful=10)  # not clearly harmful yet
    many = next(i for i in mem.context(QUERY, tool="create_calendar_event").learnings if i.learning.id == stale)
    assert many.signals["record"] < few.signals["record"] < 0


def test_a_clearly_harmful_learning_is_dropped_even_when_the_filter_would_relax(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory()
    stale, fresh = _pair(mem)
    mem.update_learning(stale, helpful=0, harmful=4)
    assert _order(mem, limit=2) == [fresh]  # the success-rate filter alone keeps it (too few rows)
    off = make_memory(settings=Settings(harmful_max_success=0.0))
    assert set(_order(off, limit=2)) == {stale, fresh}
    prior_off = make_memory(settings=Settings(quality_prior_enabled=False))
    assert set(_order(prior_off, limit=2)) == {stale, fresh}


def test_three_failures_are_not_yet_clearly_harmful_and_a_pinned_learning_is_never_dropped(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory()
    stale, fresh = _pair(mem)
    mem.update_learning(stale, helpful=0, harmful=3)
    assert set(_order(mem, limit=2)) == {stale, fresh}
    mem.update_learning(stale, helpful=0, harmful=9, tier="pinned")
    assert stale in _order(mem, limit=2)


def test_wilson_upper_bound() -> None:
    up = wilson_upper(np.array([0, 0, 1, 3, 10]), np.array([0, 4, 8, 14, 10]), 1.96)
    assert up[0] == 1.0
    assert up[1] < 0.5 < wilson_upper(np.array([0]), np.array([3]), 1.96)[0]
    assert up[2] < 0.5 < wilson_upper(np.array([1]), np.array([7]), 1.96)[0]
    assert up[3] < 0.5 < up[4]


def test_run_cycle_retires_a_clearly_harmful_learning_and_insights_show_it(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    stale, fresh = _pair(mem)
    mem.update_learning(stale, helpful=0, harmful=4)
    mem.update_learning(fresh, helpful=0, harmful=3)  # not yet clearly harmful
    report = mem.run_cycle()
    retired = [c for c in report.transitions if c.learning_id == stale]
    assert [(c.old, c.new) for c in retired] == [("active", "disabled")]
    assert retired[0].reason.startswith("clearly harmful: 0 of 4 ratings helpful")
    l = mem.get_learning(stale)
    assert (l.status, l.tier) == ("disabled", "archive")
    assert mem.get_learning(fresh).status == "active"
    assert any(t.reason.startswith("retired: clearly harmful") for t in mem.store.transitions(stale))
    ins = mem.insights()
    assert ins.status_counts["disabled"] == 1
    assert stale not in _order(mem)
    assert not [c for c in mem.run_cycle().transitions if c.learning_id == stale]  # retired once


def test_pinned_learnings_prior_off_and_the_setting_off_retire_nothing(make_memory: Callable[..., Memory]) -> None:
    for settings in (Settings(quality_prior_enabled=False), Settings(retire_harmful_in_cycle=False),
                     Settings(harmful_max_success=0.0)):
        mem = make_memory(settings=settings, path=None)
        stale, _ = _pair(mem)
        mem.update_learning(stale, helpful=0, harmful=4)
        mem.run_cycle()
        assert mem.get_learning(stale).status == "active"
    l = mem.get_learning(stale)
    assert clearly_harmful_record(l, Settings()) is not None
    assert clearly_harmful_record(l.model_copy(update={"tier": "pinned"}), Settings()) is None
    assert clearly_harmful_record(l.model_copy(update={"harmful": 3}), Settings()) is None  # 0 of 3: not yet
