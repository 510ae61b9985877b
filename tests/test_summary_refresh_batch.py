"""A refresh saves all its summaries in one store call and embeds only the texts that changed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphmem import HashEmbedder, Memory, Settings
from graphmem.llm.base import LLMRequest
from graphmem.llm.offline import OfflineLLM
from graphmem.llm.schemas import SummaryOutput

MakeMemory = Callable[..., Memory]


class CountingEmbedder(HashEmbedder):
    """HashEmbedder that records every batch of texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return super().embed(texts)


class ConstantSummaryLLM:
    """OfflineLLM whose summaries are always the same one bullet."""

    name = "constant-summary"

    def __init__(self) -> None:
        self._inner = OfflineLLM()

    def generate(self, request: LLMRequest, schema: Any) -> Any:
        if schema is SummaryOutput:
            return SummaryOutput(bullets=["Always the same advice"])
        return self._inner.generate(request, schema)


def _items(n: int, start: int = 0) -> list[dict[str, Any]]:
    tools, topics = ["send_email", "run_sql", "web_search"], ["style", "deploys"]
    return [{"content": f"Learning number {i} about {tools[i % 3]} and {topics[i % 2]}", "kind": "preference",
             "tool": tools[i % 3], "topics": [topics[i % 2]]} for i in range(start, start + n)]


def test_batch_refresh_saves_every_due_summary_with_its_texts_embedding(make_memory: MakeMemory) -> None:
    embedder = CountingEmbedder()
    mem = make_memory(embedder=embedder)
    mem.add_learnings(_items(30))
    refreshed = [s for s in mem.summaries() if s.refreshed_at is not None]
    assert len(refreshed) >= 5  # the tools, the topics and user_preferences crossed their thresholds
    for s in refreshed:
        assert s.text and s.staleness < s.threshold
        stored = mem.store.summary_embedding(s.user_id, s.key)
        assert stored is not None
        np.testing.assert_allclose(stored, HashEmbedder().embed([s.text])[0], rtol=1e-5, atol=1e-6)
    summary_calls = [c for c in embedder.calls if any(t.startswith("- ") for t in c)]
    assert len(summary_calls) == 1 and len(summary_calls[0]) == len(refreshed)  # one embedder call for all


def test_unchanged_summary_text_keeps_its_embedding_without_embedding_again(make_memory: MakeMemory) -> None:
    embedder = CountingEmbedder()
    mem = make_memory(embedder=embedder, llm=ConstantSummaryLLM())
    mem.add_learnings(_items(30))
    first = {s.key: (s, mem.store.summary_embedding(s.user_id, s.key)) for s in mem.summaries() if s.refreshed_at}
    assert first
    embedder.calls.clear()
    mem.add_learnings(_items(30, start=100))  # every summary refreshes again, to the same text
    again = {s.key: s for s in mem.summaries() if s.refreshed_at}
    assert set(again) == set(first)
    for key, (before, vector) in first.items():
        assert again[key].text == before.text and again[key].refreshed_at > before.refreshed_at
        assert again[key].staleness < again[key].threshold
        np.testing.assert_array_equal(mem.store.summary_embedding(again[key].user_id, key), vector)
    assert not any(t == first[next(iter(first))][0].text for c in embedder.calls for t in c)


def test_forced_refresh_embeds_even_an_unchanged_text(make_memory: MakeMemory) -> None:
    embedder = CountingEmbedder()
    mem = make_memory(embedder=embedder, llm=ConstantSummaryLLM(), settings=Settings(summary_refresh="background"))
    mem.add_learnings(_items(6))
    mem.refresh_summaries(force=True)
    embedder.calls.clear()
    texts = {s.key: s.text for s in mem.refresh_summaries(force=True)}
    assert texts and sum(len(c) for c in embedder.calls) == len(texts)
