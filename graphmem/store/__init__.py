"""The graph store: the only package with Cypher in it.

``GraphStore`` (:mod:`graphmem.store.interfaces`) is the protocol the rest of graphmem programs
against: one small protocol per concern (learnings, events, retrieval reads, summaries, the
outcome loop, traces, ...) over the engine's :class:`~graphmem.store.connection.Connection`.
``KuzuGraphStore`` (:mod:`graphmem.store.kuzu_graph`) is the Kùzu implementation, assembled from
``kuzu_store.KuzuBase`` (opening, locking, transactions, raw Cypher) and one mixin per concern;
:mod:`graphmem.store.bolt` runs the same mixins over a Bolt server.

Moving to another engine means reimplementing this package only.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from graphmem.store.interfaces import GraphStore
from graphmem.store.kuzu_graph import KuzuGraphStore, release_unused_memory

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
    vector_ann_min_rows: int = 0,
    bolt_auth: tuple[str, str] | None = None,
    buffer_pool_mb: int = 0,
    mirror_snapshot: bool = True,
    mirror_snapshot_min_rows: int = 10_000,
) -> KuzuGraphStore:
    """Open a store, sharing one instance per file within this process.

    A ``bolt://`` / ``neo4j://`` URL opens the store on a Bolt graph server instead (see
    :mod:`graphmem.store.bolt`; ``bolt_auth`` = (user, password)); that store is not shared.

    Two ``kuzu.Database`` objects on one file in one process do not see each other's writes, so
    every Memory on the same file (e.g. one per user) shares a single store, reference-counted;
    release it with :func:`release_store`. The vector storage rule and Kùzu's buffer pool size
    (``buffer_pool_mb``, 0: sized from the file) are the first opener's, as is the mirrors' snapshot
    rule (``mirror_snapshot``, ``mirror_snapshot_min_rows``: graphmem/store/snapshot.py).
    """
    vectors: dict[str, Any] = {"vector_storage": vector_storage, "vector_int8_min_rows": vector_int8_min_rows,
                               "vector_ann_min_rows": vector_ann_min_rows}
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
                               buffer_pool_mb=buffer_pool_mb, mirror_snapshot=mirror_snapshot,
                               mirror_snapshot_min_rows=mirror_snapshot_min_rows, **vectors)
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


__all__ = ["GraphStore", "KuzuGraphStore", "open_store", "release_store", "release_unused_memory"]
