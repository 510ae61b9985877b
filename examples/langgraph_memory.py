"""graphmem as a LangGraph long-term memory store and a LangChain retriever, offline.

    python examples/langgraph_memory.py      # needs the integrations extra (langgraph, langchain-core)

Uses the deterministic HashEmbedder and OfflineLLM, on a temporary database file that is removed
at the end. In a LangGraph app, pass the store to ``graph.compile(store=store)`` and read it from
nodes with ``store.search(...)`` / ``store.put(...)``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from graphmem import HashEmbedder, Memory
from graphmem.integrations.langchain_retriever import GraphmemRetriever
from graphmem.integrations.langgraph_store import GraphmemStore


def main(db: Path) -> None:
    """Put, get and search memories through LangGraph's store API, then retrieve with LangChain."""
    with Memory(db, user="alice", embedder=HashEmbedder()) as mem:
        store = GraphmemStore(mem)
        ns = ("memories", "alice")
        store.put(ns, "email-style", {"content": "Keep emails to Dana under 3 paragraphs", "type": "preference"})
        store.put(ns, "deploys", {"content": "Never deploy on Fridays", "type": "rule"})
        print("get:", store.get(ns, "email-style").value)  # type: ignore[union-attr]
        for hit in store.search(("memories",), query="write an email to Dana", limit=2):
            print(f"search: {hit.score:.3f} {hit.key}: {hit.value['content']}")

        retriever = GraphmemRetriever(memory=mem, tool=None, k=2)
        docs = retriever.invoke("Can we deploy this Friday?")
        print("retriever:", [d.page_content for d in docs])
        mem.record_outcome(retriever.last_context_id, success=True)  # credit what was shown


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="graphmem-langgraph-") as folder:
        main(Path(folder) / "memory.kuzu")
