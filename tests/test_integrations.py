"""The framework adapters with the real framework packages."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_core")


def test_langchain_retriever_context_and_search(make_memory: Any) -> None:
    from langchain_core.documents import Document

    from graphmem.integrations.langchain_retriever import GraphmemRetriever

    mem = make_memory("alice")
    rule = mem.add_learning("Keep emails to Dana under 3 paragraphs", tool="send_email", entities=["Dana"])
    mem.add_learning("Never deploy on Fridays", tool="deploy")
    retriever = GraphmemRetriever(memory=mem, tool="send_email", k=3)
    docs = retriever.invoke("Email Dana about the renewal")
    assert docs and all(isinstance(d, Document) for d in docs)
    assert docs[0].metadata["id"] == rule.id and docs[0].page_content == rule.content
    assert docs[0].metadata["reasons"]
    # the recorded context takes the outcome: exactly the shown learnings are credited
    report = mem.record_outcome(retriever.last_context_id, success=True)
    assert [l.id for l in report.learnings] == [d.metadata["id"] for d in docs]
    searcher = GraphmemRetriever(memory=mem, mode="search", over="learnings", k=5)
    found = searcher.invoke("deploy Friday")
    assert any(d.page_content == "Never deploy on Fridays" for d in found)
    assert all(d.metadata["score"] > 0 or d.metadata["reasons"] for d in found)


def test_langgraph_store_put_get_search_delete(make_memory: Any) -> None:
    pytest.importorskip("langgraph")
    import asyncio

    from langgraph.store.base import GetOp, PutOp, SearchOp

    from graphmem.integrations.langgraph_store import GraphmemStore

    mem = make_memory("alice")
    store = GraphmemStore(mem)
    ns = ("memories", "alice")
    store.put(ns, "pref-1", {"content": "Keep emails to Dana under 3 paragraphs", "type": "preference"})
    store.put(ns, "pref-2", {"content": "Never deploy on Fridays", "type": "rule"})
    store.put(("memories", "bob"), "x", {"content": "Bob likes long emails", "type": "preference"})
    item = store.get(ns, "pref-1")
    assert item is not None and item.value == {"content": "Keep emails to Dana under 3 paragraphs", "type": "preference"}
    assert item.key == "pref-1" and item.namespace == ns
    assert store.get(ns, "missing") is None
    # update in place
    store.put(ns, "pref-1", {"content": "Keep emails to Dana under 2 paragraphs", "type": "preference"})
    assert store.get(ns, "pref-1").value["content"].endswith("2 paragraphs")  # type: ignore[union-attr]
    assert len(mem.learnings()) == 3
    # search: by query, by namespace prefix, with a filter
    hits = store.search(("memories",), query="deploy on Friday", limit=5)
    assert hits and hits[0].key == "pref-2" and hits[0].score is not None
    listed = store.search(ns)
    assert {i.key for i in listed} == {"pref-1", "pref-2"}
    assert [i.key for i in store.search(("memories",), filter={"type": "rule"})] == ["pref-2"]
    assert set(store.list_namespaces(prefix=("memories",))) == {("memories", "alice"), ("memories", "bob")}
    # batch keeps order; abatch gives the same
    results = store.batch([GetOp(ns, "pref-2"), SearchOp(("memories", "bob"), None, 10, 0, None), GetOp(ns, "nope")])
    assert results[0].key == "pref-2" and [i.key for i in results[1]] == ["x"] and results[2] is None  # type: ignore[union-attr]
    again = asyncio.run(store.abatch([GetOp(ns, "pref-2"), PutOp(ns, "pref-3", {"content": "Cc Omar on contracts"})]))
    assert again[0].key == "pref-2" and again[1] is None  # type: ignore[union-attr]
    # identical texts under two keys stay two items
    store.put(ns, "dup", {"content": "Cc Omar on contracts"})
    assert store.get(ns, "dup") is not None and store.get(ns, "pref-3") is not None
    assert store.get(ns, "dup").value == {"content": "Cc Omar on contracts"}  # type: ignore[union-attr]
    # delete
    store.delete(ns, "pref-2")
    assert store.get(ns, "pref-2") is None
    assert all(l.content != "Never deploy on Fridays" for l in mem.learnings())


def test_the_langgraph_example_runs_offline(tmp_path: Any) -> None:
    pytest.importorskip("langgraph")
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, str(root / "examples" / "langgraph_memory.py")], capture_output=True,
                          text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "get: {'content': 'Keep emails to Dana under 3 paragraphs'" in done.stdout
    assert "retriever:" in done.stdout and "Never deploy on Fridays" in done.stdout
