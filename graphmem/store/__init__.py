"""The graph store: the only package with Cypher in it.

``GraphStore`` is the protocol the rest of graphmem programs against; ``KuzuGraphStore`` is the
Kùzu implementation, assembled from one mixin per concern so each module stays small:

- ``kuzu_store.KuzuBase``: opening, locking, transactions, raw and analyst Cypher, errors
- ``learnings.LearningStore``: Learning nodes and their edges, the learning catalog
- ``events.EventStore``: Event and Objective nodes, the event catalog
- further mixins add retrieval queries, summaries, the outcome loop and traces.

Moving to another engine means reimplementing this package only.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, suppress
from typing import Any, Protocol, runtime_checkable

import numpy as np

from graphmem.models import Event, Learning, LearningLinks, Objective
from graphmem.store.analytics import AnalyticsStore
from graphmem.store.bulk import BulkStore
from graphmem.store.catalog import EventCatalog, LearningCatalog
from graphmem.store.distill import DistillStore
from graphmem.store.domains import DomainStore
from graphmem.store.events import EventStore
from graphmem.store.evolution import EvolutionStore
from graphmem.store.facts import FactStore
from graphmem.store.forget import ForgetStore
from graphmem.store.learnings import LearningStore
from graphmem.store.loop import LoopStore
from graphmem.store.prompts import PromptStore
from graphmem.store.regression import RegressionStore
from graphmem.store.retrieval import RetrievalStore
from graphmem.store.search import SearchStore
from graphmem.store.summaries import SummaryStore
from graphmem.store.traces import TraceStore
from graphmem.store.tuning import TuningStore


@runtime_checkable
class GraphStore(Protocol):
    """What graphmem needs from a graph database (core operations)."""

    dim: int
    learning_catalog: LearningCatalog
    event_catalog: EventCatalog

    def transaction(self) -> AbstractContextManager[None]: ...
    def read(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def write(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *, write: bool = False) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...

    def insert_learning(self, learning: Learning, embedding: np.ndarray, links: LearningLinks) -> None: ...
    def save_learning(self, learning: Learning, embedding: np.ndarray | None = None) -> None: ...
    def get_learning(self, learning_id: str) -> Learning: ...
    def get_learnings(self, ids: Sequence[str]) -> list[Learning]: ...
    def find_learnings(self, **filters: Any) -> list[Learning]: ...

    def insert_event(self, event: Event, embedding: np.ndarray) -> None: ...
    def get_event(self, event_id: str) -> Event: ...
    def recent_events(self, user_id: str, **filters: Any) -> list[Event]: ...
    def insert_objective(self, objective: Objective) -> None: ...
    def get_objective(self, objective_id: str) -> Objective: ...
    def save_objective(self, objective: Objective) -> None: ...


class KuzuGraphStore(BulkStore, LearningStore, EventStore, RetrievalStore, SearchStore, AnalyticsStore, LoopStore, SummaryStore, TraceStore,
                     ForgetStore, FactStore, PromptStore, DistillStore, RegressionStore, EvolutionStore, TuningStore,
                     DomainStore):
    """The Kùzu implementation of :class:`GraphStore`."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        dim: int,
        embedder_name: str,
        read_only: bool = False,
        vector_storage: str = "auto",
        vector_int8_min_rows: int = 50_000,
        buffer_pool_mb: int = 0,
    ) -> None:
        super().__init__(path, dim=dim, embedder_name=embedder_name, read_only=read_only, buffer_pool_mb=buffer_pool_mb)
        self.learning_catalog.vectors.configure(vector_storage, vector_int8_min_rows)  # before the load
        self.reload_catalogs()

    def configure_vectors(self, storage: str, int8_min_rows: int) -> None:
        """Change how the learnings' vector mirror is stored ("auto", "float32", "int8"; see
        graphmem/store/vectors.py); re-reads the file when int8 rows must become float32."""
        with self._lock.exclusive():
            if not self.learning_catalog.vectors.configure(storage, int8_min_rows):
                self.reload_catalogs()

    def reload_catalogs(self) -> None:
        """Rebuild the in-memory catalogs from the file (on open, and after raw Cypher writes).

        Holds the store exclusively, so no ranking reads half-rebuilt mirrors.
        """
        with self._lock.exclusive():
            self.forget_cached_learnings()
            self.forget_summary_texts()
            self.load_learning_catalog()
            self.load_event_catalog()
        release_unused_memory()


