"""Batches written without COPY: once every edge table holds edges, add_learnings and
record_events write nodes and edges with LOAD FROM statements (no COPY, so no forced
checkpoint), give the same graph as one-by-one writes, refuse bad text without a partial write,
and survive a killed process (the batches are in the write-ahead log only)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphmem import Memory, Settings
from graphmem.errors import InvalidInputError, StoreError
from graphmem.models import Learning, LearningLinks
from graphmem.store import copy as copy_module
from graphmem.store import learnings as learnings_module

BACKGROUND = Settings(summary_refresh="background")
ROOT = Path(__file__).resolve().parent.parent


def _items(start: int, n: int) -> list[dict[str, Any]]:
    tools, people, topics = ["send_email", "run_sql", "git_commit"], ["Dana", "Omar", "Priya"], ["email style", "deploys"]
    return [
        {"content": f"Rule {i}: check {topics[i % 2]} with {people[i % 3]} before {tools[i % 3]}",
         "tool": tools[i % 3], "entities": [people[i % 3]] + (["Acme"] if i % 4 == 0 else []),
         "topics": [topics[i % 2]], "objective_type": "support" if i % 5 == 0 else None}
        for i in range(start, start + n)
    ]


def _events(start: int, n: int) -> list[dict[str, Any]]:
    return [
        {"kind": "tool_result", "content": f"query {i} returned rows", "tool": "run_sql", "success": i % 2 == 0,
         "session_id": "s"} if i % 3 == 0 else
        {"kind": "message", "content": f"Dana wrote note {i}", "role": "Dana", "entities": ["Acme"], "session_id": "s"}
        for i in range(start, start + n)
    ]


def _graph(mem: Memory) -> dict[str, Any]:
    def rows(query: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r.values()) for r in mem.cypher(query, scope="all"))

    return {
        "learnings": rows("MATCH (l:Learning) RETURN l.content, l.tool, l.topics, l.entities, l.search_text, l.embedding"),
        "edges": {rel: rows(f"MATCH (l:Learning)-[:{rel}]->(t) RETURN l.content, t.name")
                  for rel in ("ABOUT_TOOL", "ABOUT_TOPIC", "MENTIONS", "FOR_OBJECTIVE_TYPE")},
        "related": rows("MATCH (a)-[r:RELATED]->(b) RETURN a.name, b.name, r.weight, r.user_id"),
        "summaries": rows("MATCH (s:Summary) OPTIONAL MATCH (l:Learning)-[:SUMMARIZED_IN]->(s) "
                          "RETURN s.key, s.staleness, size(s.pending), count(l)"),
        "events": rows("MATCH (e:Event) RETURN e.content, e.tool_name, e.entities, e.embedding"),
        "event_edges": rows("MATCH (e:Event)-[r]->(t) RETURN e.content, label(r), t.name"),
    }


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The tables COPYed into while the test runs."""
    seen: list[str] = []
    real = copy_module.copy_into

    def spy(conn: Any, table_name: str, table: Any, options: str = "") -> None:
        seen.append(table_name)
        real(conn, table_name, table, options)

    monkeypatch.setattr(learnings_module, "copy_into", spy)
    yield seen


def test_later_batches_use_no_copy_and_give_the_same_graph_as_one_by_one(
    tmp_path: Path, make_memory: Callable[..., Memory], copies: list[str]
) -> None:
    single = make_memory(path=tmp_path / "single.kuzu", settings=BACKGROUND)
    batch = make_memory(path=tmp_path / "batch.kuzu", settings=BACKGROUND)
    first, second = _items(0, 12), _items(12, 30)
    for item in first + second:
        single.add_learning(**item)
    for event in _events(0, 20):
        single.record_event(**event)
    batch.add_learnings(first)
    batch.record_events(_events(0, 8))
    assert copies  # the first edges of each edge table are COPYed (small offset columns)
    copies.clear()
    out = batch.add_learnings(second)
    batch.record_events(_events(8, 12))
    assert copies == []  # no COPY: the commits go to the write-ahead log, no forced checkpoint
    assert len(out) == len(second) and all(learning.id for learning in out)
    expected, got = _graph(single), _graph(batch)
    for key in expected:
        assert got[key] == expected[key], key
    assert got["edges"]["ABOUT_TOOL"] and got["summaries"] and got["event_edges"]
    assert len(batch.store.learning_catalog) == len(first) + len(second)
    assert any(h.id == out[3].id for h in batch.search(second[3]["content"], k=3))


def test_a_batch_with_a_lone_surrogate_writes_nothing(mem: Memory) -> None:
    mem.add_learnings(_items(0, 10))
    before = mem.cypher("MATCH (n) RETURN count(n) AS n")[0]["n"]
    edges = mem.cypher("MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"]
    bad = [Learning(user_id="alice", content=f"Rule {i} \ud800 text" if i == 3 else f"fine rule {i}", tool="run_sql")
           for i in range(6)]
    with pytest.raises(InvalidInputError, match="surrogate"):
        mem.store.insert_learnings([(l, np.ones(mem.embedder.dim, dtype=np.float32), LearningLinks(tool="run_sql"))
                                    for l in bad])
    assert mem.cypher("MATCH (n) RETURN count(n) AS n")[0]["n"] == before
    assert mem.cypher("MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"] == edges
    assert len(mem.store.learning_catalog) == 10


