"""Fewer statements per write give the same graph.

A single ``add_learning`` writes its node, its anchor edges, its co-occurrence counts, its
summaries' staleness and their SUMMARIZED_IN edges in one statement (once the edge tables hold
edges); a batch finds its new nodes by internal offset when it writes their edges. Learnings that
name anchors and summaries both old and new, one by one and in batches, must give the same graph
as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graphmem import Memory, Settings
from graphmem.errors import StoreError

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


def _states(mem: Memory) -> list[tuple[Any, ...]]:
    """Every summary's key, staleness, text and pending learnings (by content, in order)."""
    content = {l.id: l.content for l in mem.learnings()}
    return sorted((s.key, s.staleness, s.text, tuple(content.get(i, i) for i in pending))
                  for s, pending in ((st.summary, st.pending) for st in mem.store.summary_states(mem.user)))


def test_a_single_write_joins_its_summary_bump_to_its_create_and_gives_the_same_graph(
    tmp_path: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    joined = make_memory(path=tmp_path / "joined.kuzu")
    apart = make_memory(path=tmp_path / "apart.kuzu")
    monkeypatch.setattr(apart.store, "joined_writes", contextlib.nullcontext)  # each statement on its own
    statements: dict[str, list[str]] = {"joined": [], "apart": []}
    for name, mem in (("joined", joined), ("apart", apart)):
        run = mem.store._run

        def spy(conn: Any, cypher: str, params: Any, *, cache: bool = True, seen: list[str] = statements[name],
                run: Callable[..., Any] = run) -> Any:
            seen.append(cypher)
            return run(conn, cypher, params, cache=cache)

        monkeypatch.setattr(mem.store, "_run", spy)
    items = _items(0, 30)
    for mem in (joined, apart):
        for item in items:
            mem.add_learning(**item)
        mem.add_learning(**items[3])  # a duplicate: merged, nothing created
    assert _graph(joined) == _graph(apart)
    assert _states(joined) == _states(apart)
    both = [s for s in statements["joined"] if s.startswith("CREATE (l:Learning") and "SUMMARIZED_IN" in s]
    assert both  # once the edge tables hold edges, a new learning and its summary bump are one statement
    assert len(statements["joined"]) == len(statements["apart"]) - len(both)


def test_a_failed_summary_bump_leaves_nothing_of_a_joined_write(
    make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_memory()
    for item in _items(0, 12):  # the edge tables hold edges: the next write is joined
        mem.add_learning(**item)
    before = _graph(mem), _states(mem), len(mem.learnings())

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("write failed: the summary bump broke")

    monkeypatch.setattr(mem.store, "bump_summaries", broken)
    with pytest.raises(StoreError):
        mem.add_learning(content="never stored", tool="tool1", topics=["t0"], entities=["e0"])
    assert (_graph(mem), _states(mem), len(mem.learnings())) == before
    monkeypatch.undo()
    stored = mem.add_learning(content="stored after all", tool="tool1", topics=["t0"], entities=["e0"])
    assert [l.content for l in mem.learnings(tool="tool1")].count(stored.content) == 1
    assert mem.store._held is None
