"""BoltGraphStore: the Kùzu store's mixins over :class:`~graphmem.store.bolt.base.BoltBase`.

The class is assembled from ``KuzuGraphStore``'s own bases, so a mixin added to the Kùzu store
is picked up here too; where a mixin's Cypher cannot run on a Bolt engine, the method is
overridden in :class:`BoltOverrides` (first in the MRO).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np

from graphmem.errors import NotFoundError, StoreError
from graphmem.models import Learning
from graphmem.store.bolt.base import BoltBase
from graphmem.store.bolt.engine_index import BoltEngineIndexes

#: counters written as differences, and the two scores (clamped to [0, 1]) likewise
_COUNTERS = ("helpful", "harmful", "validations", "contradictions", "times_applied")
_SCORES = ("score", "confidence")
_DELTA = _COUNTERS + _SCORES
_DELTA_RETURN = ", ".join(f"l.{p} AS {p}" for p in _DELTA)


def delta_sets(base: Learning | None, learning: Learning, embedding: Any) -> tuple[str, dict[str, Any]]:
    """The SET clause and parameters that write ``learning`` over ``base`` (see save_learning)."""
    from graphmem.store.learnings import LEARNING_PROPS, learning_params

    params = learning_params(learning)
    old = learning_params(base) if base is not None else None
    sets: list[str] = []
    for p in (*LEARNING_PROPS, "content_key", "search_text"):
        if p == "id" or (old is not None and old[p] == params[p]):
            continue
        if old is not None and p in _COUNTERS:
            params[f"d_{p}"] = int(params[p]) - int(old[p] or 0)
            sets.append(f"l.{p} = CASE WHEN coalesce(l.{p}, 0) + $d_{p} < 0 THEN 0 ELSE coalesce(l.{p}, 0) + $d_{p} END")
        elif old is not None and p in _SCORES:  # exactly the value computed when nobody moved it since
            params[f"b_{p}"], params[f"d_{p}"] = old[p], float(params[p]) - float(old[p] or 0.0)
            moved = f"coalesce(l.{p}, 0.0) + $d_{p}"
            sets.append(f"l.{p} = CASE WHEN l.{p} = $b_{p} THEN ${p} WHEN {moved} < 0.0 THEN 0.0 "
                        f"WHEN {moved} > 1.0 THEN 1.0 ELSE {moved} END")
        else:
            sets.append(f"l.{p} = ${p}")
    if embedding is not None:
        params["embedding"] = [float(x) for x in embedding]
        sets.append("l.embedding = $embedding")
    if not sets:
        sets.append("l.id = $id")
    return ", ".join(sets), params


class BoltOverrides(BoltEngineIndexes, BoltBase):
    """Methods whose Kùzu form uses something a Bolt engine lacks (COPY, Kùzu's FTS index; the
    engine's own full-text and vector indexes come from :class:`BoltEngineIndexes`)."""

    #: rows per UNWIND statement of the bulk loads (one round trip each, all in one transaction)
    bulk_rows = 1000

    def reload_catalogs(self) -> None:
        """Rebuild the in-memory mirrors from the database and remember the write counter they
        were read at (read first: a write in between only makes the next check reload again).

        Called by a writer after writes that bypass the mirrors' hooks (an import, a repair), it
        first writes a ``*`` change record, so other processes rebuild theirs too; on open, when
        catching up, and after a forget (whose change record says what went) it does not."""
        if not getattr(self, "_quiet_reload", False) and not self.read_only and not self._closed:
            if self.in_transaction():
                self.note_changes(["*"])
            else:
                with self.transaction():
                    self.note_changes(["*"])
        self._reload_mirrors()

    @contextmanager
    def quiet_reload(self) -> Iterator[None]:
        """Inside the block, :meth:`reload_catalogs` rebuilds this process's mirrors only."""
        before = getattr(self, "_quiet_reload", False)
        self._quiet_reload = True
        try:
            yield
        finally:
            self._quiet_reload = before

    def _after_forget(self) -> None:
        """ForgetStore._after_forget, whose reload is this process's own (see reload_catalogs)."""
        with self.quiet_reload():
            super()._after_forget()  # type: ignore[misc]

    def _reload_mirrors(self) -> None:
        from graphmem.store.kuzu_graph import release_unused_memory

        with self._lock.exclusive():
            try:
                counters = self.counters()
            except RuntimeError as e:
                raise StoreError(f"query failed: {e}") from e
            self.forget_cached_learnings()  # type: ignore[attr-defined]
            self.forget_summary_texts()  # type: ignore[attr-defined]
            self.load_learning_catalog()  # type: ignore[attr-defined]
            self.load_event_catalog()  # type: ignore[attr-defined]
            self.set_seen(counters)
            self.generation += 1
            self.refreshes["full"] += 1
        release_unused_memory()

    def catch_up(self) -> None:
        """Apply other processes' change records to the mirrors (a full reload when they do not
        suffice); see :mod:`graphmem.store.bolt.changes`."""
        from graphmem.store.bolt.changes import catch_up

        try:
            catch_up(self)
        except RuntimeError as e:
            raise StoreError(f"query failed: {e}") from e

    def configure_vectors(self, storage: str, int8_min_rows: int) -> None:
        """As KuzuGraphStore.configure_vectors."""
        with self._lock.exclusive():
            if not self.learning_catalog.vectors.configure(storage, int8_min_rows):
                self._reload_mirrors()

    def get_learning(self, learning_id: str) -> Learning:
        """KuzuGraphStore.get_learning after catching up with other processes' writes. Inside a
        write transaction the row is read from the server and remembered as this transaction's
        base for :meth:`save_learning`'s delta writes."""
        self.ensure_fresh()
        learning = cast(Learning, super().get_learning(learning_id))  # type: ignore[misc]
        if self.in_transaction():
            self._main.bases.setdefault(learning.id, learning)
        return learning

    def get_learnings(self, ids: Sequence[str]) -> list[Learning]:
        """KuzuGraphStore.get_learnings after catching up with other processes' writes."""
        self.ensure_fresh()
        out = []
        for ident in ids:
            try:
                out.append(self.get_learning(ident))
            except NotFoundError:
                continue
        return out

    def save_learning(self, learning: Learning, embedding: Any = None) -> None:
        """Write a learning, as KuzuGraphStore.save_learning, but relative to the row this
        transaction read (:meth:`get_learning`): counters and score/confidence move by the
        difference (``SET l.helpful = l.helpful + $d``), and only properties that differ from
        that row are set, so another process's change committed since the read is kept, not
        overwritten. Without such a row (read outside the transaction), every property is set.
        The mirrors get the values the server holds after the write."""
        from functools import partial

        with self.transaction():
            base = self._main.bases.get(learning.id)
            sets, params = delta_sets(base, learning, embedding)
            rows = self.write(f"MATCH (l:Learning {{id: $id}}) SET {sets} RETURN {_DELTA_RETURN}", params)
            if not rows:
                raise NotFoundError(f"no learning with id {learning.id!r}")
            now = {k: rows[0][k] for k in _DELTA if rows[0].get(k) is not None}
            stored = learning.model_copy(update=now)
            self._main.bases[learning.id] = stored
            self.on_commit(partial(self._committed, stored, embedding, params["content_key"]))  # type: ignore[attr-defined]

    def forget_learnings(self, learning_ids: Sequence[str]) -> dict[str, int]:
        """KuzuGraphStore.forget_learnings, with the deletions in the change record (other
        processes drop those rows instead of reloading everything)."""
        with self.transaction():
            self.note_changes([f"D:{i}" for i in dict.fromkeys(learning_ids)])
            return cast(dict[str, int], super().forget_learnings(learning_ids))  # type: ignore[misc]

    def _layout_rows(self, user_id: str) -> list[dict[str, Any]]:
        """SearchStore._layout_rows without Kùzu's insertion offset, which a Bolt engine does not
        have (its row ids are spread over several buckets)."""
        return self.read(
            "MATCH (e:Event) WHERE e.user_id = $user RETURN e.id AS id, e.session_id AS sid, "
            "e.created_at AS ts, e.content AS content, e.role AS role, e.entities AS ents",
            {"user": user_id},
        )

    def _layout_tie(self, row: dict[str, Any], rows_map: Mapping[str, int]) -> Any:
        """Events of one session and one timestamp (a batch, such as a conversation imported at
        once) in the order this process catalogued them: the order they were written in, for the
        process that wrote them."""
        return rows_map[str(row["id"])]

    def bulk_insert_learnings(self, learnings: Sequence[Learning], embeddings: Any) -> None:
        """Many new learnings with their anchor edges: UNWIND batches in one transaction instead
        of Kùzu's COPY. The learnings must not exist yet; the mirrors are reloaded afterwards."""

        from graphmem.errors import InvalidInputError
        from graphmem.models import utcnow
        from graphmem.store.kuzu_store import to_db_time
        from graphmem.store.learnings import learning_params

        n = len(learnings)
        if n == 0:
            return
        vectors = np.asarray(embeddings, dtype=np.float32)
        if vectors.shape != (n, self.dim):
            raise InvalidInputError(f"embeddings must have shape ({n}, {self.dim}), got {vectors.shape}")
        rows = []
        for learning, vector in zip(learnings, vectors):
            params = {k: v for k, v in learning_params(learning).items() if v is not None}
            params["embedding"] = [float(x) for x in vector]
            rows.append(params)
        now = to_db_time(utcnow())
        anchors = {
            ("ABOUT_TOOL", "Tool"): [{"id": l.id, "name": l.tool} for l in learnings if l.tool],
            ("ABOUT_TOPIC", "Topic"): [{"id": l.id, "name": t} for l in learnings for t in l.topics],
            ("MENTIONS", "Entity"): [{"id": l.id, "name": e} for l in learnings for e in l.entities],
            ("FOR_OBJECTIVE_TYPE", "ObjectiveType"): [{"id": l.id, "name": l.objective_type} for l in learnings if l.objective_type],
        }
        on_create = {"Tool": "x.success_count = 0, x.error_count = 0, x.created_at = $ts",
                     "Entity": "x.kind = 'thing', x.created_at = $ts"}
        step = self.bulk_rows
        with self.transaction():
            self.note_changes(["*"])
            for i in range(0, n, step):
                self.write("UNWIND $rows AS r CREATE (l:Learning) SET l = r", {"rows": rows[i:i + step]})
            for (rel, label), edges in anchors.items():
                names = sorted({e["name"] for e in edges})
                for i in range(0, len(names), step):  # the anchor nodes, a batch of names per statement
                    self.write(f"UNWIND $names AS n MERGE (x:{label} {{name: n}}) "
                               f"ON CREATE SET {on_create.get(label, 'x.created_at = $ts')}",
                               {"names": names[i:i + step], "ts": now})
                for i in range(0, len(edges), step):
                    self.write(f"UNWIND $rows AS r MATCH (l:Learning {{id: r.id}}), (x:{label} {{name: r.name}}) "
                               f"CREATE (l)-[:{rel}]->(x)", {"rows": edges[i:i + step]})
        self._reload_mirrors()

    def bulk_insert_related(self, pairs: Sequence[tuple[str, str, str, str, int]], user_id: str | None = None) -> None:
        """RELATED edges in bulk: UNWIND batches instead of Kùzu's COPY."""
        from graphmem.errors import InvalidInputError

        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for la, a, lb, b, w in pairs:
            if la not in ("Entity", "Topic") or lb not in ("Entity", "Topic"):
                raise InvalidInputError(f"RELATED links Entity and Topic nodes, not {la}/{lb}")
            groups.setdefault((la, lb), []).append({"a": a, "b": b, "w": int(w), "u": user_id})
        with self.transaction():
            self.note_changes(["*"])
            for (la, lb), rows in groups.items():
                for i in range(0, len(rows), 2000):
                    self.write(f"UNWIND $rows AS r MATCH (a:{la} {{name: r.a}}), (b:{lb} {{name: r.b}}) "
                               "CREATE (a)-[:RELATED {weight: r.w, user_id: r.u}]->(b)", {"rows": rows[i:i + 2000]})


def _assemble() -> type:
    """BoltOverrides first, then KuzuGraphStore with all its mixins: the MRO puts BoltBase's
    primitives before the mixins (they define none of them) and KuzuBase last, and code typed
    against KuzuGraphStore (``isinstance`` checks) takes a Bolt store as it is."""
    from graphmem.store.kuzu_graph import KuzuGraphStore

    return type("BoltGraphStore", (BoltOverrides, KuzuGraphStore), {
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
    vector_ann_min_rows: int = 0,
) -> Any:
    """Connect to the graphmem memory in the Bolt database at ``url`` (created if empty) and load
    its mirrors. ``bolt://host:7687/name`` picks the database ``name``."""
    store = bolt_store_class()(url, dim=dim, embedder_name=embedder_name, read_only=read_only, auth=auth,
                               database=database)
    try:
        store.learning_catalog.vectors.configure(vector_storage, vector_int8_min_rows, vector_ann_min_rows)
        store._reload_mirrors()
    except BaseException:
        store.close()
        raise
    return store
