"""Summaries: staleness counters, thresholds, the incremental refresher, isolation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from graphmem import Memory, Settings
from graphmem.errors import InvalidInputError, NotFoundError, StoreError
from graphmem.llm.base import LLMRequest
from graphmem.llm.offline import OfflineLLM
from graphmem.models import Learning
from graphmem.summaries import ExtractiveSummarizer, LLMSummarizer, Summarizer, parse_key, summary_key

MakeMemory = Callable[..., Memory]
BACKGROUND = Settings(summary_refresh="background")


class CountingLLM:
    """OfflineLLM that records every request it answers."""

    name = "counting"

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []
        self._inner = OfflineLLM()

    def generate(self, request: LLMRequest, schema: Any) -> Any:
        self.requests.append(request)
        return self._inner.generate(request, schema)


def staleness(mem: Memory) -> dict[str, int]:
    return {s.key: s.staleness for s in mem.summaries()}


# --- the "Done when" walk-through ------------------------------------------------------
def test_done_when_walkthrough(make_memory: MakeMemory, clock: Any) -> None:
    mem = make_memory(clock=clock)
    prefs = [
        mem.add_learning("Keep emails under 3 paragraphs", kind="preference"),
        mem.add_learning("Use British spelling in documents", kind="preference"),
    ]
    summary = mem.summary("user_preferences")
    assert summary.staleness == 1  # the first preference refreshed it at once; the second waits
    assert summary.text == "- Keep emails under 3 paragraphs"
    clock.advance(minutes=1)
    prefs.append(mem.add_learning("Never book meetings before 10am", kind="preference", sentiment="negative"))
    assert mem.summary("user_preferences").staleness == 2
    clock.advance(minutes=1)
    prefs.append(mem.add_learning("Reply in English", kind="preference"))
    summary = mem.summary("user_preferences")  # inline mode: refreshed once the threshold is crossed
    assert summary.staleness == 0
    assert summary.refreshed_at == clock.now
    for text in ("Keep emails under 3 paragraphs", "Use British spelling in documents", "Never book meetings before 10am"):
        assert text in summary.text
    assert summary.text.splitlines()[0] == "- Never book meetings before 10am"  # corrections first
    ctx = mem.context("write an email")
    assert "## User Preferences" in ctx.to_prompt()
    assert "Keep emails under 3 paragraphs" in ctx.to_prompt()

    clock.advance(minutes=1)
    mem.add_learning("Cite sources inline", kind="preference")
    assert mem.summary("user_preferences").staleness == 1  # stale again
    assert mem.refresh_summaries() == []  # below threshold: untouched
    clock.advance(minutes=1)
    mem.retire_learning(prefs[1].id)  # a preference leaving use leaves the summary at once
    after = mem.summary("user_preferences")
    assert "British spelling" not in after.text and "Keep emails under 3 paragraphs" in after.text
    assert "Cite sources inline" in after.text and after.staleness == 0 and after.refreshed_at == clock.now


def test_retired_learning_dropped_by_incremental_refresh(make_memory: MakeMemory) -> None:
    llm = CountingLLM()
    mem = make_memory(llm=llm, settings=BACKGROUND)
    a = mem.add_learning("Keep emails under 3 paragraphs", kind="preference")
    mem.add_learning("Use British spelling", kind="preference")
    mem.add_learning("Cite sources inline", kind="preference")
    assert [s.key for s in mem.refresh_summaries()] == ["user_preferences"]
    mem.retire_learning(a.id)
    mem.add_learning("Sign emails with Best", kind="preference")
    mem.add_learning("Prefer tables over prose", kind="preference")
    llm.requests.clear()
    [summary] = mem.refresh_summaries()
    assert "Keep emails under 3 paragraphs" not in summary.text
    assert "Sign emails with Best" in summary.text and "Use British spelling" in summary.text
    [request] = llm.requests
    assert request.inputs["removed"] == ["Keep emails under 3 paragraphs"]
    assert sorted(i["content"] for i in request.inputs["learnings"]) == ["Prefer tables over prose", "Sign emails with Best"]
    assert a.id not in mem.store.summary_learning_ids("alice", "user_preferences")


# --- counters and thresholds -------------------------------------------------------------------
def test_counters_increment_exactly_fed_summaries(make_memory: MakeMemory) -> None:
    mem = make_memory(settings=BACKGROUND)
    mem.add_learning("Retry search after a 429", kind="rule", tool="web_search", topics=["rate limits"],
                     objective_type="research")
    assert staleness(mem) == {
        "learning:objective_type:research": 1, "learning:tool:web_search": 1,
        "learning:topic:rate limits": 1, "user_preferences": 1,
    }
    mem.add_learning("web_search returns at most 10 results", kind="observation", tool="web_search")
    assert staleness(mem)["learning:tool:web_search"] == 2
    assert staleness(mem)["user_preferences"] == 1  # observations do not feed user_preferences
    mem.add_learning("Maybe mornings are better", kind="hypothesis", tool="web_search")
    mem.add_learning("A shadow rule", kind="rule", status="candidate", tool="web_search")
    assert staleness(mem)["learning:tool:web_search"] == 2  # ineligible learnings feed nothing
    assert mem.summary("learning:tool:web_search").threshold == 5
    assert mem.summary("user_preferences").threshold == 3


def test_update_and_promotion_count_once_per_fed_summary(make_memory: MakeMemory) -> None:
    mem = make_memory(settings=BACKGROUND)
    cand = mem.add_learning("Use the v2 API", kind="rule", status="candidate", tool="crm")
    assert staleness(mem) == {}
    mem.update_learning(cand.id, status="active")  # promoted: now it feeds
    assert staleness(mem) == {"learning:tool:crm": 1, "user_preferences": 1}
    mem.update_learning(cand.id, score=0.9)  # an outcome moving the score
    assert staleness(mem) == {"learning:tool:crm": 2, "user_preferences": 2}
    mem.update_learning(cand.id, status="candidate")  # demoted: counts once more, then feeds nothing
    assert staleness(mem) == {"learning:tool:crm": 3, "user_preferences": 3}
    mem.update_learning(cand.id, score=0.1)
    assert staleness(mem) == {"learning:tool:crm": 3, "user_preferences": 3}
    mem.add_learning("Use the v2 API", kind="rule", tool="crm")  # merge into the candidate: ineligible
    assert staleness(mem)["learning:tool:crm"] == 3


def test_below_threshold_untouched_and_force_refreshes_all(make_memory: MakeMemory) -> None:
    llm = CountingLLM()
    mem = make_memory(llm=llm, settings=BACKGROUND)
    for i in range(3):
        mem.add_learning(f"Email rule number {i} about greetings", kind="rule", tool="send_email")
    assert [s.key for s in mem.refresh_summaries()] == ["user_preferences"]  # tool at 3 < 5
    assert mem.summary("learning:tool:send_email").staleness == 3
    assert mem.summary("learning:tool:send_email").text == ""
    assert len(llm.requests) == 1
    keys = sorted(s.key for s in mem.refresh_summaries(force=True))
    assert keys == ["learning:tool:send_email", "user_preferences"]
    assert all(s.staleness == 0 for s in mem.summaries())
    assert "Email rule number 0 about greetings" in mem.summary("learning:tool:send_email").text


def test_thresholds_come_from_settings(make_memory: MakeMemory) -> None:
    settings = Settings(summary_refresh="background", summary_thresholds={"user_preferences": 1, "tool": 2, "topic": 5, "objective_type": 5})
    mem = make_memory(settings=settings)
    mem.add_learning("Use ISO dates", kind="rule", tool="calendar")
    assert [s.key for s in mem.refresh_summaries()] == ["user_preferences"]
    mem.add_learning("Include the timezone", kind="rule", tool="calendar")
    assert sorted(s.key for s in mem.refresh_summaries()) == ["learning:tool:calendar", "user_preferences"]


# --- the refresher -----------------------------------------------------------------------------
def test_nothing_stale_makes_no_llm_call(make_memory: MakeMemory) -> None:
    llm = CountingLLM()
    mem = make_memory(llm=llm, settings=BACKGROUND)
    assert mem.refresh_summaries() == []
    mem.add_learning("Keep answers short", kind="preference")
    assert [s.key for s in mem.refresh_summaries()] == ["user_preferences"]  # the first preference: due at once
    llm.requests.clear()
    assert mem.refresh_summaries() == []
    assert llm.requests == []


def test_incremental_call_gets_only_changed_learnings(make_memory: MakeMemory, clock: Any) -> None:
    llm = CountingLLM()
    mem = make_memory(llm=llm, settings=BACKGROUND, clock=clock)
    for text in ("Old preference one", "Old preference two", "Old preference three"):
        clock.advance(seconds=1)
        mem.add_learning(text, kind="preference")
    mem.refresh_summaries()
    first = mem.summary("user_preferences")
    llm.requests.clear()
    for text, sentiment in (("New praise", "positive"), ("New neutral", "neutral"), ("New correction", "negative")):
        clock.advance(seconds=1)
        mem.add_learning(text, kind="preference", sentiment=sentiment)
    mem.refresh_summaries()
    [request] = llm.requests
    assert request.inputs["previous"] == first.text
    assert [i["content"] for i in request.inputs["learnings"]] == ["New correction", "New neutral", "New praise"]
    assert request.inputs["removed"] == []
    assert "Old preference one" in mem.summary("user_preferences").text


def test_inline_refresh_runs_after_batch_commit(make_memory: MakeMemory) -> None:
    llm = CountingLLM()
    mem = make_memory(llm=llm)
    mem.add_learnings([{"content": f"Batch preference {i}", "kind": "preference"} for i in range(4)])
    assert len(llm.requests) == 1  # one refresh after the batch, not one per item
    assert mem.summary("user_preferences").staleness == 0
    assert "Batch preference 3" in mem.summary("user_preferences").text


def test_background_mode_never_refreshes_inline(make_memory: MakeMemory) -> None:
    llm = CountingLLM()
    mem = make_memory(llm=llm, settings=BACKGROUND)
    for i in range(4):
        mem.add_learning(f"Background preference {i}", kind="preference")
    assert llm.requests == [] and mem.summary("user_preferences").staleness == 4


def test_summary_embedding_stored(make_memory: MakeMemory) -> None:
    mem = make_memory()
    for i in range(3):
        mem.add_learning(f"Embedded preference {i}", kind="preference")
    vector = mem.store.summary_embedding("alice", "user_preferences")
    assert vector is not None and vector.shape == (mem.embedder.dim,) and float(abs(vector).sum()) > 0


# --- transactions and users ------------------------------------------------------------------
def test_rollback_leaves_staleness_unchanged(make_memory: MakeMemory) -> None:
    mem = make_memory(settings=BACKGROUND)
    mem.add_learning("Keep emails short", kind="preference", tool="send_email")
    before = staleness(mem)
    with pytest.raises(RuntimeError), mem.store.transaction():
        mem.add_learning("Inside a failed transaction", kind="preference", tool="send_email")
        raise RuntimeError("boom")
    assert staleness(mem) == before
    assert mem.learnings(tool="send_email")[0].content == "Keep emails short"


def test_rollback_of_failing_hook_write(make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = make_memory(settings=BACKGROUND)
    learning = mem.add_learning("Keep emails short", kind="preference", tool="send_email")
    before = staleness(mem)

    def fail(*args: Any, **kwargs: Any) -> None:
        raise StoreError("disk full")

    monkeypatch.setattr(mem.store, "log_transition", fail)
    with pytest.raises(StoreError):
        mem.update_learning(learning.id, status="canary")  # staleness bumped, then the write fails
    assert staleness(mem) == before


def test_other_users_summaries_are_separate(make_memory: MakeMemory) -> None:
    alice = make_memory(settings=BACKGROUND)
    bob = alice.for_user("bob")
    for i in range(3):
        alice.add_learning(f"Alice likes option {i}", kind="preference")
    bob.add_learning("Bob likes terse replies", kind="preference")
    assert alice.summary("user_preferences").staleness == 3
    assert bob.summary("user_preferences").staleness == 1
    [refreshed] = alice.refresh_summaries()
    assert refreshed.user_id == "alice" and "Bob" not in refreshed.text
    assert bob.summary("user_preferences").text == ""
    assert bob._summaries.user_preferences_text() == ""
    [first] = bob.refresh_summaries()  # a first preference is due at once, below the threshold
    assert first.user_id == "bob" and "Alice" not in first.text and "Bob likes terse replies" in first.text


def test_refresh_all_users(make_memory: MakeMemory) -> None:
    alice = make_memory(settings=BACKGROUND)
    bob = alice.for_user("bob")
    for i in range(3):
        alice.add_learning(f"Alice rule {i}", kind="rule")
        bob.add_learning(f"Bob rule {i}", kind="rule")
    refreshed = bob.refresh_summaries(all_users=True)
    assert sorted(s.user_id for s in refreshed) == ["alice", "bob"]


# --- keys and reads ----------------------------------------------------------------------------
def test_summary_keys_and_errors(make_memory: MakeMemory) -> None:
    mem = make_memory()
    assert summary_key("tool", "x") == "learning:tool:x"
    assert parse_key("learning:topic:a:b") == ("topic", "a:b")
    assert mem.summary("user_preferences").text == ""  # exists implicitly, empty
    with pytest.raises(NotFoundError, match="learning:tool:nope"):
        mem.summary("learning:tool:nope")
    with pytest.raises(InvalidInputError, match="keys are"):
        mem.summary("tools")


def test_summarizers_share_the_interface() -> None:
    def learning(content: str, sentiment: str = "neutral") -> Learning:
        return Learning.model_validate({"content": content, "kind": "preference", "sentiment": sentiment})

    for summarizer in (ExtractiveSummarizer(), LLMSummarizer(OfflineLLM())):
        assert isinstance(summarizer, Summarizer)
        text = summarizer.summarize("- Keep it short\n- Use tabs", [learning("Use spaces", "negative")],
                                    [learning("Use tabs")], 10)
        assert text.splitlines() == ["- Use spaces", "- Keep it short"]


def test_cli_refresh(make_memory: MakeMemory, db_path: Any) -> None:
    import json

    import graphmem.cli.summaries  # noqa: F401  -- registers `refresh`
    from graphmem.cli import app

    mem = make_memory(settings=BACKGROUND)
    for i in range(3):
        mem.add_learning(f"CLI preference {i}", kind="preference")
    mem.close()
    runner = CliRunner()
    result = runner.invoke(app, ["--db", str(db_path), "--user", "alice", "--embedder", "hash", "refresh", "--json"])
    assert result.exit_code == 0, result.output
    assert [s["key"] for s in json.loads(result.stdout)] == ["user_preferences"]
    result = runner.invoke(app, ["--db", str(db_path), "--user", "alice", "--embedder", "hash", "refresh", "--json"])
    assert json.loads(result.stdout) == []
