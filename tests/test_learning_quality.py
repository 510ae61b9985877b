"""What the learning loop learns must be right: scoped feedback, content-free feedback as outcomes,
corrections that replace, facts about the user, lifecycle of weak self-evaluation rules."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

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
    learning, links = mem._learnings.make_learning("Emails to Dana must use bullet points", tool="send_email",
                                         entities=["Dana"], source_type="self_evaluation")
    assert mem.curate(learning, links) is not None
    assert mem.get_learning(old.id).superseded_by is None
    # the same wording as the owner's feedback does supersede
    learning, links = mem._learnings.make_learning("Emails to Dana must use bullet points instead", tool="send_email",
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


# --- 4. facts about the user, with their history ------------------------------------------------


def test_facts_about_the_user_are_extracted_and_linked(mem: Memory) -> None:
    learned = mem.observe_message("My name is Alice and I live in Paris. I'm vegetarian.")
    contents = sorted(l.content for l in learned)
    assert contents == ["The user is vegetarian", "The user lives in Paris", "The user's name is Alice"]
    kinds = {l.content: l.kind for l in learned}
    assert kinds["The user lives in Paris"] == "fact" and kinds["The user is vegetarian"] == "preference"
    rows = mem.cypher("MATCH (l:Learning)-[:MENTIONS]->(e:Entity {name: 'Paris'}) RETURN l.content AS c")
    assert rows == [{"c": "The user lives in Paris"}]
    assert {f.fact_key for f in mem.facts(about="user")} == {"user|name", "user|home city", "user|diet"}


def test_a_new_value_supersedes_the_old_and_the_history_stays(make_memory: Callable[..., Memory], clock) -> None:  # type: ignore[no-untyped-def]
    mem = make_memory(clock=clock)
    [paris] = mem.observe_message("I live in Paris.")
    clock.advance(days=30)
    [berlin] = mem.observe_message("I moved to Berlin.")
    assert mem.get_learning(paris.id).superseded_by == berlin.id
    current = mem.facts(about="user")
    assert [f.learning.content for f in current] == ["The user lives in Berlin"]
    history = mem.facts(about="user", history=True)
    assert [f.learning.content for f in history] == ["The user lives in Paris", "The user lives in Berlin"]
    assert history[0].valid_to == history[1].valid_from == clock.now
    assert history[1].valid_to is None
    # the same value again reinforces, it does not supersede
    clock.advance(days=1)
    [again] = mem.observe_message("I live in Berlin.")
    assert again.id == berlin.id and again.validations == 1
    shown = mem.context("find a restaurant near home").to_prompt()
    assert "Paris" not in shown


def test_facts_about_other_people_and_multi_valued_facts(mem: Memory) -> None:
    mem.observe_message("Dana is my manager. I'm allergic to peanuts.")
    mem.observe_message("I'm allergic to shellfish. Dana moved to Rome.")
    keys = {f.fact_key for f in mem.facts()}
    assert {"user|role:manager", "user|allergy|peanuts", "user|allergy|shellfish", "dana|home city"} <= keys
    assert [f.learning.content for f in mem.facts(about="Dana")] == ["Dana lives in Rome"]


def test_questions_and_hypotheticals_are_not_facts(mem: Memory) -> None:
    assert mem.observe_message("Do I live in Paris?") == []
    assert mem.observe_message("If I lived in Paris, what would rent cost?") == []
    assert mem.facts(history=True) == []


# --- the Anthropic path: the model's facts and content-free verdicts are used the same way ------


def test_the_anthropic_path_stores_facts_and_treats_content_free_feedback_as_an_outcome(
    make_memory: Callable[..., Memory],
) -> None:
    from graphmem.config import Settings
    from graphmem.llm import AnthropicLLM

    try:
        from tests.fake_anthropic import FakeAnthropic, tool_use
    except ImportError:
        from fake_anthropic import FakeAnthropic, tool_use  # type: ignore[no-redef]

    with FakeAnthropic() as fake:
        fast = Settings(anthropic_model="claude-test-model", llm_timeout_s=2.0, llm_max_retries=1, llm_backoff_s=0.01)
        mem = make_memory(llm=AnthropicLLM(fast, api_key="sk-test", base_url=fake.url))
        fake.push(tool_use({"has_feedback": False, "confidence": 0.9, "facts": [
            {"subject": "user", "attribute": "home city", "value": "Paris", "kind": "fact", "single_valued": True,
             "statement": "The user lives in Paris", "entities": ["Paris"]}]}))
        [paris] = mem.observe_message("I live in Paris.")
        assert paris.kind == "fact" and paris.entities == ["Paris"]
        rule = mem.add_learning("Keep emails to Dana under 3 paragraphs", tool="send_email", entities=["Dana"])
        mem.context("email Dana", tool="send_email")
        fake.push(tool_use({"has_feedback": True, "feedback_type": "praise", "sentiment": "positive",
                            "confidence": 0.8, "learning": None}))
        assert mem.observe_message("Great job, thanks!") == []
        assert mem.get_learning(rule.id).helpful == 1
        assert "facts" in fake.requests[0].json["messages"][0]["content"]


# --- 6. weak self-evaluation rules enter as candidates ------------------------------------------


def test_low_confidence_self_evaluation_rules_are_candidates_not_served(mem: Memory) -> None:
    obj = mem.start_objective("Research CRM competitors", objective_type="research")
    for _ in range(2):
        mem.record_event("tool_call", "search: CRM competitors", tool="web_search", objective_id=obj.id)
        mem.record_event("tool_result", "Error: 429 too many requests", tool="web_search", success=False,
                         objective_id=obj.id)
    learned = mem.end_objective(obj.id, status="failed", result="Gave up after rate limits")
    evaluated = [l for l in learned if l.source_type == "self_evaluation"]
    assert evaluated and all(l.confidence < mem.settings.self_eval_active_confidence for l in evaluated)
    assert all(l.status == "candidate" for l in evaluated)
    shown = {s.learning.id for s in mem.context("research CRM competitors", tool="web_search").learnings}
    assert not shown & {l.id for l in evaluated}


# --- 5. user_preferences holds the user's preferences, at once, within budget --------------------


def test_user_preferences_hold_the_owner_s_words_not_weak_tool_advice(mem: Memory) -> None:
    weak, links = mem._learnings.make_learning("Space out web_search calls to avoid rate limits", tool="web_search",
                                     source_type="self_evaluation", confidence=0.15)
    mem.curate(weak, links)
    assert mem.summary("user_preferences").text == ""
    _send_email(mem)
    mem.observe_message("I prefer window seats when you book flights for me.")
    text = mem.summary("user_preferences").text  # refreshed at once by the first preference
    assert "window seats" in text and "web_search" not in text
    mem.observe_message("My name is Alice and I live in Paris.")
    mem.observe_message("Never cc Omar on Acme threads.")
    prompt = mem.context("email Dana about the renewal", tool="send_email").to_prompt()
    prefs = prompt.split("## User Preferences", 1)[1].split("##", 1)[0]
    assert "window seats" in prefs and "Space out web_search" not in prefs
    mem.refresh_summaries(force=True)
    text = mem.summary("user_preferences").text
    assert "The user lives in Paris" in text and "Never cc Omar on Acme threads" in text


def test_user_preferences_fit_their_budget_in_whole_bullets(make_memory: Callable[..., Memory]) -> None:
    from graphmem.config import Settings

    mem = make_memory(settings=Settings(budget_user_preferences=30))
    for i in range(8):
        mem.add_learning(f"Preference number {i}: always format the weekly digest with section {i} first",
                         kind="preference")
    mem.refresh_summaries(force=True)
    text = mem.summary("user_preferences").text
    assert text and all(line.startswith("- ") for line in text.splitlines())
    assert sum(len(line) // 4 + 1 for line in text.splitlines()) <= 30


def test_a_no_followed_by_an_instruction_is_the_instruction_not_its_opposite() -> None:
    from graphmem.llm.offline import analyse_feedback

    fb = analyse_feedback("No, mask email columns when selecting from the customers table.")
    assert fb.learning == "Mask email columns when selecting from the customers table"
    assert analyse_feedback("No, that was wrong.").learning is None
    assert analyse_feedback("No, the email was too long.").learning == "Make emails shorter"


# --- 8. credit goes to the learnings that were used ----------------------------------------------


def test_outcome_credit_goes_to_the_learnings_used_or_tagged(mem: Memory) -> None:
    import pytest

    from graphmem.errors import InvalidInputError

    a = mem.add_learning("Use bullet points in emails to Dana", tool="send_email", entities=["Dana"])
    b = mem.add_learning("Keep emails to Dana short", tool="send_email", entities=["Dana"])
    c = mem.add_learning("Sign emails to Dana with Best", tool="send_email", entities=["Dana"])
    ctx = mem.context("email Dana", tool="send_email", entities=["Dana"])
    assert {s.learning.id for s in ctx.learnings} >= {a.id, b.id, c.id}
    mem.record_outcome(ctx.id, success=True, used=[a.id])
    assert (mem.get_learning(a.id).helpful, mem.get_learning(b.id).helpful, mem.get_learning(c.id).helpful) == (1, 0, 0)
    ctx2 = mem.context("email Dana", tool="send_email", entities=["Dana"])
    mem.record_outcome(ctx2.id, success=False, helpful=[b.id], harmful=[c.id])
    assert (mem.get_learning(b.id).helpful, mem.get_learning(c.id).harmful) == (1, 1)
    assert mem.get_learning(a.id).harmful == 0
    ctx3 = mem.context("email Dana", tool="send_email", entities=["Dana"])
    with pytest.raises(InvalidInputError, match="did not show"):
        mem.record_outcome(ctx3.id, success=True, used=["not-shown"])
    with pytest.raises(InvalidInputError, match="both helpful and harmful"):
        mem.record_outcome(ctx3.id, success=True, helpful=[a.id], harmful=[a.id])
    report = mem.record_outcome(ctx3.id, success=True)  # nothing was written by the refused calls
    top = ctx3.learnings[0].learning.id
    assert report.shares[top] == max(report.shares.values()) < 1  # shared by rank, the first the most
    assert mem.get_learning(top).helpful == (2 if top in (a.id, b.id) else 1)


# --- 7. offline bullets are worded as actions, and the report says where they went -------------


def test_train_bullets_are_actions_and_the_report_says_where_they_went(mem: Memory) -> None:
    report = mem.train([{"input_text": "3+3?", "output": "7", "ground_truth": "6"}], node="math")
    assert report.learnings and all(l.kind != "observation" for l in report.learnings)
    assert 'always answer "6"' in report.learnings[0].content
    lines = report.stored()
    assert len(lines) == len(report.learnings) and all(("served" in x or "lifecycle" in x) for x in lines)


def test_the_train_command_says_what_was_stored_and_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from graphmem.cli import _register_groups, app

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    examples = tmp_path / "math.jsonl"
    examples.write_text('{"input_text": "3+3?", "output": "7", "ground_truth": "6"}\n'
                        '{"input_text": "2+2?", "output": "4", "ground_truth": "4"}\n', encoding="utf-8")
    _register_groups()
    out = CliRunner().invoke(app, ["--db", str(tmp_path / "cli.kuzu"), "--user", "alice", "--embedder", "hash",
                                   "train", str(examples), "--node", "math"])
    assert out.exit_code == 0, out.output
    assert "1 passed, 1 failed" in out.output
    assert "active rule: served by context()" in out.output and 'always answer "6"' in out.output


def test_the_caller_s_tool_hint_wins_over_a_word_that_merely_matches_another_tool(mem: Memory) -> None:
    _send_email(mem)
    [l] = mem.observe_message("No, mask email columns when selecting from the customers table.", tool="run_sql")
    assert l.tool == "run_sql" and l.kind == "rule" and l.status == "active"


def test_the_anthropic_path_asks_the_llm_which_same_scope_rules_a_correction_replaces(
    make_memory: Callable[..., Memory],
) -> None:
    from graphmem.config import Settings
    from graphmem.llm import AnthropicLLM

    try:
        from tests.fake_anthropic import FakeAnthropic, tool_use
    except ImportError:
        from fake_anthropic import FakeAnthropic, tool_use  # type: ignore[no-redef]

    with FakeAnthropic() as fake:
        fast = Settings(anthropic_model="claude-test-model", llm_timeout_s=2.0, llm_max_retries=1, llm_backoff_s=0.01,
                        summary_refresh="background")
        mem = make_memory(llm=AnthropicLLM(fast, api_key="sk-test", base_url=fake.url))
        stale = mem.add_learning("Dana likes her emails as flowing prose", tool="send_email", entities=["Dana"])
        kept = mem.add_learning("Keep emails to Dana short", tool="send_email", entities=["Dana"])
        fake.push(
            tool_use({"has_feedback": True, "feedback_type": "correction", "about_tool": "send_email",
                      "sentiment": "negative", "confidence": 0.8, "learning": "Use bullet points in emails to Dana",
                      "entities": ["Dana"]}),
            tool_use({"replaces": [1], "reasoning": "bullets vs prose"}),
        )
        [new] = mem.observe_message("No, use bullet points in emails to Dana.")
        asked = next(r.json["messages"][0]["content"] for r in fake.requests
                     if r.json["tool_choice"]["name"] == "record_contradiction")
        assert "Dana likes her emails as flowing prose" in asked and "Keep emails to Dana short" in asked
        listed = [line for line in asked.splitlines() if line[:3] in ("0: ", "1: ")]
        target = stale if any(line.startswith("1: Dana likes") for line in listed) else kept
        assert mem.get_learning(target.id).superseded_by == new.id
        other = kept if target is stale else stale
        assert mem.get_learning(other.id).superseded_by is None


# --- gaps a newcomer met: contractions, comma-separated facts, empty directives, stale bullets ------


def test_facts_in_comma_separated_clauses_and_after_i_ve(mem: Memory) -> None:
    learned = mem.observe_message("I'm vegetarian, I live in Paris.")
    assert sorted(l.content for l in learned) == ["The user is vegetarian", "The user lives in Paris"]
    [berlin] = mem.observe_message("I've moved to Berlin.")
    assert berlin.content == "The user lives in Berlin" and berlin.entities == ["Berlin"]
    assert [f.learning.content for f in mem.facts(about="user") if f.fact_key == "user|home city"] == [
        "The user lives in Berlin"]
    assert not [f for f in mem.facts(history=True) if f.fact_key.startswith("i")]  # never "I've" as a person


def test_empty_directives_and_not_what_i_asked_for_are_outcomes_not_advice(mem: Memory) -> None:
    rule = mem.add_learning("Keep emails to Dana under 3 paragraphs", tool="send_email", entities=["Dana"])
    for text in ("Not what I asked for.", "Don't do that again.", "Please stop doing that."):
        mem.context("email Dana about the renewal", tool="send_email")
        assert mem.observe_message(text) == [], text
    assert [l.id for l in mem.learnings()] == [rule.id]
    assert mem.get_learning(rule.id).harmful == 3  # each one blamed what was shown
    [kept] = mem.observe_message("Don't cc Omar again.")  # a directive with content stays advice
    assert "Omar" in kept.content


def test_a_superseded_preference_leaves_user_preferences_at_once(mem: Memory) -> None:
    _send_email(mem)
    [old] = mem.observe_message("Emails to Dana should be long flowing paragraphs.")
    assert "long flowing paragraphs" in mem.summary("user_preferences").text
    _send_email(mem)
    [new] = mem.observe_message("Emails to Dana must use bullet points instead.")
    assert mem.get_learning(old.id).superseded_by == new.id
    prefs = mem.context("write an email to Dana", tool="send_email").user_preferences
    assert "long flowing paragraphs" not in prefs and "bullet points" in prefs
    mem.observe_message("I live in Paris.")
    mem.observe_message("I moved to Berlin.")
    text = mem.summary("user_preferences").text
    assert "Paris" not in text and "Berlin" in text
