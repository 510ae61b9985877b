"""Feedback extraction (issue 3, seed 001): Memory.observe_message and its bad inputs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from graphmem import Memory
from graphmem.errors import InvalidInputError, LLMValidationError
from graphmem.llm import LLMRequest, OfflineLLM

DONE_WHEN = "Actually, keep emails under 3 paragraphs. That last one was too long."


def _send_email(mem: Memory) -> None:
    mem.record_event("tool_call", "Sent a 6-paragraph email to Dana about the Q3 renewal", tool="send_email",
                     success=True)


def test_owner_feedback_becomes_one_negative_learning_about_the_tool(mem: Memory) -> None:
    _send_email(mem)
    learned = mem.observe_message(DONE_WHEN)
    assert len(learned) == 1
    l = learned[0]
    assert l.sentiment == "negative" and l.source_type == "user_feedback" and l.kind == "rule"
    assert l.tool == "send_email" and "3 paragraphs" in l.content
    assert l.recommendation and l.applies_when  # what_to_do_instead / what_was_wrong
    rows = mem.cypher("MATCH (l:Learning {id: $id})-[:ABOUT_TOOL]->(t:Tool) RETURN t.name AS t", {"id": l.id})
    assert rows == [{"t": "send_email"}]
    rows = mem.cypher(
        "MATCH (l:Learning {id: $id})-[:DERIVED_FROM]->(e:Event) RETURN e.content AS c, e.is_owner AS o", {"id": l.id}
    )
    assert rows == [{"c": DONE_WHEN, "o": True}]
    rows = mem.cypher("MATCH (l:Learning {id: $id})-[:FOR_OBJECTIVE_TYPE]->(o) RETURN o.name AS n", {"id": l.id})
    assert rows == [{"n": "email"}]
    assert mem.cypher("MATCH (l:Learning {id: $id})-[:ABOUT_TOPIC]->(t) RETURN t.name AS n", {"id": l.id})


def test_the_same_feedback_again_reinforces_instead_of_duplicating(mem: Memory) -> None:
    _send_email(mem)
    first = mem.observe_message(DONE_WHEN)[0]
    again = mem.observe_message(DONE_WHEN)
    assert [l.id for l in again] == [first.id] and again[0].validations == 1
    assert len(mem.learnings()) == 1


@pytest.mark.slow
def test_saying_it_in_other_words_reinforces_with_minilm(make_memory: Callable[..., Memory]) -> None:
    from graphmem.embed import SentenceTransformerEmbedder

    mem = make_memory(embedder=SentenceTransformerEmbedder())
    _send_email(mem)
    first = mem.observe_message(DONE_WHEN)[0]
    again = mem.observe_message("Please keep your emails short, no more than three paragraphs.")
    assert [l.id for l in again] == [first.id]
    assert again[0].validations == 1
    assert len(mem.learnings()) == 1


def test_non_owner_messages_are_logged_but_never_learned(mem: Memory) -> None:
    _send_email(mem)
    assert mem.observe_message(DONE_WHEN, is_owner=False, role="Dana") == []
    assert mem.learnings() == []
    rows = mem.cypher("MATCH (e:Event) WHERE e.kind = 'message' RETURN e.is_owner AS o, e.direction AS d")
    assert rows == [{"o": False, "d": "inbound"}]


def test_messages_without_feedback_learn_nothing(mem: Memory) -> None:
    _send_email(mem)
    assert mem.observe_message("ok thanks") == []
    assert mem.observe_message("What's on my calendar tomorrow?") == []
    assert mem.learnings() == []


def test_tool_falls_back_to_the_argument_then_the_latest_action(mem: Memory) -> None:
    mem.record_event("tool_call", "Posted the weekly update", tool="post_slack", success=True)
    learned = mem.observe_message("From now on always add a TL;DR line at the top.")
    assert learned and learned[0].tool == "post_slack"
    learned = mem.observe_message("Never include internal ticket numbers.", tool="write_report")
    assert learned and learned[0].tool == "write_report"


@pytest.mark.parametrize("bad", ["", "   \n", None, 42])
def test_empty_or_non_text_messages_are_invalid(mem: Memory, bad: Any) -> None:
    with pytest.raises(InvalidInputError):
        mem.observe_message(bad)
    assert mem.cypher("MATCH (e:Event) RETURN count(e) AS n") == [{"n": 0}]


def test_a_one_megabyte_message_is_invalid_and_not_logged(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="max_content_chars"):
        mem.observe_message("x" * 1_000_000)
    assert mem.cypher("MATCH (e:Event) RETURN count(e) AS n") == [{"n": 0}]


class _BadLLM(OfflineLLM):
    """Answers every feedback request with something that fails validation."""

    def generate(self, request: LLMRequest, schema: Any) -> Any:
        if request.task == "feedback":
            raise LLMValidationError("the model's answer does not validate as FeedbackAnalysis")
        return super().generate(request, schema)


def test_an_invalid_llm_answer_writes_no_learning_and_logs(
    make_memory: Callable[..., Memory], caplog: pytest.LogCaptureFixture
) -> None:
    mem = make_memory(llm=_BadLLM())
    _send_email(mem)
    with caplog.at_level(logging.ERROR, logger="graphmem.learn"):
        assert mem.observe_message(DONE_WHEN) == []
    assert "feedback extraction failed" in caplog.text
    assert mem.learnings() == []
    assert mem.cypher("MATCH (e:Event) WHERE e.kind = 'message' RETURN count(e) AS n") == [{"n": 1}]


def test_unknown_objective_is_not_found(mem: Memory) -> None:
    from graphmem.errors import NotFoundError

    with pytest.raises(NotFoundError):
        mem.observe_message(DONE_WHEN, objective_id="nope")


def test_feedback_within_an_objective_links_it(mem: Memory) -> None:
    obj = mem.start_objective("Email Dana about the renewal", objective_type="email")
    _send_email(mem)
    l = mem.observe_message(DONE_WHEN, objective_id=obj.id, entities=["Dana"])[0]
    rows = mem.cypher("MATCH (l:Learning {id: $id})-[:FOR_OBJECTIVE]->(o:Objective) RETURN o.id AS o", {"id": l.id})
    assert rows == [{"o": obj.id}]
    assert "Dana" in l.entities


def test_cli_observe_and_objective(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from typer.testing import CliRunner

    from graphmem.cli import _register_groups, app

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    _register_groups()
    runner = CliRunner()
    base = ["--db", str(tmp_path / "cli.kuzu"), "--user", "alice", "--embedder", "hash"]
    assert runner.invoke(app, base + ["event", "tool_call", "Sent a long email", "--tool", "send_email"]).exit_code == 0
    out = runner.invoke(app, base + ["observe", DONE_WHEN, "--json"])
    assert out.exit_code == 0, out.output
    learned = json.loads(out.stdout)
    assert len(learned) == 1 and learned[0]["tool"] == "send_email"
    out = runner.invoke(app, base + ["observe", "Keep emails short", "--not-owner", "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout) == []
    out = runner.invoke(app, base + ["objective", "start", "Research CRM competitors", "--json"])
    oid = json.loads(out.stdout)["id"]
    runner.invoke(app, base + ["event", "tool_result", "Error: 429", "--tool", "web_search", "--failure",
                               "--objective", oid])
    out = runner.invoke(app, base + ["objective", "end", oid, "--status", "failed", "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)
    out = runner.invoke(app, base + ["observe", ""])
    assert out.exit_code == 1 and "empty" in out.output
