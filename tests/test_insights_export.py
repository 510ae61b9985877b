"""Insights figures and HTML, JSONL training pairs, GraphML, and their CLI commands."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from graphmem import HashEmbedder, InvalidInputError, Memory, Objective
from graphmem.insights_html import render_html
from tests.conftest import FakeClock


@pytest.fixture
def cmem(make_memory: Callable[..., Memory], clock: FakeClock) -> Memory:
    return make_memory(clock=clock)


def _history(mem: Memory, clock: FakeClock) -> str:
    """Four contexts about emailing Dana: good, failed+retry, okay+fallback, no outcome yet."""
    learning = mem.add_learning("Keep emails to Dana under 3 paragraphs", tool="send_email", entities=["Dana"])
    mem.add_learning("Spare canary rule about invoices", status="canary", tool="billing")
    ids = []
    for _ in range(4):
        ctx = mem.context("Email Dana about the renewal", tool="send_email", entities=["Dana"])
        assert learning.id in [s.learning.id for s in ctx.learnings]
        ids.append(ctx.id)
        clock.advance(days=1)
    mem.record_outcome(ids[0], success=True, rating="good")
    mem.record_outcome(ids[1], success=False, reasons=["retry"])
    mem.record_outcome(ids[2], rating="okay", reasons=["fallback"])
    return learning.id


def test_insights_figures(cmem: Memory, clock: FakeClock) -> None:
    learning_id = _history(cmem, clock)
    cmem.update_learning(learning_id, tier="pinned")
    ins = cmem.insights()
    o = ins.overview
    assert (o.applications, o.with_outcome, o.rated, o.accepted) == (4, 3, 2, 1)
    assert (o.successes, o.failures, o.fallbacks, o.retries) == (1, 1, 1, 1)
    assert o.acceptance == pytest.approx(1 / 3, abs=1e-3)
    assert o.pass_rate == pytest.approx(0.5)
    assert o.fallback_rate == pytest.approx(1 / 3, abs=1e-3)
    assert o.retry_rate == pytest.approx(1 / 3, abs=1e-3)
    assert o.rating_coverage == pytest.approx(0.5)
    assert ins.status_counts["active"] == 1 and ins.status_counts["canary"] == 1
    assert ins.tier_counts["pinned"] == 1
    assert ins.active_canaries == 1
    row = next(l for l in ins.learnings if l.id == learning_id)
    assert (row.helpful, row.harmful, row.times_applied) == (1, 1, 3)
    assert ins.timeline[0].field == "tier" and ins.timeline[0].new == "pinned"
    assert [d.applications for d in ins.outcomes_by_day] == [1, 1, 1, 1]
    assert sum(d.pending for d in ins.outcomes_by_day) == 2  # the okay one and the unrated one


def test_insights_empty_and_html(cmem: Memory, clock: FakeClock) -> None:
    empty = cmem.insights()
    assert empty.overview.applications == 0 and empty.overview.pass_rate is None
    assert "No applications yet" in render_html(empty)
    _history(cmem, clock)
    page = render_html(cmem.insights())
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and "<svg" in page
    assert "<link" not in page and "src=" not in page and "<script" not in page
    for label in ("acceptance", "pass rate", "fallback rate", "retry rate", "rating coverage", "active canaries"):
        assert label in page
    assert "Keep emails to Dana under 3 paragraphs" in page


def _episodes(mem: Memory, clock: FakeClock) -> dict[str, str]:
    """A completed and a failed objective, a praised session and a session with a failed tool."""
    done = Objective(user_id=mem.user, goal="Draft the Q3 email", status="completed", score=0.9,
                     started_at=clock.now, ended_at=clock.now)
    failed = Objective(user_id=mem.user, goal="Book travel", status="failed", started_at=clock.now)
    mem.store.insert_objective(done)
    mem.store.insert_objective(failed)

    def say(role: str, text: str, **kw: object) -> None:
        clock.advance(seconds=5)
        mem.record_event("message", text, role=role, **kw)  # type: ignore[arg-type]

    say("user", "Draft the Q3 email to Dana", objective_id=done.id)
    clock.advance(seconds=1)
    mem.record_event("tool_call", "send_email(...)", tool="send_email", objective_id=done.id)
    say("assistant", "Here is a two-paragraph draft.", objective_id=done.id, metadata={"model": "m1"})
    say("user", "Shorter please", objective_id=done.id)
    say("assistant", "Done: one paragraph.", objective_id=done.id)
    say("user", "Book me a flight", objective_id=failed.id)
    say("assistant", "I could not book it.", objective_id=failed.id)

    ctx = mem.context("Summarise the renewal", tool="send_email")
    say("user", "Summarise the renewal", session_id="s-good", metadata={"context_id": ctx.id})
    say("assistant", "Renewal summary: ...", session_id="s-good")
    mem.record_outcome(ctx.id, success=True, rating="good")

    say("user", "Fetch the report", session_id="s-bad")
    mem.record_event("tool_result", "timeout", tool="fetch", success=False, session_id="s-bad")
    say("assistant", "Here is the report", session_id="s-bad")
    return {"done": done.id, "failed": failed.id}


def test_training_pairs_content_and_filters(cmem: Memory, clock: FakeClock, tmp_path: Path) -> None:
    ids = _episodes(cmem, clock)
    records = cmem.training_pairs()
    assert [r["messages"] for r in records] == [
        [{"role": "user", "content": "Draft the Q3 email to Dana"},
         {"role": "assistant", "content": None, "tool_calls": [{"id": records[0]["messages"][1]["tool_calls"][0]["id"],
          "type": "function", "function": {"name": "send_email", "arguments": "send_email(...)"}}]},
         {"role": "tool", "tool_call_id": records[0]["messages"][1]["tool_calls"][0]["id"], "name": "send_email",
          "content": "(no result recorded)"},
         {"role": "assistant", "content": "Here is a two-paragraph draft."}],
        [{"role": "user", "content": "Shorter please"}, {"role": "assistant", "content": "Done: one paragraph."}],
        [{"role": "user", "content": "Summarise the renewal"}, {"role": "assistant", "content": "Renewal summary: ..."}],
    ]
    first = records[0]["metadata"]
    assert first["episode_id"] == ids["done"] and first["episode_kind"] == "objective"
    assert first["confidence"] == 0.9 and first["model"] == "m1" and first["goal"] == "Draft the Q3 email"
    assert records[2]["metadata"]["feedback"] == "positive"

    positive = cmem.training_pairs(feedback="positive")
    assert [r["metadata"]["episode_id"] for r in positive] == ["s-good"]
    confident = cmem.training_pairs(min_confidence=0.95)
    assert [r["metadata"]["episode_id"] for r in confident] == ["s-good"]  # 1.0 vs the objective's 0.9

    out = tmp_path / "train.jsonl"
    report = cmem.export_jsonl(out)
    assert (report.episodes, report.episodes_kept, report.records) == (4, 2, 3)
    lines = out.read_text().splitlines()
    assert [json.loads(ln) for ln in lines] == json.loads(json.dumps(records))
    with pytest.raises(InvalidInputError):
        cmem.training_pairs(feedback="great")


def test_graphml_roundtrip_with_typed_edges(cmem: Memory, clock: FakeClock, tmp_path: Path) -> None:
    learning = cmem.add_learning("Dana wants bullet points", tool="send_email", entities=["Dana"], topics=["style"])
    _episodes(cmem, clock)
    out = tmp_path / "graph.graphml"
    report = cmem.export_graphml(out)
    g = nx.read_graphml(out)
    assert g.number_of_nodes() == report.nodes and g.number_of_edges() == report.edges
    node = g.nodes[f"Learning:{learning.id}"]
    assert node["label"] == "Learning" and node["content"] == "Dana wants bullet points"
    assert "embedding" not in node
    types = {d["type"] for _, _, d in g.edges(data=True)}
    assert {"ABOUT_TOOL", "MENTIONS", "ABOUT_TOPIC", "PART_OF", "USED_TOOL", "APPLIED_IN"} <= types
    assert g.has_edge(f"Learning:{learning.id}", "Tool:send_email")


def test_cli_commands(make_memory: Callable[..., Memory], clock: FakeClock, db_path: Path, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    from graphmem import cli

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    mem = make_memory(clock=clock)
    _episodes(mem, clock)
    pinned = mem.add_learning("Keep emails to Dana under 3 paragraphs", confidence=0.9, tier="pinned")
    mem.update_learning(pinned.id, validations=6)  # the CLI runs on the real clock: not stale
    mem.close()
    cli._register_groups()
    runner = CliRunner()
    base = ["--db", str(db_path), "--user", "alice", "--embedder", "hash"]

    def run(*args: str) -> str:
        result = runner.invoke(cli.app, [*base, *args])
        assert result.exit_code == 0, result.output
        return " ".join(result.output.split())  # rich wraps long lines at the runner's width

    agents = tmp_path / "AGENTS.md"
    assert "1 promoted" in run("promote", "--to", str(agents))
    assert "Keep emails to Dana" in agents.read_text()
    assert json.loads(run("promote", "--to", str(agents), "--json"))["changed"] is False
    swept = json.loads(run("sweep", "--file", str(agents), "--json"))
    assert swept["changes"] == [] and swept["files"][0]["kept_matched"] == 1

    page = tmp_path / "insights.html"
    data = json.loads(run("insights", "--json", "--html", str(page)))
    assert data["overview"]["applications"] == 1 and page.read_text().startswith("<!DOCTYPE html>")
    assert "insights of alice" in run("insights")

    train, graph = tmp_path / "t.jsonl", tmp_path / "g.graphml"
    assert "3 training pair(s)" in run("export", "--jsonl", str(train))
    assert len(train.read_text().splitlines()) == 3
    run("export", "--jsonl", str(train), "--feedback", "positive", "--min-confidence", "0.5")
    assert len(train.read_text().splitlines()) == 1
    assert "edges" in run("export", "--graphml", str(graph))
    assert nx.read_graphml(graph).number_of_nodes() > 0

    bad = runner.invoke(cli.app, [*base, "export"])
    assert bad.exit_code == 1 and "nothing to export" in bad.output
    bad = runner.invoke(cli.app, [*base, "export", "--jsonl", str(train), "--feedback", "great"])
    assert bad.exit_code == 1


def test_agent_loop_example_improves_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import runpy

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    example = runpy.run_path(str(Path(__file__).parents[1] / "examples" / "agent_loop.py"))
    db = tmp_path / "agent.kuzu"
    assert example["main"](["--episodes", "3", "--db", str(db)]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("episode")]
    assert "FAIL" in lines[0] and "ok" in lines[-1]
    with Memory(db, user="alice", embedder=HashEmbedder()) as mem:
        records = mem.training_pairs(feedback="positive")
        assert records and records[-1]["messages"][0]["content"].startswith("Email Dana")
