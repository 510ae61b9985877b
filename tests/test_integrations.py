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
