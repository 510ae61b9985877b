"""The query's embedding, taken on worker threads while the search computes what needs no vector.

Event search embeds the question (and its variant without names) before the vector signal, and
the embedding is most of a search's time at conversation size. Everything else the search
reads first needs no vector: the entity and tool signals, the BM25 hits, the time words, the
turn priors. Those run on the calling thread while workers run the model's forward passes
(torch leaves the GIL while it computes), so on a machine with two or more cores the search
costs about the embedding plus what needs the vector, not the sum of everything.

``Settings.search_query_threads`` says how (MiniLM, one question and its variant, measured
alone on this 2-core machine; the searches themselves: docs/benchmarks.md, ``python -m
benchmarks.events_scale``):

- 2 (default): each text on its own worker, one unpadded forward pass each, side by side: the
  two vectors in about the time of one (13.8 ms wall against 20.6 ms for one padded pass of
  both, at ~27 % more CPU);
- 1: both texts in one padded pass on one worker (the least CPU; the caller still overlaps);
- 0: one padded pass on the caller's thread before anything else.

The vectors are each text's own embedding (``embed([text])``) with 2, and the padded pass's
rows (equal to those within float rounding, :meth:`graphmem.embed.SentenceTransformerEmbedder.embed_queries`)
with 0 and 1. An error in the embedding reaches the caller when it asks for the vectors. The
workers are :mod:`graphmem.embed_workers`' threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np

from graphmem.embed import Embedder, embed_queries
from graphmem.embed_workers import submit


def query_texts(query: str, stripped: str, weight_stripped: float) -> list[str]:
    """The texts event search embeds: the query, and its variant without the anchored names
    when that variant is weighted and differs."""
    return [query, stripped] if weight_stripped > 0 and stripped and stripped != query else [query]


class QueryVectors:
    """The vectors of a few query texts, being computed on ``threads`` workers (0: right away on
    the caller's thread; see the module docstring) until :meth:`result` is called."""

    def __init__(self, embedder: Embedder, texts: Sequence[str], *, threads: int) -> None:
        self.texts = list(texts)
        self._futures: list[Future[np.ndarray]] = []
        self._value: np.ndarray | None = None
        if threads <= 0:
            self._value = embed_queries(embedder, self.texts)
        elif threads == 1 or len(self.texts) == 1:
            self._futures = [submit(embed_queries, embedder, self.texts)]
        else:
            self._futures = [submit(embed_queries, embedder, [t]) for t in self.texts]

    def result(self) -> np.ndarray:
        """The ``(len(texts), dim)`` float32 vectors (waits for the workers; re-raises their error)."""
        if self._value is None:
            parts = [f.result() for f in self._futures]
            self._value = parts[0] if len(parts) == 1 else np.vstack(parts)
        return self._value
