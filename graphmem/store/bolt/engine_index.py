"""The engine's own vector and full-text indexes on learnings, where the database has them.

Ranking (``context()``, ``search``) reads graphmem's in-memory mirrors on every engine, so a Bolt
store ranks exactly as Kùzu does; why the engine's indexes are not on that path, with the figures,
is in docs/scale-out.md ("The engine's vector and full-text indexes"). This module is the other
path: :meth:`BoltEngineIndexes.fulltext_learnings` and :meth:`BoltEngineIndexes.vector_learnings`
ask the engine through the Neo4j procedures ``db.index.fulltext.queryNodes`` and
``db.index.vector.queryNodes``, when ``SHOW INDEXES`` lists a FULLTEXT / VECTOR index on
``Learning`` (the capability check; without one they raise :class:`StoreError`, as before).

- ArcadeDB 26.10 answers both procedures over Bolt, but its Cypher cannot create these indexes
  (``CREATE VECTOR INDEX`` / ``CREATE FULLTEXT INDEX`` fail with "Only standard, RANGE and TEXT
  index types are supported"): they are made with SQL (its HTTP API or console), e.g.
  ``CREATE INDEX ON Learning (search_text) FULL_TEXT``. Its index names are ``Type[property]``.
- On Neo4j 5 they are made in Cypher (``CREATE FULLTEXT INDEX learning_ft FOR (l:Learning) ON
  EACH [l.search_text]``, ``CREATE VECTOR INDEX ...``) and queried the same way: untested, no Neo4j
  can be installed here.
- graphmem stores the embedding as float32 bytes (reading lists of floats over Bolt is ~10×
  slower), which no vector index reads: a vector index needs a float-list copy of it (a property
  graphmem does not write), so :meth:`vector_learnings` serves whatever vector index an operator
  built on such a copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphmem.errors import StoreError
from graphmem.store.kuzu_store import KuzuBase

#: properties a full-text index on Learning may cover for graphmem's queries (normalised text first)
FULLTEXT_PROPS = ("search_text", "content")


@dataclass(frozen=True)
class EngineIndexes:
    """The engine's indexes on Learning graphmem can query (their names; None: absent)."""

    fulltext: str | None = None
    fulltext_property: str | None = None
    vector: str | None = None
    vector_property: str | None = None


def find_indexes(rows: Sequence[dict[str, Any]]) -> EngineIndexes:
    """Pick graphmem's indexes from ``SHOW INDEXES`` rows (Neo4j's columns, which ArcadeDB also
    returns: name, type, labelsOrTypes, properties, state)."""
    fulltext = fulltext_prop = vector = vector_prop = None
    for row in rows:
        kind = str(row.get("type") or "").upper()
        labels = list(row.get("labelsOrTypes") or [])
        props = [str(p) for p in (row.get("properties") or [])]
        if "Learning" not in labels or not props or str(row.get("state") or "ONLINE").upper() != "ONLINE":
            continue
        if kind == "FULLTEXT" and fulltext is None:
            covered = [p for p in FULLTEXT_PROPS if p in props]
            if covered:
                fulltext, fulltext_prop = str(row["name"]), covered[0]
        elif kind == "VECTOR" and vector is None and len(props) == 1:
            vector, vector_prop = str(row["name"]), props[0]
    return EngineIndexes(fulltext, fulltext_prop, vector, vector_prop)


class BoltEngineIndexes(KuzuBase):
    """Queries through the engine's full-text and vector indexes on Learning (when it has them)."""

    _engine_indexes: EngineIndexes | None = None

    def engine_indexes(self, *, refresh: bool = False) -> EngineIndexes:
        """The engine's usable indexes on Learning, read once with ``SHOW INDEXES`` (``refresh``:
        read again, e.g. after an operator created one). An engine without ``SHOW INDEXES`` has none."""
        if self._engine_indexes is None or refresh:
            try:
                rows = self.read("SHOW INDEXES")
            except StoreError:
                rows = []
            self._engine_indexes = find_indexes(rows)
        return self._engine_indexes

    def fulltext_learnings(self, normalised_query: str, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (learning id, score) pairs, best first, from the engine's full-text index on
        Learning (``db.index.fulltext.queryNodes``; over all users: the caller filters). Not the
        ranking path (that is the in-memory BM25 index, as on Kùzu). Raises :class:`StoreError`
        when the database has no such index."""
        name = self.engine_indexes().fulltext
        if name is None:
            raise StoreError("this Bolt database has no full-text index on Learning (search_text or content); "
                             "graphmem ranks with its in-memory lexical index. To query the engine's, create one "
                             "(ArcadeDB: SQL `CREATE INDEX ON Learning (search_text) FULL_TEXT`; Neo4j: "
                             "`CREATE FULLTEXT INDEX learning_ft FOR (l:Learning) ON EACH [l.search_text]`)")
        if not normalised_query.strip() or k <= 0:
            return []
        rows = self.read(
            "CALL db.index.fulltext.queryNodes($index, $q) YIELD node, score "
            "RETURN node.id AS id, score ORDER BY score DESC LIMIT $k",
            {"index": name, "q": normalised_query, "k": int(k)},
        )
        return [(str(r["id"]), float(r["score"])) for r in rows]

    def vector_learnings(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (learning id, similarity) pairs, nearest first, from the engine's vector index
        on Learning (``db.index.vector.queryNodes``; approximate, over all users). Raises
        :class:`StoreError` when the database has no such index (see the module's notes)."""
        name = self.engine_indexes().vector
        if name is None:
            raise StoreError("this Bolt database has no vector index on Learning; graphmem ranks with its "
                             "in-memory vector mirror (see docs/scale-out.md)")
        if k <= 0:
            return []
        rows = self.read(
            "CALL db.index.vector.queryNodes($index, $k, $vector) YIELD node, score "
            "RETURN node.id AS id, score ORDER BY score DESC",
            {"index": name, "k": int(k), "vector": [float(x) for x in vector]},
        )
        return [(str(r["id"]), float(r["score"])) for r in rows]
