"""BoltGraphStore: the Kùzu store's mixins over :class:`~graphmem.store.bolt.base.BoltBase`.

The class is assembled from ``KuzuGraphStore``'s own bases, so a mixin added to the Kùzu store
is picked up here too; where a mixin's Cypher cannot run on a Bolt engine, the method is
overridden in :class:`BoltOverrides` (first in the MRO).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from graphmem.errors import StoreError
from graphmem.models import Learning
from graphmem.store.bolt.base import BoltBase
from graphmem.store.kuzu_store import KuzuBase


class BoltOverrides(BoltBase):
    """Methods whose Kùzu form uses something a Bolt engine lacks (COPY, Kùzu's FTS index)."""

    def reload_catalogs(self) -> None:
        """Rebuild the in-memory mirrors from the database and remember the write counter they
        were read at (read first: a write in between only makes the next check reload again)."""
        from graphmem.store import release_unused_memory

        with self._lock.exclusive():
            try:
                gen = self.database_generation()
            except RuntimeError as e:
                raise StoreError(f"query failed: {e}") from e
            self.forget_cached_learnings()  # type: ignore[attr-defined]
            self.forget_summary_texts()  # type: ignore[attr-defined]
            self.load_learning_catalog()  # type: ignore[attr-defined]
            self.load_event_catalog()  # type: ignore[attr-defined]
            self.db_generation = gen
        release_unused_memory()

    def configure_vectors(self, storage: str, int8_min_rows: int) -> None:
        """As KuzuGraphStore.configure_vectors."""
        with self._lock.exclusive():
            if not self.learning_catalog.vectors.configure(storage, int8_min_rows):
                self.reload_catalogs()

    def get_learning(self, learning_id: str) -> Learning:
        """KuzuGraphStore.get_learning after catching up with other processes' writes."""
        self.ensure_fresh()
        return cast(Learning, super().get_learning(learning_id))  # type: ignore[misc]

    def get_learnings(self, ids: Sequence[str]) -> list[Learning]:
        """KuzuGraphStore.get_learnings after catching up with other processes' writes."""
        self.ensure_fresh()
        return cast(list[Learning], super().get_learnings(ids))  # type: ignore[misc]

    def fulltext_learnings(self, normalised_query: str, k: int) -> list[tuple[str, float]]:
        """Not on Bolt: ranking uses the in-memory BM25 mirror; Kùzu's FTS index has no portable form."""
        raise StoreError("the database's own full-text index is not used on a Bolt store; "
                         "graphmem ranks with its in-memory lexical index there")

    def bulk_insert_related(self, pairs: Sequence[tuple[str, str, str, str, int]], user_id: str | None = None) -> None:
        """RELATED edges in bulk: UNWIND batches instead of Kùzu's COPY."""
        from graphmem.errors import InvalidInputError

        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for la, a, lb, b, w in pairs:
            if la not in ("Entity", "Topic") or lb not in ("Entity", "Topic"):
                raise InvalidInputError(f"RELATED links Entity and Topic nodes, not {la}/{lb}")
            groups.setdefault((la, lb), []).append({"a": a, "b": b, "w": int(w), "u": user_id})
        with self.transaction():
            for (la, lb), rows in groups.items():
                for i in range(0, len(rows), 2000):
                    self.write(f"UNWIND $rows AS r MATCH (a:{la} {{name: r.a}}), (b:{lb} {{name: r.b}}) "
                               "CREATE (a)-[:RELATED {weight: r.w, user_id: r.u}]->(b)", {"rows": rows[i:i + 2000]})


def _assemble() -> type:
    from graphmem.store import KuzuGraphStore

    mixins = tuple(b for b in KuzuGraphStore.__bases__ if b is not KuzuBase)
    return type("BoltGraphStore", (BoltOverrides, *mixins), {
        "__doc__": "graphmem's store on a Bolt graph server (ArcadeDB, Neo4j, Memgraph): the Kùzu "
                   "store's mixins over BoltBase.",
        "__module__": __name__,
    })


_CLASS: type | None = None


def bolt_store_class() -> type:
    """The BoltGraphStore class (built once, from KuzuGraphStore's mixins at that time)."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _assemble()
    return _CLASS


def open_bolt_store(
    url: str,
    *,
    dim: int,
    embedder_name: str,
    read_only: bool = False,
    auth: tuple[str, str] | None = None,
    database: str | None = None,
    vector_storage: str = "auto",
    vector_int8_min_rows: int = 50_000,
) -> Any:
    """Connect to the graphmem memory in the Bolt database at ``url`` (created if empty) and load
    its mirrors. ``bolt://host:7687/name`` picks the database ``name``."""
    store = bolt_store_class()(url, dim=dim, embedder_name=embedder_name, read_only=read_only, auth=auth,
                               database=database)
    try:
        store.learning_catalog.vectors.configure(vector_storage, vector_int8_min_rows)
        store.reload_catalogs()
    except BaseException:
        store.close()
        raise
    return store
