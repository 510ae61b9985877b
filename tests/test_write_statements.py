"""Fewer statements per write give the same graph.

A single ``add_learning`` writes its node, its anchor edges and its co-occurrence counts in one
statement and its summaries' staleness with their SUMMARIZED_IN edges in a second; a batch finds
its new nodes by internal offset when it writes their edges. Learnings that name anchors and
summaries both old and new, one by one and in batches, must give the same graph as before.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphmem import Memory, Settings

BACKGROUND = Settings(summary_refresh="background")


def _items(start: int, n: int) -> list[dict[str, Any]]:
    """Learnings whose tools, topics and entities keep changing (new anchors and summaries
    appear all along, beside ones already written)."""
    return [
        {"content": f"rule {i} for the checks", "tool": f"tool{i % 3}" if i < 10 else f"other{i % 4}",
         "topics": [f"t{i % 2}", f"x{i // 5}"], "entities": [f"e{i % 3}", f"f{i // 7}"]}
        for i in range(start, start + n)
    ]


def _graph(mem: Memory) -> dict[str, list[tuple[Any, ...]]]:
    def rows(query: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r.values()) for r in mem.cypher(query, scope="all"))

    out = {rel: rows(f"MATCH (l:Learning)-[:{rel}]->(t) RETURN l.content, t.name")
           for rel in ("ABOUT_TOOL", "ABOUT_TOPIC", "MENTIONS")}
    out["anchors"] = sorted(row for label in ("Tool", "Topic", "Entity")
                            for row in rows(f"MATCH (t:{label}) RETURN '{label}' AS label, t.name AS name"))
    out["related"] = rows("MATCH (a)-[r:RELATED]->(b) RETURN a.name, b.name, r.weight, r.user_id")
    out["summaries"] = rows("MATCH (l:Learning)-[:SUMMARIZED_IN]->(s:Summary) "
                            "RETURN s.key, s.staleness, size(s.pending), count(l)")
    return out


def test_single_and_batch_writes_give_the_same_graph_with_new_and_old_anchors(
    tmp_path: Path, make_memory: Callable[..., Memory]
) -> None:
    single = make_memory(path=tmp_path / "single.kuzu", settings=BACKGROUND)
    batch = make_memory(path=tmp_path / "batch.kuzu", settings=BACKGROUND)
    items = _items(0, 36)
    for item in items:
        single.add_learning(**item)
    for k in range(0, len(items), 12):
        batch.add_learnings(items[k : k + 12])
    expected, got = _graph(single), _graph(batch)
    for key in expected:
        assert got[key] == expected[key], key
    # every learning got each of its edges once, and new anchors were created once
    assert len(expected["ABOUT_TOOL"]) == 36 and len(expected["ABOUT_TOPIC"]) == 72
    assert len({name for _, name in expected["anchors"]}) == len(expected["anchors"])
    weights = {(a, b): w for a, b, w, _ in expected["related"]}
    assert weights[("t0", "e0")] == sum(1 for i in range(36) if i % 2 == 0 and i % 3 == 0)
    stale = {key: (staleness, linked) for key, staleness, _, linked in expected["summaries"]}
    assert stale["learning:topic:x3"] == (5, 5)
    assert stale["learning:tool:other1"] == (sum(1 for i in range(10, 36) if i % 4 == 1),) * 2
