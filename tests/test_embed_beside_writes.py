"""add_learning embeds on a worker while it writes the rest, and writes the vector last.

Settings.embed_beside_writes (on by default): the learning's node, edges and summary counts are
written while a worker thread embeds its text; the vector is written just before the commit of
the same transaction. The stored rows are the same as embedding first, an embedder error or a
malformed vector rolls the whole write back, and a duplicate still waits for the embedder.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from graphmem import Memory, Settings
from graphmem.embed import HashEmbedder
from graphmem.errors import GraphmemError


class _Slow:
    """The hash embedder's vectors, slower (so the writes run meanwhile), noting its threads.
    Not a HashEmbedder subclass: the hash embedder itself always embeds on the caller's thread."""

    def __init__(self, delay: float = 0.02, fail: bool = False, dim_out: int | None = None) -> None:
        self.inner = HashEmbedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.delay, self.fail, self.dim_out = delay, fail, dim_out
        self.threads: dict[str, str] = {}  # text -> the thread that embedded it

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        for text in texts:
            self.threads[text] = threading.current_thread().name
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("the embedding service is down")
        out = self.inner.embed(texts)
        return out[:, : self.dim_out] if self.dim_out else out


def _counts(mem: Memory) -> dict[str, int]:
    return {label: mem.cypher(f"MATCH (n:{label}) RETURN count(n) AS c")[0]["c"]
            for label in ("Learning", "Tool", "Topic", "Entity", "Summary")}


