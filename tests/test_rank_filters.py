"""Seed 002's stage-2 (success rate) and stage-3 (semantic floor) filters in context()."""

from __future__ import annotations

from collections.abc import Callable

from graphmem import Memory, Settings


def test_rows_only_the_vector_signal_found_need_some_similarity(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.add_learning("Rotate the staging database credentials monthly", tool="run_sql")
    assert mem.context("quarterly party playlist ideas").learnings == []
    loose = mem.for_user("alice")
    loose.settings = Settings(vector_only_min_similarity=0.0)
    assert len(loose.context("quarterly party playlist ideas").learnings) == 1


def test_graph_or_fulltext_support_overrides_the_semantic_floor(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    target = mem.add_learning("Rotate the staging database credentials monthly", tool="run_sql")
    ctx = mem.context("quarterly party playlist ideas", tool="run_sql")
    assert [i.learning.id for i in ctx.learnings] == [target.id]


def test_learnings_rated_mostly_harmful_are_dropped(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(quality_prior_enabled=False))
    bad = mem.add_learning("Send the invoice email to Dana with the PDF attached", tool="send_email")
    good = mem.add_learning("Send invoices as links", tool="send_email")
    mem.update_learning(bad.id, helpful=1, harmful=6)
    top = mem.context("Send the invoice email to Dana with the PDF attached", tool="send_email", limit=1)
    assert [i.learning.id for i in top.learnings] == [good.id]
    both = mem.context("Send the invoice email to Dana with the PDF attached", tool="send_email", limit=2)
    assert {i.learning.id for i in both.learnings} == {good.id, bad.id}  # relaxed: too few otherwise
