"""search returns only real hits: nothing with score 0 and no reason pads the list to k."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.parametrize("over", ["all", "events", "learnings"])
def test_search_returns_only_real_hits(make_memory: Any, over: str) -> None:
    mem = make_memory("alice")
    mem.add_learning("Keep emails to Dana short", tool="send_email", entities=["Dana"])
    mem.add_learning("Never deploy on Fridays", tool="deploy")
    for i in range(3):
        mem.record_event("message", f"Dana asked about the renewal {i}", entities=["Dana"])
    for i in range(8):
        mem.record_event("tool_call", f"send_email draft {i}", tool="send_email")
    for query, kwargs in (("Dana renewal", {}), ("email", {"tool": "send_email"})):
        hits = mem.search(query, over=over, k=10, **kwargs)
        assert hits, (over, query)
        assert all(h.score > 0 or h.reasons for h in hits), [(h.kind, h.score, h.reasons) for h in hits]
    renewal = mem.search("Dana renewal", over=over, k=10)
    if over != "learnings":
        assert sum(1 for h in renewal if h.kind == "event" and "renewal" in h.node.content) == 3