def test_an_edge_whose_end_is_missing_rolls_the_batch_back(mem: Memory) -> None:
    mem.add_learnings(_items(0, 10))  # ABOUT_TOOL holds edges: later ones are one LOAD FROM statement
    before = mem.cypher("MATCH (n) RETURN count(n) AS n")[0]["n"]
    learnings = [Learning(user_id="alice", content=f"linked rule {i}") for i in range(4)]
    vector = np.ones(mem.embedder.dim, dtype=np.float32)
    with pytest.raises(StoreError, match="found both ends"), mem.store.transaction():
        mem.store.insert_learnings([(l, vector, LearningLinks()) for l in learnings])
        mem.store._new_edges("ABOUT_TOOL", ("Learning", "id"), ("Tool", "name"),  # type: ignore[attr-defined]
                             [(learnings[0].id, "run_sql"), (learnings[1].id, "no-such-tool")])
    assert mem.cypher("MATCH (n) RETURN count(n) AS n")[0]["n"] == before
    assert len(mem.store.learning_catalog) == 10


_WRITER = textwrap.dedent("""
    import sys
    from graphmem import HashEmbedder, Memory, Settings
    from graphmem.llm import OfflineLLM
    mem = Memory(sys.argv[1], user="alice", embedder=HashEmbedder(), llm=OfflineLLM(),
                 settings=Settings(summary_refresh="background"))
    for k in range(40):
        mem.add_learnings([{"content": f"batch {k} rule {i}", "tool": "run_sql", "topics": ["t%d" % (i % 3)],
                            "entities": ["Dana"]} for i in range(25)])
        mem.record_events([{"kind": "message", "content": f"batch {k} note {i}", "role": "Dana"} for i in range(10)])
        print(k, flush=True)
    import time
    time.sleep(60)
""")


def test_batches_in_the_log_survive_a_killed_process(tmp_path: Path, make_memory: Callable[..., Memory]) -> None:
    path = tmp_path / "killed.kuzu"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    done = -1
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # bounded: the writer prints 40 lines, then sleeps
            done = int(line)
            if done >= 5:
                break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert done >= 5
    assert Path(f"{path}.wal").exists()  # the acknowledged batches were in the log, not checkpointed
    mem = make_memory(path=path)
    n = mem.cypher("MATCH (l:Learning) RETURN count(l) AS n")[0]["n"]
    assert n >= 25 * (done + 1) and n % 25 == 0  # whole batches only
    assert mem.cypher("MATCH (l:Learning)-[:ABOUT_TOOL]->(:Tool) RETURN count(l) AS n")[0]["n"] == n
    assert mem.cypher("MATCH (l:Learning)-[:MENTIONS]->(:Entity) RETURN count(l) AS n")[0]["n"] == n
    events = mem.cypher("MATCH (e:Event) RETURN count(e) AS n")[0]["n"]
    assert events >= 10 * (done + 1) and events % 10 == 0
    assert len(mem.store.learning_catalog) == n
    mem.add_learnings(_items(100, 5))  # the file takes batches after recovery
    assert mem.cypher("MATCH (l:Learning) RETURN count(l) AS n")[0]["n"] == n + 5


def test_single_writes_leave_no_full_size_offset_column(tmp_path: Path, make_memory: Callable[..., Memory]) -> None:
    """The first edges of every edge table are COPYed, also from single writes: a table whose
    first edges are CREATEd or MERGEd gets 256-page offset columns (~1 MB each) in Kùzu 0.11.3."""
    import kuzu

    path = tmp_path / "small.kuzu"
    mem = make_memory(path=path)
    mem.add_learning("Keep emails short for Dana", tool="send_email", topics=["email style"], entities=["Dana", "Acme"])
    mem.record_event("tool_result", "send_email finished for Dana", tool="send_email", success=True, entities=["Dana"])
    mem.record_event("message", "Dana asked about the deploy", role="Dana", entities=["Acme"])
    mem.close()
    size = sum(f.stat().st_size for f in tmp_path.iterdir() if f.name.startswith(path.name))
    db = kuzu.Database(str(path), read_only=True)
    conn = kuzu.Connection(db)
    try:
        largest = {}
        for name, kind in conn.execute("CALL show_tables() RETURN name, type").get_all():
            if kind == "REL":
                pages = [int(p) for _, p in conn.execute(f"CALL storage_info('{name}') RETURN column_name, num_pages").get_all()]
                largest[name] = max(pages, default=0)
    finally:
        conn.close()
        db.close()
    assert largest["ABOUT_TOOL"] >= 0 and largest["SUMMARIZED_IN"] >= 0
    assert {name: pages for name, pages in largest.items() if pages >= 256} == {}
    # what is left is Kùzu's primary-key index: ~1.07 MB per node table holding a row
    # (Meta, Learning, Event, Tool, Topic, Entity, Summary)
    assert size < 9.5e6, size
