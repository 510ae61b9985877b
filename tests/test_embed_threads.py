"""The bundled embedder sets torch's thread count deliberately: one for a query, the default for batches."""

from __future__ import annotations

import numpy as np
import pytest

from graphmem import Memory, Settings


@pytest.mark.slow
def test_query_uses_one_thread_and_batches_the_default() -> None:
    torch = pytest.importorskip("torch")
    from graphmem.embed import SentenceTransformerEmbedder

    default = torch.get_num_threads()
    emb = SentenceTransformerEmbedder(query_threads=1, batch_threads=0)
    one = emb.embed(["Email Dana about the renewal"])
    assert torch.get_num_threads() == 1
    both = emb.embed(["Email Dana about the renewal", "Book a table for two"])
    assert torch.get_num_threads() == default
    np.testing.assert_allclose(one[0], both[0], atol=1e-5)  # the thread count does not change the vector


def test_memory_passes_the_thread_settings_to_its_default_embedder() -> None:
    mem = Memory(None, settings=Settings(embed_query_threads=2, embed_batch_threads=1))
    try:
        assert (mem.embedder.query_threads, mem.embedder.batch_threads) == (2, 1)  # type: ignore[attr-defined]
    finally:
        mem.close()
