"""add_learnings and record_events embed their batch, then write it in one transaction: an
embedder that fails, or returns fewer rows than texts, writes nothing (before, a short answer
silently dropped the items it had no row for), and later batches work."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from graphmem import HashEmbedder, Memory
from graphmem.errors import EmbedderError

ITEMS: list[dict[str, Any]] = [
    {"content": "Keep emails to Dana short", "tool": "send_email", "entities": ["Dana"], "topics": ["email"]},
    {"content": "Refund duplicate invoices the same day", "tool": "billing", "entities": ["Initech"],
     "topics": ["invoices"]},
    {"content": "Keep emails to Dana short", "tool": "send_email", "entities": ["Dana", "Acme"]},  # in-batch duplicate
    {"content": "Use the staging cluster first", "tool": "deploy", "topics": ["releases"]},
    {"content": "Existing rule about releases", "topics": ["releases"]},  # a duplicate of one added before
]


class FlakyEmbedder:
    """The hash embedder's vectors, unless it is told to fail or to return a row too few."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.mode = "ok"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.mode == "fail":
            raise RuntimeError("embedder down")
        if self.mode == "flat":
            return self.inner.embed(texts).reshape(-1)
        vectors = self.inner.embed(texts)
        return vectors[:-1] if self.mode == "short" and len(texts) > 1 else vectors


def _graph(mem: Memory) -> list[Any]:
    rows = mem.cypher("MATCH (l:Learning)-[r]->(a) RETURN l.content AS c, label(r) AS rel, a.name AS anchor, "
                      "l.validations AS v")
    related = mem.cypher("MATCH (a)-[r:RELATED]->(b) RETURN a.name AS x, b.name AS y, r.weight AS w")
    return [sorted((tuple(sorted(r.items())) for r in rows), key=repr), sorted((tuple(sorted(r.items())) for r in related), key=repr)]


@pytest.mark.parametrize("mode, error", [("fail", RuntimeError), ("short", EmbedderError)])
def test_an_embedder_failure_in_a_batch_writes_nothing_and_later_batches_work(
    make_memory: Callable[..., Memory], mode: str, error: type[Exception],
) -> None:
    embedder = FlakyEmbedder()
    mem = make_memory(embedder=embedder)
    mem.add_learnings(ITEMS[:2])
    before = (mem.stats(), _graph(mem), len(mem.store.learning_catalog))
    embedder.mode = mode
    for _ in range(3):  # the same rows' counts written and rolled back again and again
        with pytest.raises(error, match="embedder down" if mode == "fail" else "nothing was written"):
            mem.add_learnings(ITEMS[1:])
    assert (mem.stats(), _graph(mem), len(mem.store.learning_catalog)) == before
    embedder.mode = "ok"
    added = mem.add_learnings(ITEMS[1:])
    assert mem.stats()["Learning"] == 4 and added[0].validations == 1
    assert all(mem.search(l.content, over="learnings", k=1)[0].id == l.id for l in added)


def test_record_events_and_a_progress_bar_refuse_too_few_vectors(make_memory: Callable[..., Memory]) -> None:
    """The check sits in the batch embedding both batch writes share: events too, and a batch
    embedded in chunks for a progress bar (each chunk checked)."""
    embedder = FlakyEmbedder()
    mem = make_memory(embedder=embedder)
    events = [{"kind": "message", "content": f"turn {i} about the invoice", "role": "user"} for i in range(3)]
    mem.record_events(events)
    embedder.mode = "short"
    with pytest.raises(EmbedderError, match="2 vectors for 3 texts"):
        mem.record_events(events)
    assert mem.stats()["Event"] == 3 and len(mem.store.event_catalog.vectors) == 3
    many = [{"content": f"rule {i} for the release checklist"} for i in range(300)]  # two chunks of 256 and 44
    with pytest.raises(EmbedderError, match="255 vectors for 256 texts"):
        mem.add_learnings(many, progress=lambda done, total: None)
    assert mem.stats().get("Learning", 0) == 0
    embedder.mode = "ok"
    seen: list[tuple[int, int]] = []
    assert len(mem.add_learnings(many, progress=lambda done, total: seen.append((done, total)))) == 300
    assert seen == [(256, 300), (300, 300)]


def test_a_flat_array_from_the_embedder_is_refused_by_its_shape(make_memory: Callable[..., Memory]) -> None:
    embedder = FlakyEmbedder()
    mem = make_memory(embedder=embedder)
    embedder.mode = "flat"
    with pytest.raises(EmbedderError, match=r"shape \(768,\) for 2 texts, not one row per text"):
        mem.add_learnings(ITEMS[:2])
    assert mem.stats().get("Learning", 0) == 0
