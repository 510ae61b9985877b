"""Context assembly: prompt sections, token budgets, packing."""

from __future__ import annotations

from graphmem import Memory
from graphmem.models import Learning
from graphmem.retrieve.context import AssembledContext, ScoredLearning, estimate_tokens, pack, truncate_to_tokens


def _item(content: str, tool: str | None = None, recommendation: str | None = None) -> ScoredLearning:
    return ScoredLearning(learning=Learning(content=content, tool=tool, recommendation=recommendation), score=1.0)


def test_to_prompt_formats_seed_001_sections() -> None:
    ctx = AssembledContext(
        id="a", query="q", tool="send_email", user_preferences="- Prefers short emails",
        learnings=[_item("Dana wants bullets", tool="send_email"), _item("Check the CRM first", recommendation="Open Acme's record")],
        budget_user_preferences=300, budget_learnings=200,
    )
    assert ctx.to_prompt() == (
        "## User Preferences\n- Prefers short emails\n\n"
        "## Relevant Learnings\n- **send_email**: Dana wants bullets\n- Check the CRM first\n  → Open Acme's record"
    )


def test_to_prompt_empty_sections_left_out() -> None:
    ctx = AssembledContext(id="a", query="", tool=None, user_preferences="", learnings=[], budget_user_preferences=300, budget_learnings=200)
    assert ctx.to_prompt() == ""
    ctx.learnings = [_item("x")]
    assert ctx.to_prompt() == "## Relevant Learnings\n- x"


def test_budgets_are_respected() -> None:
    prefs = "word " * 1000
    items = [_item(f"learning number {i} " + "padding " * 10) for i in range(20)]
    ctx = AssembledContext(id="a", query="", tool=None, user_preferences=prefs, learnings=items, budget_user_preferences=50, budget_learnings=100)
    text = ctx.to_prompt()
    prefs_part, learnings_part = text.split("\n\n## Relevant Learnings")
    assert estimate_tokens(prefs_part.removeprefix("## User Preferences\n")) <= 50
    assert prefs_part.endswith("…")
    assert estimate_tokens("## Relevant Learnings" + learnings_part) <= 100
    assert 0 < learnings_part.count("\n- ") < 20


def test_pack_skips_long_items_but_keeps_later_short_ones() -> None:
    items = [_item("short one"), _item("long " * 200), _item("short two")]
    assert [i.learning.content for i in pack(items, 30)] == ["short one", "short two"]
    assert pack(items, 1) == []


def test_truncate_to_tokens() -> None:
    assert truncate_to_tokens("abc", 5) == "abc"
    out = truncate_to_tokens("alpha beta gamma delta epsilon", 3)
    assert len(out) <= 12 and out.endswith("…")


def test_context_budget_and_preferences_from_memory(mem: Memory) -> None:
    for i in range(30):
        mem.add_learning(f"Email rule {i}: keep the tone friendly and the subject line under sixty characters", tool="send_email")
    small = mem.context("email tone", tool="send_email", limit=30, token_budget=60)
    large = mem.context("email tone", tool="send_email", limit=30, token_budget=2000)
    assert 0 < len(small.learnings) < len(large.learnings)
    assert estimate_tokens(small.to_prompt().split("## Relevant Learnings")[-1]) <= 60
    assert small.budget_learnings == 60
    default = mem.context("email tone", tool="send_email")
    assert default.budget_learnings == mem.settings.budget_learnings
    assert default.user_preferences == mem._summaries.user_preferences_text()
    assert "## Relevant Learnings" in default.to_prompt()
    assert all("**send_email**" in line for line in default.to_prompt().split("## Relevant Learnings")[1].strip().splitlines())
