"""The insights page: Jinja2 with autoescaping, a matplotlib chart with axis titles, cards that
explain their metrics, and the CLI's empty timeline."""

from __future__ import annotations

import re
from collections.abc import Callable

from typer.testing import CliRunner

from graphmem import Memory
from graphmem.insights_html import render_html
from graphmem.insights_html import EXPLAIN
from tests.conftest import FakeClock


def test_page_escapes_text_and_draws_a_titled_chart(make_memory: Callable[..., Memory], clock: FakeClock) -> None:
    mem = make_memory(clock=clock)
    mem.add_learning("Keep <script>alert(1)</script> & emails short", tool="send_email")
    for ok in (True, False, None):
        ctx = mem.context("email", tool="send_email")
        if ok is not None:
            mem.record_outcome(ctx.id, success=ok)
        clock.advance(days=1)
    page = render_html(mem.insights())
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; emails short" in page
    svg = page[page.index("<svg"): page.index("</svg>")]
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert any("day" in t for t in texts) and any("contexts" in t for t in texts)  # axis titles
    assert {"success", "failure", "pending"} <= set(texts)  # the legend
    for label, explanation in EXPLAIN.items():
        assert label in page and explanation.replace("'", "&#39;") in page


def test_empty_page_and_cli_headings(make_memory: Callable[..., Memory], db_path) -> None:  # type: ignore[no-untyped-def]
    mem = make_memory()
    page = render_html(mem.insights())
    assert "No applications yet" in page and "<svg" not in page
    mem.close()
    from graphmem.cli import _register_groups, app

    _register_groups()
    out = CliRunner().invoke(app, ["--db", str(db_path), "--user", "alice", "--embedder", "hash", "insights"])
    assert out.exit_code == 0, out.output
    assert "(no rows)" not in out.output
    assert "transition timeline" in out.output.lower() and "no transitions yet" in out.output.lower()


def test_training_pairs_hold_the_tool_calls_in_between(make_memory: Callable[..., Memory], clock: FakeClock) -> None:
    from graphmem.models import Objective

    mem = make_memory(clock=clock)
    goal = Objective(user_id=mem.user, goal="Send the invoice", status="completed", started_at=clock.now)
    mem.store.insert_objective(goal)

    def log(kind: str, text: str, **kw: object) -> None:
        clock.advance(seconds=1)
        mem.record_event(kind, text, objective_id=goal.id, **kw)  # type: ignore[arg-type]

    log("message", "Send the Q3 invoice to Lee", role="user")
    log("tool_call", "", tool="lookup", metadata={"arguments": {"name": "Lee"}, "call_id": "c1"})
    log("tool_call", "billing.send(lee@x)", tool="billing")
    log("tool_result", "lee@x", tool="lookup", success=True, metadata={"call_id": "c1"})
    log("tool_result", "sent", tool="billing", success=True)
    log("message", "Sent to lee@x.", role="assistant")
    [record] = mem.training_pairs()
    roles = [m["role"] for m in record["messages"]]
    assert roles == ["user", "assistant", "assistant", "tool", "tool", "assistant"]
    calls = [m["tool_calls"][0] for m in record["messages"] if m.get("tool_calls")]
    assert calls[0] == {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"name": "Lee"}'}}
    assert calls[1]["function"] == {"name": "billing", "arguments": "billing.send(lee@x)"}
    results = {m["tool_call_id"]: m["content"] for m in record["messages"] if m["role"] == "tool"}
    assert results == {"c1": "lee@x", calls[1]["id"]: "sent"}
    assert record["messages"][-1] == {"role": "assistant", "content": "Sent to lee@x."}
    assert record["metadata"]["tool_calls"] == 2