def release_unused_memory() -> None:
    """Hand memory freed after a catalog load back to the OS (Arrow's pool and glibc's heap keep
    it otherwise: ~290 MB of resident memory at 100k learnings)."""
    with suppress(Exception):
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        with suppress(Exception):
            import ctypes

            ctypes.CDLL("libc.so.6").malloc_trim(0)


_OPEN: dict[str, tuple[KuzuGraphStore, int]] = {}
_OPEN_LOCK = threading.Lock()


def open_store(
    path: str | os.PathLike[str] | None,
    *,
    dim: int,
    embedder_name: str,
    read_only: bool = False,
    vector_storage: str = "auto",
    vector_int8_min_rows: int = 50_000,
    bolt_auth: tuple[str, str] | None = None,
    buffer_pool_mb: int = 0,
) -> KuzuGraphStore:
    """Open a store, sharing one instance per file within this process.

    A ``bolt://`` / ``neo4j://`` URL opens the store on a Bolt graph server instead (see
    :mod:`graphmem.store.bolt`; ``bolt_auth`` = (user, password)); that store is not shared.

    Two ``kuzu.Database`` objects on one file in one process do not see each other's writes, so
    every Memory on the same file (e.g. one per user) shares a single store, reference-counted;
    release it with :func:`release_store`. The vector storage rule and Kùzu's buffer pool size
    (``buffer_pool_mb``, 0: Kùzu's default) are the first opener's.
    """
    vectors: dict[str, Any] = {"vector_storage": vector_storage, "vector_int8_min_rows": vector_int8_min_rows}
    if isinstance(path, str) and "://" in path:
        from graphmem.store.bolt import is_bolt_url, open_bolt_store

        if is_bolt_url(path):
            return open_bolt_store(path, dim=dim, embedder_name=embedder_name, read_only=read_only,  # type: ignore[no-any-return]
                                   auth=bolt_auth, **vectors)
    if path is None:
        return KuzuGraphStore(None, dim=dim, embedder_name=embedder_name, read_only=read_only,
                              buffer_pool_mb=buffer_pool_mb, **vectors)
    key = str(os.path.abspath(os.fspath(path)))
    with _OPEN_LOCK:
        entry = _OPEN.get(key)
        if entry is not None and not entry[0].closed:
            store, count = entry
            if store.dim != dim or store.embedder_name != embedder_name:
                from graphmem.errors import EmbedderMismatchError

                raise EmbedderMismatchError(
                    f"{path} is open in this process with embedder {store.embedder_name!r} ({store.dim} dims); "
                    f"open it with the same embedder"
                )
            if store.read_only != read_only:
                from graphmem.errors import StoreError

                raise StoreError(
                    f"{path} is already open in this process with read_only={store.read_only}; "
                    "open it the same way or close the other Memory first"
                )
            _OPEN[key] = (store, count + 1)
            return store
        store = KuzuGraphStore(key, dim=dim, embedder_name=embedder_name, read_only=read_only,
                               buffer_pool_mb=buffer_pool_mb, **vectors)
        _OPEN[key] = (store, 1)
        return store


def release_store(store: KuzuGraphStore) -> None:
    """Drop one reference to ``store``; the last one closes the database."""
    with _OPEN_LOCK:
        for key, (known, count) in list(_OPEN.items()):
            if known is store:
                if count > 1:
                    _OPEN[key] = (known, count - 1)
                    return
                del _OPEN[key]
                break
    store.close()


__all__ = ["GraphStore", "KuzuGraphStore", "open_store", "release_store"]
