"""Kùzu's full-text indexes are built when a query reads them and dropped by the next write."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem import HashEmbedder, Memory, Settings
from graphmem.errors import StoreError
from graphmem.llm import OfflineLLM
from graphmem.store import fulltext

_FTS = "CALL QUERY_FTS_INDEX('Learning', 'learning_fts', 'send') RETURN node.content AS c"


def _indexes(mem: Memory) -> set[tuple[str, str]]:
    return fulltext.present(mem.store._conn_main)


def test_new_file_has_none_a_query_builds_them_and_a_write_drops_them(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.kuzu", user="u", embedder=HashEmbedder(), llm=OfflineLLM()) as mem:
        assert _indexes(mem) == set()
        mem.add_learnings([{"content": "Send invoices on Fridays"}, {"content": "Keep replies short"}])
        assert mem.cypher(_FTS, scope="all") == [{"c": "Send invoices on Fridays"}]
        assert {i for _, i in _indexes(mem)} == {"learning_fts", "event_fts"}
        mem.add_learning("Send the PDF as well")  # drops them: writes never maintain them
        assert _indexes(mem) == set()
        rows = mem.cypher(_FTS, scope="all")  # rebuilt, and current
        assert sorted(r["c"] for r in rows) == ["Send invoices on Fridays", "Send the PDF as well"]
        ids = [i for i, _ in mem.store.fulltext_learnings("send", 5)]
        assert len(ids) == 2


def test_show_indexes_lists_them(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.kuzu", user="u", embedder=HashEmbedder(), llm=OfflineLLM()) as mem:
        mem.add_learning("Send invoices on Fridays")
        names = {r["i"] for r in mem.cypher("CALL show_indexes() RETURN index_name AS i", scope="all")}
        assert {"learning_fts", "event_fts"} <= names


def test_read_only_file_without_them_says_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "m.kuzu"
    with Memory(path, user="u", embedder=HashEmbedder(), llm=OfflineLLM()) as mem:
        mem.add_learning("Send invoices on Fridays")
    with Memory(path, user="u", embedder=HashEmbedder(), llm=OfflineLLM(), read_only=True) as ro:
        with pytest.raises(StoreError, match="read_only"):
            ro.cypher(_FTS, scope="all")
        assert ro.learnings()[0].content == "Send invoices on Fridays"  # everything else reads


def test_built_at_close_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "m.kuzu"
    settings = Settings(fulltext_index_at_close=True)
    with Memory(path, user="u", embedder=HashEmbedder(), llm=OfflineLLM(), settings=settings) as mem:
        mem.add_learning("Send invoices on Fridays")
    with Memory(path, user="u", embedder=HashEmbedder(), llm=OfflineLLM(), read_only=True) as ro:
        assert ro.cypher(_FTS, scope="all") == [{"c": "Send invoices on Fridays"}]


def test_an_older_file_with_indexes_keeps_answering(tmp_path: Path) -> None:
    """A file whose indexes exist (an older graphmem made them at creation) answers at once and
    loses them at its first write, with nothing else changed."""
    path = tmp_path / "m.kuzu"
    with Memory(path, user="u", embedder=HashEmbedder(), llm=OfflineLLM()) as mem:
        mem.add_learning("Send invoices on Fridays")
        mem.store._ensure_fulltext()
    with Memory(path, user="u", embedder=HashEmbedder(), llm=OfflineLLM()) as mem:
        assert len(_indexes(mem)) == 2
        assert mem.cypher(_FTS, scope="all") == [{"c": "Send invoices on Fridays"}]
        mem.add_learning("Keep replies short")
        assert _indexes(mem) == set()
        assert [l.content for l in mem.learnings()] == ["Send invoices on Fridays", "Keep replies short"] or \
            sorted(l.content for l in mem.learnings()) == ["Keep replies short", "Send invoices on Fridays"]
