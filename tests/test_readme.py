"""The README's analyst queries run as printed, on a graph built through the public API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphmem import Memory

README = Path(__file__).resolve().parent.parent / "README.md"


def cypher_blocks() -> list[str]:
    """Every ```cypher block of the README."""
    return re.findall(r"```cypher\n(.*?)\n```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_at_least_five_analyst_queries() -> None:
    assert len(cypher_blocks()) >= 5


@pytest.fixture
def populated(mem: Memory) -> Memory:
    mem.add_learning("Dana at Acme wants bullet points", tool="send_email", entities=["Dana", "Acme"],
                     topics=["email style"])
    mem.add_learning("Keep emails under 3 paragraphs", tool="send_email", topics=["email style"],
                     sentiment="negative")
    mem.record_event("tool_call", "send_email(to='Dana')", tool="send_email")
    mem.observe_message("Actually, never cc Omar on Acme threads.", tool="send_email")
    mem.add_learning("Use the v1 billing API", tool="http_request")
    mem.observe_message("Don't use the v1 billing API, use v2 instead.", tool="http_request")
    ctx = mem.context("Email Dana about the renewal", tool="send_email")
    mem.record_outcome(ctx.id, success=False, rating="bad")
    return mem


@pytest.mark.parametrize("query", cypher_blocks())
def test_readme_query_runs_and_finds_rows(populated: Memory, query: str) -> None:
    rows = populated.cypher(query)
    assert rows, f"no rows for: {query}"
    assert all(isinstance(r, dict) for r in rows)
