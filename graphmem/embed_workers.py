"""Worker threads that run embeddings beside the caller's other work.

Two paths embed on these threads while the calling thread does what needs no vector:

- event search embeds the question (and its variant without names) while it computes the
  entity, tool, BM25 and time signals (:mod:`graphmem.retrieve.query_vectors`);
- ``add_learning`` embeds the learning's text while it writes the learning's node, edges and
  summary counts, and writes the vector last in the same transaction (``Settings.embed_beside_writes``).

torch leaves the GIL while it computes and Kùzu leaves it while it executes a statement, so on a
machine with two or more cores the two overlap. The threads are made on first use and shared by
every Memory of the process; a forked child makes its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from graphmem.embed import Embedder, HashEmbedder

WORKERS = 2  # worker threads shared by every Memory of the process

_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()
_busy = 0  # tasks submitted here, queued or running (under _POOL_LOCK)


def pool() -> ThreadPoolExecutor:
    """The process's embedding workers (made on first use)."""
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="graphmem-embed"))
        return _POOL[0]


def submit(fn: Callable[..., Any], *args: Any) -> Future[Any]:
    """Run ``fn(*args)`` on a worker (queued behind the others if every worker is taken)."""
    future = _submit(fn, args, idle_only=False)
    assert future is not None
    return future


def submit_if_idle(fn: Callable[..., Any], *args: Any) -> Future[Any] | None:
    """Run ``fn(*args)`` on a worker if one is free now (fewer tasks queued or running than
    workers); None otherwise (nothing submitted)."""
    return _submit(fn, args, idle_only=True)


def _submit(fn: Callable[..., Any], args: tuple[Any, ...], *, idle_only: bool) -> Future[Any] | None:
    global _busy
    workers = pool()
    with _POOL_LOCK:
        if idle_only and _busy >= WORKERS:
            return None
        _busy += 1
    try:
        future = workers.submit(fn, *args)
    except BaseException:
        _done()
        raise
    future.add_done_callback(lambda _: _done())
    return future


def busy() -> int:
    """How many submitted tasks are queued or running now."""
    with _POOL_LOCK:
        return _busy


def _done() -> None:
    global _busy
    with _POOL_LOCK:
        _busy -= 1


def _forget_pool_in_child() -> None:
    """A forked child has none of the parent's threads: it starts a pool of its own when needed."""
    global _POOL_LOCK, _busy
    _POOL_LOCK = threading.Lock()
    _POOL.clear()
    _busy = 0


os.register_at_fork(after_in_child=_forget_pool_in_child)


def embed_one_beside(embedder: Embedder, text: str) -> Callable[[], np.ndarray]:
    """Start embedding ``text`` on a worker; returns a function that waits for its float32
    vector (and re-raises the embedder's error, if any).

    The text is embedded at once on the caller's thread instead when every worker is taken
    (other writes' or searches' embeddings): a write waits for its vector inside its
    transaction, which must not wait behind a queue. The hash embedder, which takes
    microseconds, always embeds on the caller's thread."""
    future = None if isinstance(embedder, HashEmbedder) else submit_if_idle(_one, embedder, text)
    if future is None:
        vector = _one(embedder, text)
        return lambda: vector
    return future.result


def _one(embedder: Embedder, text: str) -> np.ndarray:
    return np.asarray(embedder.embed([text])[0], dtype=np.float32)
