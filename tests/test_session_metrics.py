"""Session metrics: contexts, outcomes, learnings created/shown/used and judge pass rates per session."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphmem import InvalidInputError, Memory
from tests.conftest import FakeClock

CREATED: dict[str, set[str]] = {}
FEEDBACK = "Actually, keep emails under 3 paragraphs. That last one was too long."


@pytest.fixture
def busy(make_memory: Callable[..., Memory], clock: FakeClock) -> Memory:
    """Two sessions: s1 with feedback, contexts, outcomes and traces; s2 (later) with one context."""
    mem = make_memory(clock=clock)
    mem.record_event("tool_call", "send_email to the team", tool="send_email", session_id="s1")
    learned = mem.observe_message(FEEDBACK, tool="send_email", session_id="s1")
    assert learned
    mem.add_learning("Sign emails with the full name", tool="send_email")
    ctxs = [mem.context("write an email", tool="send_email", session_id="s1") for _ in range(3)]
    mem.record_outcome(ctxs[0].id, success=True)
    mem.record_outcome(ctxs[1].id, success=False, used=[ctxs[1].learnings[0].id])
    mem.record_outcome(ctxs[2].id, rating="okay")
    mem.add_judge("brevity", "The output is at most 5 words", node="summarise")
    mem.add_judge("json", "The output is valid JSON", node="summarise")
    mem.trace("Summarise the memo", '{"summary": "short"}', node="summarise", session_id="s1")
    failed = mem.trace("Summarise the memo", "this is not json and it is much too long", node="summarise",
                       session_id="s1")
    assert failed.learnings
    CREATED["s1"] = {l.id for l in learned} | {l.id for l in failed.learnings}
    clock.advance(hours=1)
    mem.context("write an email", tool="send_email", session_id="s2")
    mem.context("unrelated, no session")
    return mem


def test_per_session_figures(busy: Memory) -> None:
    s2, s1 = busy.session_metrics()
    assert (s2.session_id, s1.session_id) == ("s2", "s1")  # latest activity first
    assert (s1.contexts, s1.outcomes, s1.accepted, s1.rejected) == (3, 3, 1, 1)
    assert s1.success_rate == pytest.approx(0.5)  # the okay rating is neutral
    assert s1.events == 2  # the tool call and the message
    assert s1.learnings_created == len(CREATED["s1"])  # from the feedback and from the failed trace
    assert s1.learnings_shown == 2
    assert s1.learnings_used == 2  # the success is shared by rank (both), the failure names one of them
    assert s1.traces == 2 and s1.trace_pass_rate == pytest.approx(0.5)
    assert s1.judge_pass_rates == {"brevity": pytest.approx(0.5), "json": pytest.approx(0.5)}
    assert (s2.contexts, s2.outcomes, s2.success_rate, s2.traces) == (1, 0, None, 0)
    assert s1.started_at is not None and s2.last_at is not None and s1.started_at < s2.last_at


def test_one_session_and_limits(busy: Memory) -> None:
    [only] = busy.session_metrics("s1")
    assert only.contexts == 3
    assert [m.session_id for m in busy.session_metrics(limit=1)] == ["s2"]
    [unknown] = busy.session_metrics("never-seen")
    assert unknown.contexts == 0 and unknown.success_rate is None
    with pytest.raises(InvalidInputError, match="limit"):
        busy.session_metrics(limit=0)
    with pytest.raises(InvalidInputError, match="session_id"):
        busy.session_metrics("  ")
    with pytest.raises(InvalidInputError, match="session_id"):
        busy.context("x", session_id=5)  # type: ignore[arg-type]


def test_other_users_sessions_are_not_counted(busy: Memory) -> None:
    bob = busy.for_user("bob")
    bob.context("write an email", session_id="s1")
    assert bob.session_metrics("s1")[0].contexts == 1
    assert busy.session_metrics("s1")[0].contexts == 3
    bob.close()


def test_the_documented_cypher_agrees(busy: Memory) -> None:
    rows = busy.cypher(
        "MATCH (a:Application) WHERE a.session_id IS NOT NULL "
        "RETURN a.session_id AS session, count(a) AS contexts, "
        "count(CASE WHEN a.rating = 'good' OR (a.rating IS NULL AND a.outcome = 'success') THEN 1 END) AS accepted "
        "ORDER BY session"
    )
    by_session = {m.session_id: m for m in busy.session_metrics()}
    assert rows == [{"session": s, "contexts": by_session[s].contexts, "accepted": by_session[s].accepted}
                    for s in ("s1", "s2")]


def test_insights_show_the_sessions(busy: Memory) -> None:
    from graphmem.insights_html import render_html

    ins = busy.insights()
    assert [m.session_id for m in ins.sessions] == ["s2", "s1"]
    assert "Sessions (latest 2)" in render_html(ins)


def test_forget_removes_the_sessions(busy: Memory) -> None:
    busy.forget()
    assert busy.session_metrics() == []


def test_cli_sessions(db_path: Path) -> None:
    from graphmem import HashEmbedder
    from graphmem.cli import _register_groups, app

    _register_groups()
    mem = Memory(db_path, user="alice", embedder=HashEmbedder())
    mem.add_learning("Keep emails short", tool="send_email")
    mem.record_outcome(mem.context("email", tool="send_email", session_id="abc").id, success=True)
    mem.close()
    base = ["--db", str(db_path), "--embedder", "hash", "--user", "alice"]
    result = CliRunner().invoke(app, [*base, "sessions", "--json"])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert (row["session_id"], row["contexts"], row["success_rate"]) == ("abc", 1, 1.0)
    table = CliRunner().invoke(app, [*base, "insights"])
    assert table.exit_code == 0 and "sessions (latest first)" in table.output
