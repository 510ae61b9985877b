"""Embedded and served give the same answers; the CLI works against a server with --server/--api-key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graphmem import HashEmbedder, Memory, Settings
from graphmem.client import Client
from graphmem.llm import OfflineLLM
from tests.server_helpers import Served, serve_in_thread

SETTINGS = Settings(summary_refresh="background", defer_application_writes=False, server_refresh_interval_s=0,
                    server_cycle_interval_s=0)


def scenario(mem: Any) -> dict[str, Any]:
    """The same calls on a Memory or a Client; returns what to compare (ids and times aside)."""
    mem.add_learning("Keep emails to Dana under 3 paragraphs", tool="send_email", entities=["Dana"],
                     topics=["email style"])
    mem.add_learnings([
        {"content": "Attach invoices as PDF", "tool": "send_invoice", "topics": ["billing"]},
        {"content": "Use the v2 billing API", "tool": "http_request", "topics": ["billing"]},
        {"content": "Keep emails to Dana under 3 paragraphs", "tool": "send_email"},  # merged duplicate
    ])
    mem.record_event("tool_call", "send_email(to='Dana')", tool="send_email")
    mem.observe_message("Actually, never cc Omar on Acme threads.", tool="send_email")
    first = mem.context("Email Dana about the renewal", tool="send_email", entities=["Dana"])
    mem.record_outcome(first.id, success=False, rating="bad", reasons=["retry"])
    second = mem.context("billing API for invoices", topics=["billing"])
    mem.record_outcome(second.id, success=True)
    mem.refresh_summaries(force=True)
    hits = mem.search("Dana emails", over="learnings", k=5)

    def learning(l: Any) -> tuple[Any, ...]:
        return (l.content, l.kind, l.tool, l.status, l.tier, l.helpful, l.harmful, round(l.confidence, 6),
                round(l.score, 6), l.validations, tuple(l.topics), tuple(l.entities), l.user_id)

    return {
        "learnings": sorted(learning(l) for l in mem.learnings(limit=1000)),
        "contexts": [[(i.learning.content, round(i.score, 6)) for i in c.learnings] for c in (first, second)],
        "prompts": [first.to_prompt(), second.to_prompt()],
        "summaries": sorted((s.key, s.text) for s in mem.summaries()),
        "search": [(h.kind, h.node.content) for h in hits],
    }


def test_memory_and_client_give_the_same_learnings_contexts_and_summaries(tmp_path: Path) -> None:
    with Memory(tmp_path / "embedded.kuzu", user="alice", embedder=HashEmbedder(), llm=OfflineLLM(),
                settings=SETTINGS) as mem:
        embedded = scenario(mem)
    with serve_in_thread(tmp_path / "served.kuzu", settings=SETTINGS) as served, \
            Client(served.url, api_key=served.keys["alice"]) as client:
        remote = scenario(client)
    assert embedded["learnings"] and embedded["contexts"][0] and embedded["summaries"]
    for key in embedded:
        assert remote[key] == embedded[key], key


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve_in_thread(tmp_path_factory.mktemp("cli") / "memory.kuzu") as s:
        yield s


def _cli(*args: str) -> Any:
    from graphmem.cli import _register_groups, app

    _register_groups()
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_against_the_server(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPHMEM_DB", raising=False)
    alice = ["--server", served.url, "--api-key", served.keys["alice"]]
    added = json.loads(_cli(*alice, "add", "Reply to Dana before noon", "--tool", "send_email", "--json"))
    assert added["user_id"] == "alice"
    listed = json.loads(_cli(*alice, "list", "--json"))
    assert added["id"] in [l["id"] for l in listed]
    ctx = json.loads(_cli(*alice, "context", "email Dana", "--tool", "send_email", "--json"))
    assert ctx["learnings"][0]["id"] == added["id"] and "Reply to Dana" in ctx["prompt"]
    report = json.loads(_cli(*alice, "outcome", ctx["id"], "--success", "--json"))
    assert report["context_id"] == ctx["id"]
    hits = json.loads(_cli(*alice, "search", "Dana noon", "--json"))
    assert hits[0]["id"] == added["id"]
    assert json.loads(_cli(*alice, "stats", "--json"))["Learning"] >= 1
    assert isinstance(json.loads(_cli(*alice, "refresh", "--force", "--json")), list)
    monkeypatch.setenv("GRAPHMEM_SERVER", served.url)  # the environment works as well as the options
    monkeypatch.setenv("GRAPHMEM_API_KEY", served.keys["all"])
    rows = json.loads(_cli("cypher", "--all-users", "MATCH (l:Learning) WHERE l.user_id = 'alice' RETURN count(l) AS n", "--json"))
    assert rows[0]["n"] >= 1
    from graphmem.cli import _register_groups, app

    _register_groups()
    refused = CliRunner().invoke(app, ["add", "analysts cannot write"])
    assert refused.exit_code == 1 and "read-only" in refused.output
