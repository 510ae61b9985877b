"""A LangChain retriever over graphmem: ``GraphmemRetriever(memory=mem)``.

``invoke(query)`` returns LangChain ``Document`` objects: with ``mode="context"`` (the default) the
learnings :meth:`Memory.context` would hand the agent before a tool call (recorded as a context,
so a later :meth:`Memory.record_outcome` with ``retriever.last_context_id`` credits exactly them);
with ``mode="search"``, :meth:`Memory.search` hits over learnings, events or both, recording
nothing. Each document's metadata holds the id, kind, score and the reasons it was found.

Needs ``langchain-core`` (the ``integrations`` extra).
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict


class GraphmemRetriever(BaseRetriever):
    """LangChain retriever backed by a :class:`graphmem.Memory` (or a :class:`graphmem.Client`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    """The Memory (or Client) to read."""
    mode: Literal["context", "search"] = "context"
    """context: what the agent gets before a tool call; search: plain search hits."""
    tool: str | None = None
    """The tool about to be called (context) or to anchor on (search)."""
    k: int = 5
    """At most this many documents."""
    over: Literal["learnings", "events", "all"] = "learnings"
    """search mode: what to search."""
    last_context_id: str | None = None
    """context mode: the id of the last recorded context, for ``record_outcome``."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self.mode == "context":
            ctx = self.memory.context(query, tool=self.tool, limit=self.k)
            self.last_context_id = ctx.id
            return [
                Document(
                    page_content=item.learning.content,
                    metadata={"id": item.learning.id, "kind": item.learning.kind, "score": float(item.score),
                              "reasons": list(item.reasons), "context_id": ctx.id, "tool": item.learning.tool},
                )
                for item in ctx.learnings
            ]
        hits = self.memory.search(query, k=self.k, over=self.over, tool=self.tool)
        return [
            Document(
                page_content=hit.node.content,
                metadata={"id": hit.id, "kind": hit.kind, "score": float(hit.score), "reasons": list(hit.reasons)},
            )
            for hit in hits
        ]


__all__ = ["GraphmemRetriever"]
