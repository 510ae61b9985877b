"""The write path: a new learning's edges are created once each, and the edge tables stay compact.

Kùzu 0.11.3 stores the first edges of an edge table written by CREATE/MERGE statements with
full-size offset columns (about 4 MB per table); the store writes the first edges of each table
with a COPY instead, after which single writes keep the table small.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import kuzu

from graphmem import HashEmbedder, Memory, Settings
from graphmem.llm import OfflineLLM

BACKGROUND = Settings(summary_refresh="background")


def _pages(path: Path, table: str) -> int:
    """Data pages Kùzu uses for one table (its storage_info)."""
    db = kuzu.Database(str(path), read_only=True)
    conn = kuzu.Connection(db)
    try:
        rows = conn.execute(f"CALL storage_info('{table}') RETURN num_pages").get_all()
        return int(sum(r[0] for r in rows))
    finally:
        conn.close()
        db.close()


def _edges(mem: Memory, rel: str) -> list[tuple[str, str]]:
    rows = mem.cypher(f"MATCH (l:Learning)-[:{rel}]->(t) RETURN l.content AS c, t.name AS n", scope="all")
    return sorted((r["c"], r["n"]) for r in rows)


def test_single_learnings_get_each_edge_once(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=BACKGROUND)
    mem.add_learning("first rule", tool="send_email", topics=["style", "style"], entities=["Dana", "Omar"])
    mem.add_learning("second rule", tool="send_email", topics=["style"], entities=["Dana"])
    mem.add_learning("first rule", tool="run_sql", topics=["style", "billing"], entities=["Dana"])  # a duplicate
    assert _edges(mem, "ABOUT_TOOL") == [("first rule", "run_sql"), ("first rule", "send_email"),
                                         ("second rule", "send_email")]
    assert _edges(mem, "ABOUT_TOPIC") == [("first rule", "billing"), ("first rule", "style"), ("second rule", "style")]
    assert _edges(mem, "MENTIONS") == [("first rule", "Dana"), ("first rule", "Omar"), ("second rule", "Dana")]
    related = mem.cypher("MATCH (a)-[r:RELATED]->(b) RETURN a.name AS a, b.name AS b, r.weight AS w", scope="all")
    weights = {(r["a"], r["b"]): r["w"] for r in related}
    assert weights[("style", "Dana")] == 2  # counted by both learnings, one edge
    assert len(related) == len(weights)


def test_single_writes_keep_edge_tables_compact(tmp_path: Path) -> None:
    path = tmp_path / "m.kuzu"
    with Memory(path, user="u", embedder=HashEmbedder(), llm=OfflineLLM(), settings=BACKGROUND) as mem:
        for i in range(40):
            mem.add_learning(f"rule number {i}", tool=f"tool{i % 3}", topics=[f"topic{i % 4}"],
                             entities=[f"person{i % 5}", f"person{(i + 1) % 5}"])
    # CREATE-first tables take 1,000+ pages (four 256-page offset columns); COPY-first ones a few dozen
    for table in ("ABOUT_TOOL", "ABOUT_TOPIC", "MENTIONS", "RELATED"):
        assert _pages(path, table) < 300, table


def test_a_batch_keeps_the_related_table_compact(tmp_path: Path) -> None:
    path = tmp_path / "m.kuzu"
    items = [{"content": f"rule {i}", "topics": [f"t{i % 7}"], "entities": [f"e{i % 9}"]} for i in range(100)]
    with Memory(path, user="u", embedder=HashEmbedder(), llm=OfflineLLM(), settings=BACKGROUND) as mem:
        mem.add_learnings(items)
        mem.add_learnings([{"content": f"more {i}", "topics": [f"t{i % 7}"], "entities": [f"e{i % 9}"]} for i in range(20)])
        related = mem.cypher("MATCH (a)-[r:RELATED]->(b) RETURN sum(r.weight) AS w, count(r) AS n", scope="all")[0]
    assert related["w"] == 120  # every co-occurrence counted once, by the COPY and then by the MERGEs
    assert related["n"] == 63
    assert _pages(path, "RELATED") < 300