def test_the_vector_is_embedded_on_a_worker_and_stored_as_embedding_first_would(
        make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    slow = _Slow()
    mem = make_memory(embedder=slow)
    learning = mem.add_learning("Retry the payments API with backoff after a 429", tool="payments_api",
                                topics=["rate limits"], entities=["Stripe"])
    assert slow.threads[learning.content].startswith("graphmem-embed")
    expected = HashEmbedder().embed([learning.content])[0]
    np.testing.assert_allclose(mem.store.learning_embedding(learning.id), expected, rtol=1e-6)
    # the in-memory mirror has it once the write returns (the vector ranking reads it)
    vectors = mem.store.learning_catalog.vectors
    row = vectors.rows[learning.id]
    assert float(vectors.cosine(expected, np.array([row]))[0]) == pytest.approx(1.0, abs=1e-5)
    assert mem.search(learning.content, k=1)[0].id == learning.id
    # the same rows as embedding first on the caller's thread
    first = make_memory(embedder=_Slow(delay=0), path=tmp_path / "first.kuzu",
                        settings=Settings(embed_beside_writes=False))
    other = first.add_learning("Retry the payments API with backoff after a 429", tool="payments_api",
                               topics=["rate limits"], entities=["Stripe"])
    assert first.embedder.threads[other.content] == threading.current_thread().name  # type: ignore[attr-defined]
    np.testing.assert_array_equal(first.store.learning_embedding(other.id), mem.store.learning_embedding(learning.id))
    assert _counts(first) == _counts(mem)
    mem.close()
    reopened = make_memory(embedder=_Slow(delay=0))
    np.testing.assert_allclose(reopened.store.learning_embedding(learning.id), expected, rtol=1e-6)


def test_an_embedder_error_writes_nothing(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(embedder=_Slow(fail=True))
    before = _counts(mem)
    with pytest.raises(RuntimeError, match="embedding service is down"):  # the embedder's own error, as before
        mem.add_learning("Always pin the SDK version", tool="deploy", topics=["releases"], entities=["Acme"])
    assert _counts(mem) == before == {"Learning": 0, "Tool": 0, "Topic": 0, "Entity": 0, "Summary": 0}
    assert mem.learnings() == []
    mem.embedder.fail = False  # type: ignore[attr-defined]
    added = mem.add_learning("Always pin the SDK version", tool="deploy")
    assert [l.id for l in mem.learnings()] == [added.id]


def test_a_malformed_vector_writes_nothing(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(embedder=_Slow(dim_out=100))
    with pytest.raises(GraphmemError, match="384"):
        mem.add_learning("Use the staging bucket for previews", tool="storage")
    assert _counts(mem)["Learning"] == 0 and _counts(mem)["Tool"] == 0


def test_a_duplicate_waits_for_the_embedder_and_counts_once(make_memory: Callable[..., Memory]) -> None:
    slow = _Slow()
    mem = make_memory(embedder=slow)
    first = mem.add_learning("Prefer metric units in reports")
    vector = mem.store.learning_embedding(first.id)
    slow.fail = True
    with pytest.raises(RuntimeError, match="embedding service is down"):
        mem.add_learning("Prefer metric units in reports")
    assert mem.get_learning(first.id).validations == first.validations  # the failed duplicate counted nothing
    slow.fail = False
    again = mem.add_learning("Prefer metric units in reports")
    assert again.id == first.id and again.validations == first.validations + 1
    np.testing.assert_array_equal(mem.store.learning_embedding(first.id), vector)


def test_with_every_worker_taken_the_write_embeds_on_its_own_thread(make_memory: Callable[..., Memory]) -> None:
    """A write waits for its vector inside its transaction: it never queues behind other work."""
    from graphmem import embed_workers

    release = threading.Event()
    blockers = [embed_workers.submit(release.wait, 30) for _ in range(embed_workers.WORKERS)]
    try:
        assert not embed_workers.submit_if_idle(time.sleep, 0)  # no worker free: nothing submitted
        slow = _Slow()
        mem = make_memory(embedder=slow)
        learning = mem.add_learning("Cache the exchange rates for an hour", tool="fx_api")
        assert slow.threads[learning.content] == threading.current_thread().name
        np.testing.assert_allclose(mem.store.learning_embedding(learning.id),
                                   HashEmbedder().embed([learning.content])[0], rtol=1e-6)
    finally:
        release.set()
        for f in blockers:
            f.result(timeout=30)
        deadline = time.monotonic() + 10
        while embed_workers.busy() and time.monotonic() < deadline:  # (counted down just after each result)
            time.sleep(0.01)
    later = mem.add_learning("Cache the exchange rates for a day", tool="fx_api")
    assert slow.threads[later.content].startswith("graphmem-embed")  # the workers are free again


def test_threads_adding_at_once_store_every_learning_with_its_own_vector(make_memory: Callable[..., Memory]) -> None:
    """Six threads add (some the same content) while two search, through the shared workers and
    the caller-thread fallback: under a watchdog nothing hangs or raises, nothing is lost, every
    stored vector is its own text's, and duplicates are stored once."""
    mem = make_memory(embedder=_Slow(delay=0.005))
    errors: list[BaseException] = []
    stop = threading.Event()

    def add(t: int) -> None:
        try:
            for i in range(8):
                mem.add_learning(f"Rule {i % 4} from thread {t % 3}: retry after a timeout", tool=f"tool{t % 2}")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def search() -> None:
        try:
            while not stop.is_set():
                mem.context("retry after a timeout", tool="tool0")
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    writers = [threading.Thread(target=add, args=(t,), daemon=True) for t in range(6)]
    readers = [threading.Thread(target=search, daemon=True) for _ in range(2)]
    for th in writers + readers:
        th.start()
    for th in writers:
        th.join(120)
    stop.set()
    for th in readers:
        th.join(60)
    assert not any(th.is_alive() for th in writers + readers), "a thread hung"
    assert errors == []
    stored = mem.learnings()
    assert sorted(l.content for l in stored) == sorted(
        {f"Rule {i} from thread {t}: retry after a timeout" for i in range(4) for t in range(3)})
    expected = HashEmbedder()
    for learning in stored:
        np.testing.assert_allclose(mem.store.learning_embedding(learning.id), expected.embed([learning.content])[0], rtol=1e-6)
    assert sum(l.validations for l in stored) >= 6 * 8 - len(stored)  # each duplicate counted on the first
