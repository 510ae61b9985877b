"""Read-path speed mechanics: the background writer keeps off a latency-bound read."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from graphmem import Memory


def _wait_for(flag: threading.Event, seconds: float) -> bool:
    return flag.wait(seconds)


def test_the_writer_waits_while_a_read_holds_it_and_writes_after(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    store = mem.store
    written = threading.Event()
    store.deferred_max_delay_s = 30.0
    with store.hold_writer():
        store.defer_write(written.set)
        assert not _wait_for(written, 0.3), "the writer wrote while a read held it"
    assert _wait_for(written, 30), "the writer did not write after the read ended"


def test_the_writer_waits_at_most_the_delay(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    store = mem.store
    written = threading.Event()
    store.deferred_max_delay_s = 0.05
    with store.hold_writer():
        start = time.monotonic()
        store.defer_write(written.set)
        assert _wait_for(written, 30), "a held writer never wrote"
        assert time.monotonic() - start >= 0.04
    assert store._hot == 0


def test_context_records_its_application_after_holding_the_writer(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.add_learning("Check the deploy log first", tool="deploy")
    ctx = mem.context("deploy the service", tool="deploy")
    assert mem.store._hot == 0  # released on return
    rows = mem.cypher("MATCH (a:Application {id: $id}) RETURN count(a) AS n", {"id": ctx.id}, scope="all")
    assert rows[0]["n"] == 1
    hits = mem.search("deploy", over="all")
    assert hits and mem.store._hot == 0


def test_embed_queries_falls_back_to_one_call_per_text() -> None:
    import numpy as np

    from graphmem.embed import HashEmbedder, embed_queries

    emb = HashEmbedder()
    texts = ["What did Dana paint?", "What did paint?"]
    np.testing.assert_allclose(embed_queries(emb, texts), np.vstack([emb.embed([t]) for t in texts]))


@pytest.mark.slow
def test_minilm_embeds_a_few_queries_in_one_pass_as_one_by_one() -> None:
    pytest.importorskip("torch")
    import numpy as np

    from graphmem.embed import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    texts = ["What did Melanie paint after the museum trip in May?", "What did paint?", "Who?"]
    one_by_one = np.vstack([emb.embed([t]) for t in texts])
    together = emb.embed_queries(texts)
    assert together.shape == (3, emb.dim)
    np.testing.assert_allclose(together, one_by_one, atol=1e-4)  # padding is masked out of the pooling
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_events_benchmark_corpus_is_a_deterministic_conversation() -> None:
    from benchmarks.events_scale import SESSION_TURNS, questions, turns

    small, large = turns(40), turns(100)
    assert large[:40] == small  # a larger corpus extends a smaller one
    assert {t["session"] for t in small} == {"s0", "s1"} and SESSION_TURNS == 30
    assert all(t["speaker"] and t["text"].endswith((".", "?")) for t in large)
    assert questions(5) == questions(5) and len(set(questions(50))) > 10
