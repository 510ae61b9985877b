"""Input validation at the boundary (graphmem/inputs.py): one regression test per finding.

Lone surrogates and NUL characters never reach Kùzu, string booleans are not taken as true,
malformed arguments raise InvalidInputError (never AttributeError/TypeError/pydantic errors),
naive datetimes follow one rule, dangling source events are refused before anything is written,
and Settings refuse out-of-range values.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from graphmem import Memory, Settings
from graphmem.config import SETTING_RANGES
from graphmem.errors import GraphmemError, InvalidInputError, NotFoundError
from graphmem.inputs import check_string, require_bool
from graphmem.store.consistency import mirror_mismatches

SURROGATE = json.loads('"\\ud800"')  # what a JSON decoder makes of an escaped lone surrogate
DONE_WHEN = "Actually, keep emails under 3 paragraphs. That last one was too long."


def _counts(mem: Memory) -> tuple[int, int]:
    """(learnings, events) in the file."""
    stats = mem.stats()
    return stats.get("Learning", 0), stats.get("Event", 0)


def _still_writable(mem: Memory) -> None:
    """The next unrelated writes, on the same tool and elsewhere, go through and stay mirrored."""
    a = mem.add_learning("Keep emails short", tool="send_email")
    b = mem.add_learning("Keep emails short and polite", tool="send_email", entities=["Dana"])
    mem.update_learning(a.id, helpful=2)
    mem.record_event("tool_call", "sent", tool="send_email", success=True)
    assert {a.id, b.id} <= {l.id for l in mem.learnings(tool="send_email")}
    assert mirror_mismatches(mem.store) == []


# --- lone surrogates and NUL -------------------------------------------------------------------
def test_check_string_refuses_surrogates_and_nul_and_keeps_valid_text() -> None:
    assert check_string("x", "héllo 😀 \n\t") == "héllo 😀 \n\t"
    with pytest.raises(InvalidInputError, match="surrogate"):
        check_string("x", "a" + SURROGATE)
    with pytest.raises(InvalidInputError, match="NUL"):
        check_string("x", "a\x00b")
    with pytest.raises(InvalidInputError, match="NUL"):
        check_string("x", "é\x00")


def test_a_surrogate_tool_name_is_refused_and_the_next_writes_work(mem: Memory) -> None:
    for _ in range(3):  # used to leave the Tool row in a write-write conflict until restart
        with pytest.raises(InvalidInputError, match=r"tool.*surrogate"):
            mem.add_learning("Keep emails short", tool=SURROGATE)
        with pytest.raises(InvalidInputError, match="surrogate"):
            mem.record_event("tool_call", "sent", tool="send" + SURROGATE)
    assert _counts(mem) == (0, 0)
    _still_writable(mem)


def test_a_surrogate_query_is_refused_and_the_next_write_works(mem: Memory) -> None:
    mem.add_learning("Keep emails under 3 paragraphs", tool="send_email")
    for call in (
        lambda: mem.search("emails" + SURROGATE),
        lambda: mem.search("emails" + SURROGATE, over="all"),
        lambda: mem.context("emails" + SURROGATE),
        lambda: mem.context("emails", tool="send" + SURROGATE),
        lambda: mem.learnings(tool=SURROGATE),
        lambda: mem.cypher("MATCH (l:Learning) WHERE l.content = $c RETURN l.id", {"c": SURROGATE}),
        lambda: mem.cypher("RETURN '" + SURROGATE + "' AS x"),
    ):
        with pytest.raises(InvalidInputError, match="surrogate"):
            call()
    _still_writable(mem)


@pytest.mark.parametrize("bad", [SURROGATE, "a\x00b"], ids=["surrogate", "nul"])
def test_every_string_argument_is_checked(make_memory: Callable[..., Memory], tmp_path: Path, bad: str) -> None:
    mem = make_memory()
    ctx = mem.context("emails")
    obj = mem.start_objective("Send the Q3 report")
    before = _counts(mem)
    calls: dict[str, Callable[[], Any]] = {
        "content": lambda: mem.add_learning("Keep " + bad),
        "entity": lambda: mem.add_learning("Keep it", entities=["Dana", bad]),
        "topic": lambda: mem.add_learning("Keep it", topics=[bad]),
        "recommendation": lambda: mem.add_learning("Keep it", recommendation=bad),
        "batch": lambda: mem.add_learnings([{"content": "fine"}, {"content": "x", "tool": bad}]),
        "metadata value": lambda: mem.record_event("message", "hi", metadata={"a": {"b": [bad]}}),
        "metadata key": lambda: mem.record_event("message", "hi", metadata={"a": {bad: 1}}),
        "session id": lambda: mem.record_event("message", "hi", session_id=bad),
        "role": lambda: mem.record_event("message", "hi", role=bad),
        "events batch": lambda: mem.record_events([{"kind": "message", "content": bad}]),
        "message": lambda: mem.observe_message("Please " + bad),
        "message tool": lambda: mem.observe_message("Please be brief", tool=bad),
        "goal": lambda: mem.start_objective(bad),
        "result": lambda: mem.end_objective(obj.id, result=bad),
        "reflect": lambda: mem.reflect("q", "a" + bad),
        "reflect tools": lambda: mem.reflect("q", "a", tools_used=[bad]),
        "trace": lambda: mem.trace("in", "out" + bad, node="n"),
        "judge": lambda: mem.add_judge("j", bad),
        "train": lambda: mem.train([{"input_text": bad, "output": "o"}]),
        "outcome reason": lambda: mem.record_outcome(ctx.id, success=True, reasons=["fallback", bad]),
        "context id": lambda: mem.record_outcome(bad, success=True),
        "learning id": lambda: mem.get_learning(bad),
        "retire reason": lambda: mem.retire_learning(mem.add_learning("Doomed one").id, reason=bad),
        "summary key": lambda: mem.summary("learning:tool:" + bad),
        "user": lambda: mem.for_user(bad),
        "new memory user": lambda: Memory(tmp_path / "other.kuzu", user=bad),
        "objective id": lambda: mem.record_event("message", "hi", objective_id=bad),
        "source event id": lambda: mem.add_learning("Keep it", source_event_id=bad),
        "cypher param": lambda: mem.cypher("RETURN $x AS x", {"x": [bad]}),
    }
    for label, call in calls.items():
        with pytest.raises(InvalidInputError) as info:
            call()
        assert "surrogate" in str(info.value) or "NUL" in str(info.value), label
    learnings, events = _counts(mem)
    assert (learnings - 1, events) == before  # only "Doomed one" was written (then the retire refused)
    _still_writable(mem)


# --- booleans are booleans ----------------------------------------------------------------------
def test_require_bool_takes_only_real_booleans() -> None:
    assert require_bool("x", True) is True and require_bool("x", False) is False
    for bad in ("no", "false", 0, 1, None, [], "True"):
        with pytest.raises(InvalidInputError, match="True or False"):
            require_bool("x", bad)


def test_is_owner_no_is_refused_not_taken_as_the_owner(mem: Memory) -> None:
    mem.record_event("tool_call", "Sent a 6-paragraph email to Dana", tool="send_email", success=True)
    before = _counts(mem)
    for value in ("no", "false", 0, None):
        with pytest.raises(InvalidInputError, match="is_owner"):
            mem.observe_message(DONE_WHEN, is_owner=value)  # type: ignore[arg-type]
    assert _counts(mem) == before  # no event, no learning
    assert mem.observe_message(DONE_WHEN, is_owner=False) == []
    assert mem.learnings() == []


def test_shared_no_does_not_share_a_learning(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="shared"):
        mem.add_learning("Keep emails short", shared="no")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="shared"):
        mem.add_learnings([{"content": "Keep emails short", "shared": "no"}])
    l = mem.add_learning("Keep emails short")
    with pytest.raises(InvalidInputError, match="shared"):
        mem.update_learning(l.id, shared="no")
    assert mem.get_learning(l.id).shared is False
    assert _counts(mem)[0] == 1


def test_every_boolean_argument_refuses_strings(mem: Memory) -> None:
    obj = mem.start_objective("Send the Q3 report")
    ctx = mem.context("emails")
    calls: dict[str, Callable[[], Any]] = {
        "success": lambda: mem.record_event("tool_result", "ok", tool="t", success="maybe"),  # type: ignore[arg-type]
        "is_owner": lambda: mem.record_event("message", "hi", is_owner="yes"),  # type: ignore[arg-type]
        "reflect": lambda: mem.end_objective(obj.id, reflect="no"),  # type: ignore[arg-type]
        "force": lambda: mem.refresh_summaries(force="no"),  # type: ignore[arg-type]
        "all_users": lambda: mem.refresh_summaries(all_users="no"),  # type: ignore[arg-type]
        "write": lambda: mem.cypher("MATCH (l:Learning) RETURN count(l)", write="no"),  # type: ignore[arg-type]
        "read_only": lambda: Memory(None, read_only="no"),  # type: ignore[arg-type]
        "outcome success": lambda: mem.record_outcome(ctx.id, success="no"),  # type: ignore[arg-type]
        "reflect success": lambda: mem.reflect("q", "a", success="no"),  # type: ignore[arg-type]
    }
    for label, call in calls.items():
        with pytest.raises(InvalidInputError, match="True"):
            call()
            pytest.fail(f"{label}: accepted")
    assert mem.store.get_objective(obj.id).status == "running", "end_objective(reflect='no') wrote"


# --- raw errors become InvalidInputErrors ---------------------------------------------------------
def test_malformed_arguments_raise_invalid_input_not_raw_errors(mem: Memory) -> None:
    ctx = mem.context("emails")
    calls: dict[str, Callable[[], Any]] = {
        "created_at str": lambda: mem.add_learning("Keep it", created_at="2024-01-01"),  # type: ignore[arg-type]
        "event created_at str": lambda: mem.record_event("message", "hi", created_at="2024-01-01"),  # type: ignore[arg-type]
        "entities int": lambda: mem.add_learning("Keep it", entities=5),  # type: ignore[arg-type]
        "event entities int": lambda: mem.record_event("message", "hi", entities=5),  # type: ignore[arg-type]
        "add_learnings None": lambda: mem.add_learnings(None),  # type: ignore[arg-type]
        "add_learnings dict": lambda: mem.add_learnings({"content": "x"}),  # type: ignore[arg-type]
        "record_events None": lambda: mem.record_events(None),  # type: ignore[arg-type]
        "record_events int keys": lambda: mem.record_events([{"kind": "message", 1: "x"}]),
        "reasons int": lambda: mem.record_outcome(ctx.id, success=True, reasons=5),  # type: ignore[arg-type]
        "success maybe": lambda: mem.record_event("tool_result", "x", success="maybe"),  # type: ignore[arg-type]
        "session_id int": lambda: mem.record_event("message", "hi", session_id=123),  # type: ignore[arg-type]
        "role int": lambda: mem.record_event("message", "hi", role=123),  # type: ignore[arg-type]
        "kind list": lambda: mem.record_event(["message"], "hi"),  # type: ignore[arg-type]
        "ttl huge": lambda: mem.add_learning("Keep it", ttl_days=10**30),
        "learning id int": lambda: mem.get_learning(5),  # type: ignore[arg-type]
        "context id int": lambda: mem.record_outcome(5, success=True),  # type: ignore[arg-type]
        "cypher params list": lambda: mem.cypher("RETURN 1", [1]),  # type: ignore[arg-type]
        "cypher query int": lambda: mem.cypher(5),  # type: ignore[arg-type]
        "pattern vector": lambda: mem.pattern_scores("abc"),
        "metadata nan": lambda: mem.record_event("message", "hi", metadata={"x": float("nan")}),
        "end status int": lambda: mem.end_objective(mem.start_objective("g").id, 5),  # type: ignore[arg-type]
        "insights timeline": lambda: mem.insights(timeline="x"),  # type: ignore[arg-type]
        "training min_confidence": lambda: mem.training_pairs(min_confidence="x"),  # type: ignore[arg-type]
    }
    for label, call in calls.items():
        try:
            call()
        except InvalidInputError:
            continue
        except Exception as e:  # pragma: no cover - the failure message names the case
            pytest.fail(f"{label}: raised {type(e).__name__}: {e}")
        pytest.fail(f"{label}: accepted")


@pytest.mark.parametrize("path", [12345, b"/tmp/x.kuzu", 3.5, ["a"]])
def test_memory_with_a_non_path_is_invalid_input(path: Any) -> None:
    with pytest.raises(InvalidInputError, match="path"):
        Memory(path, embedder=None)


def test_naive_created_at_is_refused_by_add_learning_and_record_event(mem: Memory) -> None:
    naive = datetime(2024, 1, 1, 12, 0)
    with pytest.raises(InvalidInputError, match="tzinfo=timezone"):
        mem.add_learning("Keep emails short", created_at=naive)
    with pytest.raises(InvalidInputError, match="tzinfo=timezone"):
        mem.record_event("message", "hi", created_at=naive)
    with pytest.raises(InvalidInputError, match="tzinfo=timezone"):
        mem.add_learnings([{"content": "Keep emails short", "created_at": naive}])
    assert _counts(mem) == (0, 0)
    aware = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    assert mem.add_learning("Keep emails short", created_at=aware).created_at == aware
    assert mem.record_event("message", "hi", created_at=aware).created_at == aware


def test_a_dangling_source_event_is_refused_before_anything_is_written(make_memory: Callable[..., Memory]) -> None:
    alice = make_memory("alice")
    bob = alice.for_user("bob")
    bobs_event = bob.record_event("message", "hello from bob")
    before = _counts(alice)
    with pytest.raises(NotFoundError):
        alice.add_learning("Keep emails short", tool="send_email", source_event_id="no-such-event")
    with pytest.raises(NotFoundError):
        alice.add_learning("Keep emails short", tool="send_email", source_event_id=bobs_event.id)
    with pytest.raises(NotFoundError):
        alice.add_learnings([{"content": "Keep emails short", "source_event_id": bobs_event.id}])
    assert _counts(alice) == before
    assert alice.stats().get("Tool", 0) == 0  # not even the Tool node was created
    own = alice.record_event("message", "hello from alice")
    l = alice.add_learning("Keep emails short", source_event_id=own.id)
    assert l.source_event_id == own.id


# --- Settings ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "changes",
    [
        {"budget_learnings": -1}, {"max_content_chars": 0}, {"max_query_chars": -5}, {"dedup_similarity": 1.5},
        {"mmr_lambda": -0.1}, {"weight_vector": float("nan")}, {"window_size": 0}, {"reject_score_delta": 0.2},
        {"search_fusion": "best"}, {"ttl_days": {"rule": 0}}, {"summary_thresholds": {"tool": 0}},
        {"new_reflection_status": "maybe"}, {"budget_learnings": "many"}, {"no_such_setting": 1},
    ],
)
def test_settings_refuse_out_of_range_values(changes: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError) as info:
        Settings(**changes)
    assert isinstance(info.value, ValueError) and isinstance(info.value, GraphmemError)
    assert next(iter(changes)) in str(info.value)


def test_every_numeric_setting_has_a_range_and_the_defaults_fit() -> None:
    defaults = Settings()
    numeric = {
        name for name, value in defaults.model_dump().items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    assert numeric - set(SETTING_RANGES) == set(), "add the new setting to SETTING_RANGES in config.py"
    assert set(SETTING_RANGES) - numeric == set()
    assert Settings(**defaults.model_dump()) == defaults


def test_mirror_mismatches_notices_a_catalog_out_of_step(mem: Memory) -> None:
    l = mem.add_learning("Keep emails short")
    assert mirror_mismatches(mem.store) == []
    mem.store.learning_catalog.remove(l.id)
    problems = mirror_mismatches(mem.store)
    assert any(l.id in p and "not in the mirror" in p for p in problems)


# --- the store's last line of defence ---------------------------------------------------------------
def test_the_store_refuses_a_surrogate_that_bypassed_the_api(mem: Memory) -> None:
    """Text from elsewhere (a model built with model_construct, a file) is checked once more."""
    before = mem.stats()
    with pytest.raises(InvalidInputError, match="surrogate"), mem.store.transaction():
        mem.store.write("MERGE (t:Tool {name: $name})", {"name": "fine"})
        mem.store.write("MERGE (t:Tool {name: $name})", {"name": "send" + SURROGATE})
    assert mem.stats() == before  # the transaction rolled back
    with pytest.raises(InvalidInputError, match="surrogate"):
        mem.store.read("MATCH (t:Tool) WHERE t.name IN $names RETURN t.name", {"names": ["a", SURROGATE]})
    with pytest.raises(InvalidInputError, match="surrogate"):
        mem.store.write("UNWIND $rows AS r MERGE (t:Tool {name: r.name})", {"rows": [{"name": SURROGATE}]})
    _still_writable(mem)


def test_reflect_on_another_users_event_is_refused_before_the_llm_runs(make_memory: Callable[..., Memory]) -> None:
    alice = make_memory("alice")
    bobs_event = alice.for_user("bob").record_event("message", "hello from bob")
    before = alice.stats()
    with pytest.raises(NotFoundError):
        alice.reflect("Send the report", "Sent it", event_id=bobs_event.id)
    with pytest.raises(NotFoundError):
        alice.reflect("Send the report", "Sent it", event_id="no-such-event")
    assert alice.stats() == before  # no Reflection written
