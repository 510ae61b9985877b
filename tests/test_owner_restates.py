"""The owner restating a learning that is out of use brings it back (graphmem/learn/feedback.py)."""

from __future__ import annotations

from collections.abc import Callable

from graphmem import Memory

RIGHT = "No, emails to Dana must use bullet points."
WRONG = "No, emails to Dana should be long flowing paragraphs."
TASK = "Email Dana about the budget"


def _say(mem: Memory, text: str) -> str:
    new = mem.observe_message(text, tool="send_email", is_owner=True, entities=["Dana"])
    assert len(new) == 1
    return new[0].id


def _served(mem: Memory) -> list[str]:
    return [i.learning.id for i in mem.context(TASK, tool="send_email", entities=["Dana"]).learnings]


def test_a_rule_a_wrong_correction_replaced_comes_back_when_the_owner_restates_it(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory()
    right = _say(mem, RIGHT)
    wrong = _say(mem, WRONG)  # a wrong correction supersedes the right rule
    assert mem.get_learning(right).superseded_by == wrong and _served(mem) == [wrong]
    assert _say(mem, RIGHT) == right  # merged into the old learning (a validation) ...
    back = mem.get_learning(right)
    assert (back.status, back.tier, back.superseded_by, back.validations) == ("active", "active", None, 1)
    assert mem.get_learning(wrong).superseded_by == right  # ... which replaces the wrong one in turn
    assert _served(mem) == [right]
    reasons = [t.reason for t in mem.store.transitions(right)]
    assert reasons[-1] == "the owner stated it again: back in use"


def test_a_retired_learning_the_owner_restates_is_active_again(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    lid = _say(mem, RIGHT)
    mem.retire_learning(lid, reason="retired by hand")
    assert _served(mem) == []
    assert _say(mem, RIGHT) == lid
    l = mem.get_learning(lid)
    assert (l.status, l.tier) == ("active", "active") and _served(mem) == [lid]


def test_a_repeat_of_a_live_learning_only_counts_a_validation(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    lid = _say(mem, RIGHT)
    version = mem.get_learning(lid).version
    assert _say(mem, RIGHT) == lid
    l = mem.get_learning(lid)
    assert (l.status, l.tier, l.version, l.validations) == ("active", "active", version, 1)
    assert mem.observe_message("Dana's emails should use bullet points", tool="send_email", is_owner=False) == []


def test_restating_a_learning_retired_as_clearly_harmful_gives_it_a_fresh_record(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory()
    lid = _say(mem, RIGHT)
    mem.update_learning(lid, helpful=0, harmful=4)  # four misreported outcomes in a row
    mem.run_cycle()
    assert mem.get_learning(lid).status == "disabled"  # retired as clearly harmful
    assert _say(mem, RIGHT) == lid
    l = mem.get_learning(lid)
    assert (l.status, l.tier, l.helpful, l.harmful) == ("active", "active", 0, 0)
    assert _served(mem) == [lid]
    assert "its record reset (was clearly harmful: 0 of 4" in mem.store.transitions(lid)[-1].reason
