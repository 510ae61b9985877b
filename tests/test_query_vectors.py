"""Event search embeds its query texts on worker threads (graphmem/retrieve/query_vectors.py):
the hits are the same whichever way the texts are embedded, the workers run concurrently, an
embedding error reaches the caller, and a forked child embeds with workers of its own."""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from graphmem import HashEmbedder, Memory, Settings
from graphmem.errors import EmbedderError
from graphmem.retrieve.query_vectors import QueryVectors, query_texts

SPEAKERS = ["Dana", "Eli", "Fay"]


def _record(mem: Memory) -> None:
    mem.record_events([
        {"kind": "message", "content": f"turn {i}: the {['lake', 'violin', 'kayak', 'recipe'][i % 4]} "
         f"on {['Monday', 'Friday'][i % 2]} with {SPEAKERS[(i + 1) % 3]}", "role": SPEAKERS[i % 3],
         "session_id": f"s{i // 10}", "entities": [SPEAKERS[i % 3]]}
        for i in range(120)
    ])


def test_query_texts_add_the_variant_only_when_it_differs_and_is_weighted() -> None:
    assert query_texts("What did Dana say?", "What did say?", 0.75) == ["What did Dana say?", "What did say?"]
    assert query_texts("What did Dana say?", "What did say?", 0.0) == ["What did Dana say?"]
    assert query_texts("the lake", "the lake", 0.75) == ["the lake"]
    assert query_texts("Dana", "", 0.75) == ["Dana"]


@pytest.mark.parametrize("threads", [0, 1, 2])
def test_the_vectors_are_each_texts_embedding(threads: int) -> None:
    emb = HashEmbedder()
    texts = ["What did Dana say about the lake?", "What did say about the lake?"]
    got = QueryVectors(emb, texts, threads=threads).result()
    assert got.shape == (2, emb.dim)
    assert np.array_equal(got, emb.embed(texts))


def test_the_hits_do_not_depend_on_the_query_threads(make_memory: Callable[..., Memory]) -> None:
    ranked = []
    for threads in (0, 1, 2):
        mem = make_memory(settings=Settings(search_query_threads=threads))
        if threads == 0:
            _record(mem)
        ranked.append([[(h.id, h.score, tuple(h.reasons)) for h in mem.search(q, over="events", k=8)]
                       for q in ("What did Dana say about the lake?", "When did Eli play the violin?", "kayak")])
        mem.close()
    assert ranked[0] and ranked[0][0]
    assert ranked[0] == ranked[1] == ranked[2]


class _SlowEmbedder(HashEmbedder):
    """Sleeps in every call (as a model's forward pass leaves the GIL) and notes the overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.active = 0
        self.most = 0
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.active += 1
            self.most = max(self.most, self.active)
            self.threads.add(threading.current_thread().name)
        time.sleep(0.2)
        with self._lock:
            self.active -= 1
        return super().embed(texts)


def test_two_texts_are_embedded_side_by_side_off_the_callers_thread() -> None:
    emb = _SlowEmbedder()
    start = time.perf_counter()
    pending = QueryVectors(emb, ["What did Dana say?", "What did say?"], threads=2)
    handed_back = time.perf_counter() - start
    pending.result()
    took = time.perf_counter() - start
    assert handed_back < 0.1  # the caller goes on while the workers embed
    assert emb.most == 2 and took < 0.35  # side by side: about one call's time, not two
    assert threading.current_thread().name not in emb.threads


class _FailingEmbedder(HashEmbedder):
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbedderError("the model is gone")


def test_an_embedding_error_reaches_the_caller(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    _record(mem)
    mem.close()
    failing = make_memory(embedder=_FailingEmbedder(), settings=Settings(search_query_threads=2))
    with pytest.raises(EmbedderError, match="the model is gone"):
        failing.search("What did Dana say about the lake?", over="events", k=5)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_embeds_with_workers_of_its_own() -> None:
    emb = HashEmbedder()
    texts = ["What did Dana say?", "What did say?"]
    want = QueryVectors(emb, texts, threads=2).result()  # the parent's workers exist now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker threads are not here
        try:
            # one task: the parent's pool would count an idle worker that is not here and queue it forever
            ok = np.array_equal(QueryVectors(emb, texts, threads=1).result(), want)
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 20)  # a child stuck on the parent's dead workers: no answer
    got = os.read(read, 1) if ready else b""
    if not got:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert got == b"1"


def test_searches_naming_a_speaker_from_many_threads_while_writing(make_memory: Callable[..., Memory]) -> None:
    """Two texts per search on the shared workers, searched from several threads while three
    others write: under a watchdog, nothing hangs or raises and every checked write is found."""
    from tests.test_event_layout import write_while_searching

    class _Noting(HashEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.on_workers = 0

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            if threading.current_thread().name.startswith("graphmem-embed"):
                self.on_workers += 1  # (a lost count between threads only lowers it)
            return super().embed(texts)

    emb = _Noting()
    mem = make_memory(embedder=emb, settings=Settings(search_query_threads=2))
    _record(mem)
    write_while_searching(mem, notes=15, check_every=5, query="What did Dana say about the lake?", seconds=90)
    assert emb.on_workers >= 2  # the searches' texts were embedded on the shared workers


def test_from_search_query_one_pass_from_events_the_texts_share_one_pass(make_memory: Callable[..., Memory]) -> None:
    """Above the size where the signals computed meanwhile need a core for longer than the
    embedding, the question and its variant go to one worker in one call; below it, one each.
    The hits are the same."""

    class _Batches(HashEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.sizes: list[int] = []

        def embed_queries(self, texts: Sequence[str]) -> np.ndarray:  # (as the bundled model has)
            self.sizes.append(len(texts))
            return self.embed(texts)

    query = "What did Dana say about the lake?"
    hits = []
    for one_pass_from, want in ((10**6, [1, 1]), (5, [2])):
        emb = _Batches()
        mem = make_memory(embedder=emb, settings=Settings(search_query_threads=2, search_query_one_pass_from=one_pass_from))
        if not hits:
            _record(mem)
        assert len(mem.store.event_layout(mem.user)) >= 5
        emb.sizes.clear()
        hits.append([(h.id, h.score) for h in mem.search(query, over="events", k=5)])
        assert emb.sizes == want, one_pass_from  # the question and its variant without "Dana"
        mem.close()
    assert hits[0] and hits[0] == hits[1]
