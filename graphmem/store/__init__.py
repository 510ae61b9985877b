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
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import numpy as np

from graphmem.models import Event, Learning, LearningLinks, Objective
from graphmem.store.bulk import BulkStore
from graphmem.store.catalog import EventCatalog, LearningCatalog
from graphmem.store.events import EventStore
from graphmem.store.learnings import LearningStore


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


class KuzuGraphStore(BulkStore, LearningStore, EventStore):
    """The Kùzu implementation of :class:`GraphStore`."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        dim: int,
        embedder_name: str,
        read_only: bool = False,
    ) -> None:
        super().__init__(path, dim=dim, embedder_name=embedder_name, read_only=read_only)
        self.reload_catalogs()

    def reload_catalogs(self) -> None:
        """Rebuild the in-memory catalogs from the file (on open, and after raw Cypher writes)."""
        self.load_learning_catalog()
        self.load_event_catalog()


__all__ = ["GraphStore", "KuzuGraphStore"]
