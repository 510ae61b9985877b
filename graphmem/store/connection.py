"""What a store engine provides underneath the per-concern stores, as Protocols.

:class:`Connection` is the engine's surface: queries, transactions, deferred writes and the
in-memory catalogs, which is what the per-concern stores (``learnings.py``, ``events.py``, ...)
build on. :class:`Mirrored` adds rebuilding those catalogs (``health.py`` repairs with it);
:class:`KuzuConnection` adds the Kùzu internals that raw Cypher (``cypher_gates.py``) and the
per-user view (``analyst.py``) use.

This module imports no engine, so any module of the store can name these types without an
import cycle; ``kuzu_store.KuzuBase`` and ``bolt.base.BoltBase`` implement them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import threading
    from collections import deque

    import kuzu

    from graphmem.store.catalog import EventCatalog, LearningCatalog
    from graphmem.store.locks import ReadWriteLock


class Connection(Protocol):
    """One open graph database: queries, transactions, deferred writes and the mirrors."""

    dim: int
    embedder_name: str
    read_only: bool
    generation: int
    schema_version: int
    path: Path | None
    learning_catalog: LearningCatalog
    event_catalog: EventCatalog

    @property
    def closed(self) -> bool: ...
    @property
    def embed_first(self) -> bool: ...
    def in_transaction(self) -> bool: ...
    def exclusive(self) -> AbstractContextManager[None]: ...
    def snapshot(self) -> AbstractContextManager[None]: ...
    def transaction(self) -> AbstractContextManager[None]: ...
    def on_commit(self, fn: Callable[[], None]) -> None: ...
    def before_commit(self, fn: Callable[[], None]) -> None: ...
    def rerun_on_conflict(self, fn: Callable[[], Any]) -> Any: ...
    def execute_read(self, cypher: str, params: Mapping[str, Any] | None = None) -> Any: ...
    def defer_write(self, fn: Callable[[], None]) -> None: ...
    def hold_writer(self) -> AbstractContextManager[None]: ...
    def flush_deferred(self) -> None: ...
    def read(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def write(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...
    def cypher(
        self, query: str, params: Mapping[str, Any] | None = None, *, write: bool = False, force: bool = False,
        timeout_ms: int | None = None,
    ) -> list[dict[str, Any]]: ...
    def stats(self) -> dict[str, int]: ...
    def scan_chunks(self, label: str, var: str, projection: str) -> Iterator[Any]: ...
    def close(self) -> None: ...


class Mirrored(Connection, Protocol):
    """:class:`Connection` plus rebuilding the mirrors from the database (an assembled store)."""

    def reload_catalogs(self) -> None: ...


class KuzuConnection(Connection, Protocol):
    """:class:`Connection` plus the Kùzu internals used by ``cypher_gates.py`` and ``analyst.py``."""

    _lock: ReadWriteLock
    _side_lock: threading.Lock
    _tx_depth: int
    _conn_main: kuzu.Connection
    _deferred: deque[Callable[[], None]]

    def _conn(self) -> kuzu.Connection: ...
    def _settle_after_rollback(self) -> None: ...
