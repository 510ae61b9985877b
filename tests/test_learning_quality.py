"""What the learning loop learns must be right: scoped feedback, content-free feedback as outcomes,
corrections that replace, facts about the user, lifecycle of weak self-evaluation rules."""

from __future__ import annotations

from collections.abc import Callable

from graphmem import Memory


def _send_email(mem: Memory) -> None:
    mem.record_event("tool_call", "Sent a 6-paragraph email to Dana about the Q3 renewal", tool="send_email",
                     success=True)


# --- 1. scoped feedback ------------------------------------------------------------------------


def test_a_preference_about_something_else_is_not_filed_under_the_last_tool(mem: Memory) -> None:
    _send_email(mem)
    learned = mem.observe_message("I prefer window seats when you book flights for me.")
    assert len(learned) == 1
    assert learned[0].tool is None and "window seats" in learned[0].content
    assert mem.cypher("MATCH (l:Learning)-[:ABOUT_TOOL]->(t:Tool) RETURN t.name AS t") == []
    text = mem.context("book a restaurant for dinner").to_prompt()
    assert "send_email" not in text


def test_feedback_that_refers_to_the_last_action_is_about_its_tool(mem: Memory) -> None:
    _send_email(mem)
    learned = mem.observe_message("That email was too long, keep it under 3 paragraphs.")
    assert learned and learned[0].tool == "send_email"
    named = mem.observe_message("Always cache web search results.")
    assert named and named[0].tool is None  # no web_search action happened: a general rule


# --- 2. content-free feedback is an outcome, not advice ---------------------------------------


def test_content_free_praise_and_blame_write_no_learning(mem: Memory) -> None:
    _send_email(mem)
    assert mem.observe_message("Great job, thanks!") == []
    assert mem.observe_message("That was wrong.") == []
    assert mem.learnings() == []


def test_content_free_feedback_credits_or_blames_what_was_shown(mem: Memory) -> None:
    rule = mem.add_learning("Keep emails to Dana under 3 paragraphs", tool="send_email", entities=["Dana"])
    ctx = mem.context("email Dana about the renewal", tool="send_email")
    assert rule.id in [s.learning.id for s in ctx.learnings]
    _send_email(mem)
    assert mem.observe_message("Great job, thanks!") == []
    after = mem.get_learning(rule.id)
    assert after.helpful == 1 and after.harmful == 0
    ctx2 = mem.context("email Dana about the renewal", tool="send_email")
    assert rule.id in [s.learning.id for s in ctx2.learnings]
    assert mem.observe_message("That was wrong.") == []
    after = mem.get_learning(rule.id)
    assert after.helpful == 1 and after.harmful == 1
    # an explicit outcome may still replace the implicit one
    report = mem.record_outcome(ctx2.id, success=True)
    assert report.replaced_implicit and mem.get_learning(rule.id).harmful == 0


def test_content_free_feedback_without_an_open_context_is_a_no_op(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    assert mem.observe_message("Perfect, thank you!") == []
    assert mem.learnings() == []


# --- 3. an owner's correction replaces a differently worded rule on the same scope ----------------


def test_an_owner_correction_supersedes_the_stale_rule_on_the_same_aspect(mem: Memory) -> None:
    stale = mem.add_learning("Emails to Dana should be long flowing paragraphs", tool="send_email",
                             entities=["Dana"], source_type="offline")
    other = mem.add_learning("Keep emails to Omar short", tool="send_email", entities=["Omar"])
    _send_email(mem)
    [new] = mem.observe_message("Emails to Dana must use bullet points instead.")
    assert mem.get_learning(stale.id).superseded_by == new.id
    assert mem.get_learning(other.id).superseded_by is None
    shown = mem.context("email Dana about the renewal", tool="send_email", entities=["Dana"]).to_prompt()
    assert "bullet points" in shown and "flowing paragraphs" not in shown


def test_a_compatible_correction_keeps_the_older_rule(mem: Memory) -> None:
    old = mem.add_learning("Keep emails to Dana under 3 paragraphs", tool="send_email", entities=["Dana"])
    _send_email(mem)
    [new] = mem.observe_message("Emails to Dana must use bullet points.")
    assert new.id != old.id and mem.get_learning(old.id).superseded_by is None


def test_a_self_evaluation_rule_never_supersedes_on_aspect_alone(mem: Memory) -> None:
    old = mem.add_learning("Emails to Dana should be long flowing paragraphs", tool="send_email", entities=["Dana"])
    learning, links = mem._make_learning("Emails to Dana must use bullet points", tool="send_email",
                                         entities=["Dana"], source_type="self_evaluation")
    assert mem.curate(learning, links) is not None
    assert mem.get_learning(old.id).superseded_by is None
    # the same wording as the owner's feedback does supersede
    learning, links = mem._make_learning("Emails to Dana must use bullet points instead", tool="send_email",
                                         entities=["Dana"], source_type="user_feedback")
    new = mem.curate(learning, links)
    assert new is not None and mem.get_learning(old.id).superseded_by == new.id


def test_the_offline_supersede_rule_is_precise_on_the_labelled_pairs() -> None:
    from benchmarks.contradictions import evaluate, load_pairs

    pairs = load_pairs()
    assert len(pairs) >= 150
    labels = {(p["label"], p["scope"]) for p in pairs}
    assert {("contradicting", "same"), ("compatible", "same"), ("unrelated", "same"),
            ("contradicting", "different")} <= labels
    result = evaluate(pairs)
    assert result["precision"] >= 0.95  # a false supersede loses a good rule
    assert result["recall"] >= 0.6
    assert all(e["kind"] == "missed" for e in result["errors"])
