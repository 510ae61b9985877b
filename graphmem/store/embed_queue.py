"""Events written before their embedding: a FIFO queue embedded in one batch later.

With ``Settings.event_embed_later`` ``record_event`` writes the event row (and its edges) at
once, without an embedding, and queues the event here; the next search over events (or the next
``record_events``, or the queue reaching ``Settings.event_embed_queue_max``) embeds every queued
text in one batch (:meth:`EmbedQueue.drain`), writes the embeddings in one transaction and adds
the events to the event catalog, so that search sees them. A search issued after
``record_event`` returned therefore finds the event.

Crash safety: the row is in the file from the moment ``record_event`` returns; a crash before
the drain loses only the embedding, and opening the file queues every event found without one
(``catalog_load.load_event_catalog``), to be embedded by the first drain.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from graphmem.store.vector_math import db_floats

_LOCK = threading.Lock()


class EmbedQueue:
    """Events waiting for their embedding: ``(id, user, content, search_text)``, oldest first."""

    def __init__(self) -> None:
        self._items: deque[tuple[str, str, str, str]] = deque()
        self._lock = threading.Lock()  # guards the deque
        self._drain_lock = threading.Lock()  # one drain at a time: the catalog keeps the FIFO order

    def __len__(self) -> int:
        return len(self._items)

    def put(self, ident: str, user: str, content: str, text: str) -> None:
        """Queue one event (its row is written, or being written, without an embedding)."""
        with self._lock:
            self._items.append((ident, user, content, text))

    def ids(self) -> set[str]:
        """The queued events' ids."""
        with self._lock:
            return {item[0] for item in self._items}

    def clear(self) -> None:
        """Forget the queue (the catalog is being reloaded, which queues what still needs it)."""
        with self._lock:
            self._items.clear()

    def drain(self, store: Any, embed: Callable[[list[str]], np.ndarray]) -> int:
        """Embed every queued event in one batch, write the embeddings, catalog the events."""
        with self._drain_lock:
            with self._lock:
                items = list(self._items)
                self._items.clear()
            if not items:
                return 0
            try:
                vectors = np.asarray(embed([content for _, _, content, _ in items]), dtype=np.float32)
                with store.transaction():
                    for (ident, user, _, text), vector in zip(items, vectors):
                        found = store.write(
                            "MATCH (e:Event {id: $id}) SET e.embedding = $v RETURN e.id AS id",
                            {"id": ident, "v": db_floats(vector)},
                        )
                        if found:  # else: rolled back or deleted since
                            store.on_commit(functools.partial(store.event_catalog.add, ident, user, vector, text))
            except BaseException:
                with self._lock:
                    self._items.extendleft(reversed(items))  # kept for the next drain
                raise
            return len(items)


def embed_queue(store: Any) -> EmbedQueue:
    """The store's queue (made on first use)."""
    queue: EmbedQueue | None = getattr(store, "_embed_queue", None)
    if queue is None:
        with _LOCK:
            queue = getattr(store, "_embed_queue", None)
            if queue is None:
                queue = EmbedQueue()
                store._embed_queue = queue
    return queue
