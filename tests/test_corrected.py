"""Counters that pay, continued: the owner's correction is a verdict on the learning the agent
just acted on (graphmem/learn/corrected.py), and a record that says a learning helps keeps
failing lifecycle windows from demoting it (graphmem/lifecycle.py record_holds)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from graphmem import Memory, Settings
from graphmem.learn.corrected import REASON
from graphmem.lifecycle import step
from graphmem.models import Learning

TOOL, ENTITY = "run_sql", "orders"
TASK = "Query the orders table for the budget"
WRONG = "Query the orders table directly without EXPLAIN"
RIGHT = "No, run EXPLAIN first before querying the orders table."


def _act(mem: Memory, used: str, *, success: bool) -> str:
    """One context for the task; the agent acts on ``used`` and reports ``success``."""
    ctx = mem.context(TASK, tool=TOOL, entities=[ENTITY])
    assert used in [i.learning.id for i in ctx.learnings]
    mem.record_outcome(ctx.id, success=success, used=[used])
    return ctx.id


def _correct(mem: Memory, text: str = RIGHT, entity: str = ENTITY) -> list[Learning]:
    return mem.observe_message(text, tool=TOOL, is_owner=True, entities=[entity])


def test_a_correction_overrules_a_reported_success_and_replaces_the_rule_acted_on(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory()
    wrong = mem.add_learning(WRONG, tool=TOOL, entities=[ENTITY], kind="preference")
    _act(mem, wrong.id, success=True)  # the agent misreports a success
    assert mem.get_learning(wrong.id).helpful == 1
    (new,) = _correct(mem)  # ... and the owner says it was not what they wanted
    after = mem.get_learning(wrong.id)
    assert (after.helpful, after.harmful, after.validations) == (0, 1, 0)
    assert after.superseded_by == new.id and after.tier == "archive"
    assert any(REASON in t.reason for t in mem.store.transitions(wrong.id))
    served = [i.learning.id for i in mem.context(TASK, tool=TOOL, entities=[ENTITY]).learnings]
    assert served == [new.id]


def test_a_recorded_failure_is_not_counted_twice(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    wrong = mem.add_learning(WRONG, tool=TOOL, entities=[ENTITY], kind="preference")
    _act(mem, wrong.id, success=False)
    (new,) = _correct(mem)
    after = mem.get_learning(wrong.id)
    assert (after.helpful, after.harmful) == (0, 1) and after.superseded_by == new.id


def test_a_rule_with_a_good_record_is_blamed_but_stays(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    rule = mem.add_learning(WRONG, tool=TOOL, entities=[ENTITY], kind="preference")
    mem.update_learning(rule.id, helpful=3, harmful=0)
    _act(mem, rule.id, success=True)
    _correct(mem)
    after = mem.get_learning(rule.id)
    assert (after.helpful, after.harmful) == (3, 1)  # the success overruled, the rule still in use
    assert after.superseded_by is None and after.tier != "archive"


@pytest.mark.parametrize("settings", [Settings(quality_prior_enabled=False), Settings(correction_replaces_used=False)])
def test_off_with_the_prior_or_the_setting(make_memory: Callable[..., Memory], settings: Settings) -> None:
    mem = make_memory(settings=settings)
    wrong = mem.add_learning(WRONG, tool=TOOL, entities=[ENTITY], kind="preference")
    _act(mem, wrong.id, success=True)
    _correct(mem)
    after = mem.get_learning(wrong.id)
    assert (after.helpful, after.harmful, after.superseded_by) == (1, 0, None)


def test_only_the_learning_acted_on_in_the_corrections_scope(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    wrong = mem.add_learning(WRONG, tool=TOOL, entities=[ENTITY], kind="preference")
    other = mem.add_learning("Query the orders table with a LIMIT of 100", tool=TOOL, entities=[ENTITY])
    _act(mem, wrong.id, success=False)
    _correct(mem, "No, mask email columns when selecting from the customers table.", entity="customers")
    assert mem.get_learning(wrong.id).superseded_by is None  # another entity: not what was corrected
    _act(mem, wrong.id, success=False)
    _correct(mem)
    assert mem.get_learning(wrong.id).superseded_by is not None
    assert mem.get_learning(other.id).superseded_by is None  # shown, not acted on


def test_the_owner_restating_the_rule_acted_on_does_not_blame_it(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    rule = mem.add_learning("Run EXPLAIN first before querying the orders table", tool=TOOL, entities=[ENTITY])
    _act(mem, rule.id, success=True)
    (same,) = _correct(mem)  # the same words: merged into the rule, a validation
    assert same.id == rule.id
    after = mem.get_learning(rule.id)
    assert (after.helpful, after.harmful, after.superseded_by) == (1, 0, None)


def test_a_record_that_helps_keeps_failing_windows_from_demoting() -> None:
    helps = Learning(content="x", status="active", helpful=15, harmful=6, fail_streak=1)
    assert step(helps, "fail", Settings()) == {"fail_streak": 2, "pass_streak": 0}
    for s in (Settings(quality_prior_enabled=False), Settings(record_holds_status=False)):
        assert step(helps, "fail", s)["status"] == "canary"
    even = helps.model_copy(update={"helpful": 6})
    assert step(even, "fail", Settings())["status"] == "canary"  # helpful = harmful: no say
    canary = helps.model_copy(update={"status": "canary"})
    assert "status" not in step(canary, "fail", Settings())
