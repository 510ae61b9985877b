"""Learning nodes and their edges: writes, reads, and the catalog rebuild on open."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import kuzu
import numpy as np
import pyarrow as pa
from pydantic import ValidationError

from graphmem.errors import InvalidInputError, NotFoundError, StoreError
from graphmem.models import Learning, LearningLinks, Transition
from graphmem.store.copy import copy_into, edge_table, load_edges, load_nodes
from graphmem.store.kuzu_store import KuzuBase, from_db_time, to_db_time
from graphmem.store.text import content_key, search_text
from graphmem.store.vector_math import db_floats

# Scalar properties written from the model, in schema order (embedding handled apart).
LEARNING_PROPS: tuple[str, ...] = (
    "id", "user_id", "shared", "kind", "content", "recommendation", "applies_when",
    "source_type", "source_event_id", "sentiment", "confidence", "score", "status",
    "canary_allocation", "tier", "helpful", "harmful", "validations", "contradictions",
    "times_applied", "last_applied_at", "last_validated_at", "pass_streak", "fail_streak",
    "version", "ttl_days", "superseded_by", "tool", "objective_type", "topics", "entities",
    "created_at", "updated_at",
)
_TIME_PROPS = frozenset({"last_applied_at", "last_validated_at", "created_at", "updated_at"})
_RETURN = ", ".join(f"l.{p} AS {p}" for p in LEARNING_PROPS)


def learning_params(learning: Learning) -> dict[str, Any]:
    """The model as Kùzu parameters (times as naive UTC, derived search columns added)."""
    data = learning.model_dump()
    params = {p: (to_db_time(data[p]) if p in _TIME_PROPS else data[p]) for p in LEARNING_PROPS}
    params["content_key"] = content_key(learning.content)
    params["search_text"] = search_text(learning.content, learning.recommendation, learning.applies_when)
    return params


def learning_from_row(row: dict[str, Any]) -> Learning:
    """A Learning model from a row returned with the ``_RETURN`` projection."""
    data = {p: row[p] for p in LEARNING_PROPS}
    for p in _TIME_PROPS:
        data[p] = from_db_time(data[p])
    data["topics"] = list(data["topics"] or [])
    data["entities"] = list(data["entities"] or [])
    for p in ("helpful", "harmful", "validations", "contradictions", "times_applied", "pass_streak", "fail_streak"):
        data[p] = int(data[p] or 0)
    data["version"] = int(data["version"] or 1)
    data["shared"] = bool(data["shared"])
    try:
        return Learning.model_validate(data)
    except ValidationError as e:
        raise StoreError(
            f"learning {data.get('id')} holds values graphmem cannot use ({e.errors()[0].get('msg', e)}); "
            "run `graphmem doctor --repair` (or Memory.doctor(repair=True))"
        ) from e


def _copy(learning: Learning) -> Learning:
    """An independent copy (its only mutable fields are the two lists), much cheaper than deep."""
    return learning.model_copy(update={"topics": list(learning.topics), "entities": list(learning.entities)})


_LINK_CYPHER = {
    "tool": "UNWIND $rows AS r MERGE (t:Tool {name: r.name}) ON CREATE SET t.success_count = 0, "
            "t.error_count = 0, t.created_at = r.ts WITH t, r MATCH (l:Learning {id: r.id}) MERGE (l)-[:ABOUT_TOOL]->(t)",
    "topic": "UNWIND $rows AS r MERGE (t:Topic {name: r.name}) ON CREATE SET t.created_at = r.ts "
             "WITH t, r MATCH (l:Learning {id: r.id}) MERGE (l)-[:ABOUT_TOPIC]->(t)",
    "entity": "UNWIND $rows AS r MERGE (e:Entity {name: r.name}) ON CREATE SET e.kind = 'thing', e.created_at = r.ts "
              "WITH e, r MATCH (l:Learning {id: r.id}) MERGE (l)-[:MENTIONS]->(e)",
    "objective_type": "UNWIND $rows AS r MERGE (o:ObjectiveType {name: r.name}) ON CREATE SET o.created_at = r.ts "
                      "WITH o, r MATCH (l:Learning {id: r.id}) MERGE (l)-[:FOR_OBJECTIVE_TYPE]->(o)",
    "objective": "UNWIND $rows AS r MATCH (l:Learning {id: r.id}), (o:Objective {id: r.name}) MERGE (l)-[:FOR_OBJECTIVE]->(o)",
    "event": "UNWIND $rows AS r MATCH (l:Learning {id: r.id}), (e:Event {id: r.name}) MERGE (l)-[:DERIVED_FROM]->(e)",
}


def _one_row(cypher: str) -> str:
    """The per-row form of an ``UNWIND $rows AS r ...`` statement: ``$name`` for ``r.name``.

    Kùzu 0.11 joins ``UNWIND ... MATCH (l:Learning {id: r.id})`` by scanning the whole node
    table, while a parameter (``{id: $id}``) is a primary-key lookup: a few rows are written
    one statement each, so a write costs the same at 10k and at 1M learnings.
    """
    one = cypher.replace("UNWIND $rows AS r ", "")
    one = re.sub(r"WITH (\w+), r ", r"WITH \1 ", one)
    return re.sub(r"\br\.(\w+)", r"$\1", one)


_LINK_ONE = {kind: _one_row(cypher) for kind, cypher in _LINK_CYPHER.items()}
# The edges of a learning created in the same transaction: it has none yet, so each is CREATEd
# (a MERGE of an edge costs ~3x a CREATE in Kùzu 0.11.3: it looks for the edge first).
_NEW_LINK_ONE = {
    "tool": "MATCH (l:Learning {id: $id}) MERGE (t:Tool {name: $name}) ON CREATE SET t.success_count = 0, "
            "t.error_count = 0, t.created_at = $ts CREATE (l)-[:ABOUT_TOOL]->(t)",
    "topic": "MATCH (l:Learning {id: $id}) MERGE (t:Topic {name: $name}) ON CREATE SET t.created_at = $ts "
             "CREATE (l)-[:ABOUT_TOPIC]->(t)",
    "entity": "MATCH (l:Learning {id: $id}) MERGE (e:Entity {name: $name}) ON CREATE SET e.kind = 'thing', "
              "e.created_at = $ts CREATE (l)-[:MENTIONS]->(e)",
    "objective_type": "MATCH (l:Learning {id: $id}) MERGE (o:ObjectiveType {name: $name}) ON CREATE SET "
                      "o.created_at = $ts CREATE (l)-[:FOR_OBJECTIVE_TYPE]->(o)",
    "objective": "MATCH (l:Learning {id: $id}), (o:Objective {id: $name}) CREATE (l)-[:FOR_OBJECTIVE]->(o)",
    "event": "MATCH (l:Learning {id: $id}), (e:Event {id: $name}) CREATE (l)-[:DERIVED_FROM]->(e)",
}
_PER_ROW_MIN = 16  # up to this many rows (or one per 500 learnings in the file) go one statement each


def _cooccurring(topics: Sequence[str], entities: Sequence[str]) -> list[tuple[str, str, str, str]]:
    """The (label, name, label, name) pairs one learning's topics and entities form."""
    names = [("Topic", t) for t in topics] + [("Entity", e) for e in entities]
    return [(ka, a, kb, b) for i, (ka, a) in enumerate(names) for kb, b in names[i + 1 :] if a != b or ka != kb]


_ANCHOR_MERGE = {
    "tool": "UNWIND $rows AS r MERGE (t:Tool {name: r.name}) ON CREATE SET t.success_count = 0, t.error_count = 0, t.created_at = r.ts",
    "topic": "UNWIND $rows AS r MERGE (t:Topic {name: r.name}) ON CREATE SET t.created_at = r.ts",
    "entity": "UNWIND $rows AS r MERGE (e:Entity {name: r.name}) ON CREATE SET e.kind = 'thing', e.created_at = r.ts",
    "objective_type": "UNWIND $rows AS r MERGE (o:ObjectiveType {name: r.name}) ON CREATE SET o.created_at = r.ts",
}
_ANCHOR_REL = {"tool": ("ABOUT_TOOL", "Tool"), "topic": ("ABOUT_TOPIC", "Topic"), "entity": ("MENTIONS", "Entity"),
               "objective_type": ("FOR_OBJECTIVE_TYPE", "ObjectiveType")}


def _named(links: LearningLinks, kind: str) -> list[str]:
    """The anchor names of one kind (``_ANCHOR_REL``'s keys) a learning links to."""
    if kind == "tool":
        return [links.tool] if links.tool else []
    if kind == "objective_type":
        return [links.objective_type] if links.objective_type else []
    return list(links.topics if kind == "topic" else links.entities)



_SET_ALL = ", ".join(f"l.{p} = ${p}" for p in LEARNING_PROPS if p != "id")


class LearningStore(KuzuBase):
    """Learning nodes, their association edges, and the in-memory learning catalog.

    Full rows read by id are cached (bounded) and refreshed after every commit that writes the
    learning, so the few rows context() returns rarely cost a Kùzu round trip.
    """

    CACHE_SIZE = 8192

    def _cache(self) -> dict[str, Learning]:
        cache: dict[str, Learning] | None = getattr(self, "_learning_cache", None)
        if cache is None:
            cache = {}
            self._learning_cache = cache
        return cache

    def _remember(self, learning: Learning) -> None:
        cache = self._cache()
        if len(cache) >= self.CACHE_SIZE:
            cache.clear()
        cache[learning.id] = _copy(learning)

    def forget_cached_learnings(self) -> None:
        """Drop every cached row (after writes that bypass save_learning, e.g. raw Cypher)."""
        self._cache().clear()
        self._loaded_index: dict[str, int] = {}
        self._dirty_ids: set[str] = set()

    def insert_learning(self, learning: Learning, embedding: np.ndarray | Callable[[], np.ndarray],
                        links: LearningLinks) -> None:
        """Write the learning, its Tool/Topic/Entity/ObjectiveType nodes and edges in one transaction.

        ``embedding`` may be a function that returns the vector: the node is then written without
        it and the function is called at the end of the transaction, just before its commit, whose
        vector is written then (the embedding computes on a worker meanwhile; an error it raises
        rolls the whole write back).
        """
        if not callable(embedding):
            self.insert_learnings([(learning, embedding, links)])
            return
        with self.transaction():
            params = learning_params(learning)
            entry = (learning.id, links, learning.created_at, learning.user_id)
            self._insert_one(params, entry)
            self.before_commit(functools.partial(self._write_vector, learning, embedding, params))

    def _write_vector(self, learning: Learning, source: Callable[[], np.ndarray], params: dict[str, Any]) -> None:
        """Before the commit of the transaction that created ``learning`` without its vector: write it."""
        vector = np.asarray(source(), dtype=np.float32).reshape(-1)
        if vector.shape != (self.dim,) or not np.all(np.isfinite(vector)):
            raise StoreError(f"the embedder returned a vector of shape {vector.shape} (or not finite) "
                             f"where {self.dim} finite numbers were expected; nothing was written")
        self.write("MATCH (l:Learning {id: $id}) SET l.embedding = $embedding",
                   {"id": learning.id, "embedding": db_floats(vector)})
        self.on_commit(functools.partial(self._committed, learning, vector, params["content_key"], params["search_text"]))

    def insert_learnings(self, items: Sequence[tuple[Learning, np.ndarray, LearningLinks]]) -> None:
        """Write new learnings with their nodes and edges in one transaction.

        A batch (two or more, on a local Kùzu file): the nodes with one ``LOAD FROM`` statement,
        the anchors with one MERGE per label and each edge table's edges with one statement
        (:mod:`graphmem.store.copy`); nothing in it is a COPY once every edge table it writes
        holds edges (the first edges of a table are COPYed, see :meth:`_rel_seeded`), so its
        commit goes to the write-ahead log without the checkpoint a COPY forces. One learning:
        one CREATE for the node and one per edge (primary-key lookups).
        """
        if not items:
            return
        batch = len(items) >= 2 and self.can_copy()
        rows = []
        for learning, embedding, _ in items:
            params = learning_params(learning)
            params["embedding"] = np.asarray(embedding, dtype=np.float32) if batch else db_floats(embedding)
            rows.append(params)
        entries = [(learning.id, links, learning.created_at, learning.user_id) for learning, _, links in items]
        with self.transaction():
            if batch:
                self._load_nodes("Learning", rows)
                self._copy_links(entries)
            elif len(rows) == 1:
                self._insert_one(rows[0], entries[0])
            else:  # several on a store that cannot COPY (Bolt): a CREATE per node, then the edges
                props = ", ".join(f"{p}: ${p}" for p in rows[0])
                for params in rows:
                    self.write(f"CREATE (l:Learning {{{props}}})", params)
                self._link_many(entries, new=True)
            for (learning, embedding, _), params in zip(items, rows):
                self.on_commit(functools.partial(self._committed, learning, embedding, params["content_key"],
                                                 params["search_text"]))

    def _insert_one(self, params: dict[str, Any], entry: tuple[str, LearningLinks, datetime, str]) -> None:
        """Inside a transaction: CREATE one new learning (``params``: its properties, with or
        without ``embedding``) with its edges."""
        props = ", ".join(f"{p}: ${p}" for p in params)
        if self.can_copy() and not self._rels_seeded([entry]):  # an edge table's first edges: COPYed
            self.write(f"CREATE (l:Learning {{{props}}})", params)
            self._copy_links([entry])
        else:
            self._create_linked(props, params, entry)  # one statement for the node and its anchors

    def _create_linked(self, props: str, params: dict[str, Any], entry: tuple[str, LearningLinks, datetime, str]) -> None:
        """Inside a transaction: CREATE one new learning, its edges to its anchors (merged) and its
        co-occurrence counts (RELATED, once that table holds edges) in one statement (a statement
        costs ~1-3 ms of CPU whatever it writes); its objective and source event edges as in
        :meth:`_link_many`."""
        ident, links, when, user_id = entry
        clauses = [f"CREATE (l:Learning {{{props}}})"]
        values = dict(params)
        bound = ["l"]
        anchor_of: dict[tuple[str, str], str] = {}
        for kind, (rel, label) in _ANCHOR_REL.items():
            for name in dict.fromkeys(_named(links, kind)):
                var = f"anchor{len(clauses)}"
                on_create = _ANCHOR_MERGE[kind].split(" ON CREATE SET ", 1)[1]
                on_create = re.sub(r"\b[teo]\.", f"{var}.", on_create).replace("r.ts", "$anchor_ts")
                clauses.append(f"WITH {', '.join(bound)} MERGE ({var}:{label} {{name: ${var}}}) ON CREATE SET {on_create} "
                               f"CREATE (l)-[:{rel}]->({var})")
                values[var] = name
                bound.append(var)
                anchor_of[(label, name)] = var
        if len(clauses) > 1:
            values["anchor_ts"] = to_db_time(when)
        related = Counter(_cooccurring(links.topics, links.entities))
        if related and all((ka, a) in anchor_of and (kb, b) in anchor_of and self._rel_seeded("RELATED", ka, kb)
                           for ka, a, kb, b in related):
            values["related_user"] = user_id
            for i, ((ka, a, kb, b), weight) in enumerate(related.items()):
                e = f"related{i}"
                clauses.append(f"WITH {', '.join(bound)} MERGE ({anchor_of[(ka, a)]})-[{e}:RELATED {{user_id: $related_user}}]->"
                               f"({anchor_of[(kb, b)]}) ON CREATE SET {e}.weight = ${e} ON MATCH SET {e}.weight = {e}.weight + ${e}")
                values[e] = int(weight)
            related = Counter()
        if self._joining and not (links.objective_id or links.source_event_id or related) and self.can_copy():
            self._hold(f"learning:{ident}", " ".join(clauses), values)  # the summary bump joins it
            return
        self.write(" ".join(clauses), values)
        if links.objective_id or links.source_event_id:
            rest = LearningLinks(objective_id=links.objective_id, source_event_id=links.source_event_id)
            self._link_many([(ident, rest, when, user_id)], new=True)
        if related:
            self._relate(Counter((user_id, *p) for p, w in related.items() for _ in range(w)), copy_new=True)

    def _load_nodes(self, label: str, rows: Sequence[dict[str, Any]]) -> dict[Any, int]:
        """Inside a transaction: CREATE ``label`` nodes from ``rows`` with one LOAD FROM statement
        (:func:`graphmem.store.copy.load_nodes`); returns their offsets by id, which the edge
        writes of the same transaction use (:meth:`_fresh_offsets`)."""
        try:
            offsets = load_nodes(self._conn_main, label, self._table_columns_of(label), rows)
        except UnicodeEncodeError as e:  # Arrow refuses what check_db_params refuses for statements
            raise InvalidInputError(f"a value for the database ({label}) contains a lone surrogate, which is "
                                    "not valid Unicode text; nothing was written") from e
        except RuntimeError as e:
            raise StoreError(f"write failed: {e}") from e
        fresh: dict[str, tuple[int, dict[Any, int]]] = self.__dict__.setdefault("_fresh_nodes", {})
        serial = getattr(self, "_tx_serial", 0)
        old = fresh.get(label)
        if old is not None and old[0] == serial:  # a second batch in the same transaction
            offsets = {**old[1], **offsets}
        fresh[label] = (serial, offsets)
        return offsets

    def _fresh_offsets(self, label: str) -> dict[Any, int] | None:
        """The offsets by id of the ``label`` nodes created by :meth:`_load_nodes` in the current
        transaction (None if none were)."""
        got = self.__dict__.get("_fresh_nodes", {}).get(label)
        if got is None or got[0] != getattr(self, "_tx_serial", 0) or not self.in_transaction():
            return None
        return got[1]

    def _new_edges(self, rel: str, source: tuple[str, str], target: tuple[str, str],
                   pairs: Sequence[tuple[str, str]]) -> None:
        """Inside a transaction: ``rel`` edges from nodes created in it (``source``: label, key
        property) to existing ``target`` nodes (label, key property), one per distinct pair.

        The first edges a table gets are COPYed (:meth:`_rel_seeded`); later ones are one
        LOAD FROM statement that finds the new nodes by offset, or, for nodes not created that way, one CREATE per
        edge (primary-key lookups)."""
        if not pairs:
            return
        (slabel, skey), (tlabel, tkey) = source, target
        if not self._rel_seeded(rel, slabel, tlabel):
            self.copy_rows(rel, edge_table(pairs), f"(from='{slabel}', to='{tlabel}')")
            self._mark_seeded(rel, slabel, tlabel)
            return
        offsets = self._fresh_offsets(slabel)
        if offsets is not None and skey == "id" and all(a in offsets for a, _ in pairs):
            try:
                load_edges(self._conn_main, rel, (slabel, offsets), target, pairs)
            except UnicodeEncodeError as e:
                raise InvalidInputError(f"a {rel} edge names a value with a lone surrogate; nothing was written") from e
            except RuntimeError as e:
                raise StoreError(f"write failed: {e}") from e
            return
        one = f"MATCH (a:{slabel} {{{skey}: $s}}), (b:{tlabel} {{{tkey}: $d}}) CREATE (a)-[:{rel}]->(b) RETURN count(*) AS n"
        for a, b in dict.fromkeys(pairs):
            if int(self.write(one, {"s": a, "d": b})[0]["n"]) != 1:
                raise StoreError(f"write failed: {rel} edge {a!r} -> {b!r} found no end node")

    def can_copy(self) -> bool:
        """Whether batch writes may use COPY (a local Kùzu connection; not a Bolt engine)."""
        return isinstance(getattr(self, "_conn_main", None), kuzu.Connection)

    def _table_columns_of(self, label: str) -> list[tuple[str, str]]:
        """(name, Kùzu type) of a table's columns in order (cached: the schema is fixed once open)."""
        cache: dict[str, list[tuple[str, str]]] | None = getattr(self, "_table_columns", None)
        if cache is None:
            cache = {}
            self._table_columns = cache
        if label not in cache:
            cache[label] = [(str(r["name"]), str(r["type"])) for r in self.read(f"CALL table_info('{label}') RETURN name, type")]
        return cache[label]

    def copy_rows(self, table_name: str, table: pa.Table, options: str = "") -> None:
        """COPY an Arrow table inside the caller's write transaction (StoreError on failure)."""
        try:
            copy_into(self._conn_main, table_name, table, options)
        except RuntimeError as e:
            raise StoreError(f"write failed: {e}") from e

    def _copy_links(self, entries: Sequence[tuple[str, LearningLinks, datetime, str]]) -> None:
        """Inside a transaction: the anchors of new learnings with one MERGE statement per label,
        and their edges with one statement per relationship table (``_link_many``'s graph):
        :meth:`_new_edges`."""
        anchors: dict[str, dict[str, Any]] = {kind: {} for kind in _ANCHOR_MERGE}
        pairs: dict[str, list[tuple[str, str]]] = {kind: [] for kind in _ANCHOR_MERGE}
        rest: list[tuple[str, LearningLinks, datetime, str]] = []
        related: Counter[tuple[str, str, str, str, str]] = Counter()
        for ident, links, when, user_id in entries:
            ts = to_db_time(when)
            named = {"tool": [links.tool] if links.tool else [], "topic": links.topics, "entity": links.entities,
                     "objective_type": [links.objective_type] if links.objective_type else []}
            for kind, values in named.items():
                for name in values:
                    anchors[kind].setdefault(name, ts)
                    pairs[kind].append((ident, name))
            if links.objective_id or links.source_event_id:
                rest.append((ident, LearningLinks(objective_id=links.objective_id, source_event_id=links.source_event_id), when, user_id))
            related.update((user_id, *p) for p in _cooccurring(links.topics, links.entities))
        for kind, cypher in _ANCHOR_MERGE.items():
            if anchors[kind]:
                self.write(cypher, {"rows": [{"name": n, "ts": ts} for n, ts in anchors[kind].items()]})
            if pairs[kind]:
                rel, target = _ANCHOR_REL[kind]
                self._new_edges(rel, ("Learning", "id"), (target, "name"), pairs[kind])
        if rest:
            self._link_many(rest)
        self._relate(related, copy_new=True)  # the anchors were merged above

    def _link(self, learning_id: str, links: LearningLinks, when: datetime, user_id: str) -> None:
        self._link_many([(learning_id, links, when, user_id)])

    def _link_many(self, entries: Sequence[tuple[str, LearningLinks, datetime, str]], *, new: bool = False) -> None:
        """MERGE the anchor nodes and the learnings' edges to them: one statement per edge type.

        Entries are (learning id, links, when, owner's user id); co-occurrence (RELATED) is
        counted per owner. ``new``: the learnings were created in this transaction (no edges
        yet), so a few edges are CREATEd instead of MERGEd.
        """
        edges: dict[str, list[dict[str, Any]]] = {k: [] for k in _LINK_CYPHER}
        pairs: Counter[tuple[str, str, str, str, str]] = Counter()
        for ident, links, when, user_id in entries:
            ts = to_db_time(when)
            if links.tool:
                edges["tool"].append({"id": ident, "name": links.tool, "ts": ts})
            edges["topic"] += [{"id": ident, "name": t, "ts": ts} for t in links.topics]
            edges["entity"] += [{"id": ident, "name": e, "ts": ts} for e in links.entities]
            if links.objective_type:
                edges["objective_type"].append({"id": ident, "name": links.objective_type, "ts": ts})
            if links.objective_id:
                edges["objective"].append({"id": ident, "name": links.objective_id, "ts": ts})
            if links.source_event_id:
                edges["event"].append({"id": ident, "name": links.source_event_id, "ts": ts})
            pairs.update((user_id, *p) for p in _cooccurring(links.topics, links.entities))
        for kind, rows in edges.items():
            if new:
                rows = list({(r["id"], r["name"]): r for r in rows}.values())  # each edge once
            self._write_rows(_LINK_CYPHER[kind], (_NEW_LINK_ONE if new else _LINK_ONE)[kind], rows)
        self._relate(pairs, copy_new=True)  # the anchors were merged above

    def _write_rows(self, many: str, one: str, rows: list[dict[str, Any]]) -> None:
        """Write ``rows`` with the UNWIND statement ``many`` (one scan of the node table), or
        with ``one`` per row (primary-key lookups) when they are few for the file's size."""
        if not rows:
            return
        if len(rows) <= max(_PER_ROW_MIN, len(self.learning_catalog) // 500):
            used = set(re.findall(r"\$(\w+)", one))  # Kùzu refuses parameters a statement does not use
            for row in rows:
                self.write(one, {k: v for k, v in row.items() if k in used})
        else:
            self.write(many, {"rows": rows})

    def _relate(self, pairs: Counter[tuple[str, str, str, str, str]], *, copy_new: bool = False) -> None:
        """Add co-occurrence counts of topics and entities (RELATED edges, one per owner and
        pair, ``user_id`` = the learnings' owner): one statement per label pair. ``copy_new``
        (every named anchor exists): a label pair with no edge yet gets its edges by one COPY."""
        by_labels: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for (user, ka, a, kb, b), weight in pairs.items():
            by_labels.setdefault((ka, kb), []).append({"a": a, "b": b, "w": weight, "u": user})
        for (ka, kb), rows in by_labels.items():
            if copy_new and self.can_copy() and not self._rel_seeded("RELATED", ka, kb):  # none yet: all new
                self.copy_rows("RELATED", pa.table({"from": [r["a"] for r in rows], "to": [r["b"] for r in rows],
                                                    "weight": [int(r["w"]) for r in rows],
                                                    "user_id": [r["u"] for r in rows]}),
                               f"(from='{ka}', to='{kb}')")
                self._mark_seeded("RELATED", ka, kb)
                continue
            many = (f"UNWIND $rows AS r MATCH (a:{ka} {{name: r.a}}), (b:{kb} {{name: r.b}}) "
                    "MERGE (a)-[e:RELATED {user_id: r.u}]->(b) ON CREATE SET e.weight = r.w ON MATCH SET e.weight = e.weight + r.w")
            if len(rows) > _PER_ROW_MIN:  # topics and entities are few next to learnings: one join
                self.write(many, {"rows": rows})
            else:
                self._write_rows(many, _one_row(many), rows)

    def _rel_seeded(self, rel: str, source: str, target: str) -> bool:
        """Whether the edge table ``rel`` (between these labels) holds an edge (cached once true).

        Kùzu 0.11.3 stores the first edges of an edge table written by CREATE/MERGE statements
        with full-size uncompressed offset columns (~1 MB each, four per table: 4.2 MB for a few
        dozen edges), while edges first written by a COPY, and any written after them, take a few
        pages: so the first edges of each table are COPYed."""
        seeded = self._seeded()
        key = (rel, source, target)
        if key not in seeded and self.read(f"MATCH (:{source})-[r:{rel}]->(:{target}) RETURN 1 AS x LIMIT 1"):
            seeded.add(key)
        return key in seeded

    def _mark_seeded(self, rel: str, source: str, target: str) -> None:
        """Remember that ``rel`` holds edges once the current transaction commits."""
        self.on_commit(lambda: self._seeded().add((rel, source, target)))

    def _seeded(self) -> set[tuple[str, str, str]]:
        seeded: set[tuple[str, str, str]] | None = getattr(self, "_seeded_rels", None)
        if seeded is None:
            seeded = set()
            self._seeded_rels = seeded
        return seeded

    def _rels_seeded(self, entries: Sequence[tuple[str, LearningLinks, datetime, str]]) -> bool:
        """Whether every anchor edge table these new learnings write to holds edges already."""
        for kind, (rel, target) in _ANCHOR_REL.items():
            if any(_named(links, kind) for _, links, _, _ in entries) and not self._rel_seeded(rel, "Learning", target):
                return False
        return True

    def add_links(self, learning_id: str, links: LearningLinks) -> None:
        """Add association edges to an existing learning (used when a merge brings new ones)."""
        learning = self.get_learning(learning_id)
        with self.transaction():
            self._link(learning_id, links, learning.updated_at, learning.user_id)

    def save_learning(self, learning: Learning, embedding: np.ndarray | None = None) -> None:
        """Overwrite every scalar property of an existing learning (and its embedding if given)."""
        params = learning_params(learning)
        sets = _SET_ALL + ", l.content_key = $content_key, l.search_text = $search_text"
        if embedding is not None:
            params["embedding"] = db_floats(embedding)
            sets += ", l.embedding = $embedding"
        rows = self.write(f"MATCH (l:Learning {{id: $id}}) SET {sets} RETURN l.id AS id", params)
        if not rows:
            raise NotFoundError(f"no learning with id {learning.id!r}")
        key = params["content_key"]
        self.on_commit(lambda: self._committed(learning, embedding, key))

    def _committed(self, learning: Learning, embedding: np.ndarray | None, key: str, text: str | None = None) -> None:
        self.learning_catalog.upsert(learning, embedding, key, text)
        self._remember(learning)
        self._dirty().add(learning.id)

    def _dirty(self) -> set[str]:
        dirty: set[str] | None = getattr(self, "_dirty_ids", None)
        if dirty is None:
            dirty = set()
            self._dirty_ids = dirty
        return dirty

    def _from_loaded(self, learning_id: str) -> Learning | None:
        """The learning as read on open, if it has not been written since."""
        index: dict[str, int] | None = getattr(self, "_loaded_index", None)
        if not index or learning_id in self._dirty():
            return None
        i = index.get(learning_id)
        if i is None:
            return None
        memo: dict[str, Learning] | None = getattr(self, "_loaded_models", None)
        if memo is None or getattr(self, "_loaded_models_of", None) is not index:
            memo = {}
            self._loaded_models, self._loaded_models_of = memo, index
        model = memo.get(learning_id)
        if model is None:  # built once from the Arrow row (~0.1 ms), then copied (~0.01 ms)
            rows = self._loaded_rows
            model = learning_from_row({name: rows.column(name)[i].as_py() for name in LEARNING_PROPS})
            if len(memo) >= self.CACHE_SIZE:
                memo.clear()
            memo[learning_id] = model
        return _copy(model)

    def get_learning(self, learning_id: str) -> Learning:
        """One learning by id; NotFoundError if there is none."""
        if not self._tx_depth:
            cached = self._cache().get(learning_id)
            if cached is not None:
                return _copy(cached)
            loaded = self._from_loaded(learning_id)
            if loaded is not None:
                return loaded
        rows = self.read(f"MATCH (l:Learning {{id: $id}}) RETURN {_RETURN}", {"id": learning_id})
        if not rows:
            raise NotFoundError(
                f"no learning with id {learning_id!r}; list ids with Memory.learnings() or `graphmem list`"
            )
        learning = learning_from_row(rows[0])
        if not self._tx_depth:
            self._remember(learning)
        return learning

    def get_learnings(self, ids: Sequence[str]) -> list[Learning]:
        """Learnings by id, in the order given (missing ids skipped); cached rows first."""
        out = []
        for ident in ids:
            try:
                out.append(self.get_learning(ident))
            except NotFoundError:
                continue
        return out

    def learning_embedding(self, learning_id: str) -> np.ndarray:
        """The stored embedding of one learning."""
        rows = self.read("MATCH (l:Learning {id: $id}) RETURN l.embedding AS e", {"id": learning_id})
        if not rows:
            raise NotFoundError(f"no learning with id {learning_id!r}")
        return np.asarray(rows[0]["e"], dtype=np.float32)

    def find_learnings(
        self,
        *,
        user_id: str | None = None,
        include_shared: bool = True,
        status: str | None = None,
        tier: str | None = None,
        tool: str | None = None,
        topic: str | None = None,
        entity: str | None = None,
        kind: str | None = None,
        objective_type: str | None = None,
        limit: int | None = None,
    ) -> list[Learning]:
        """Learnings matching every filter given, newest first."""
        match = "MATCH (l:Learning)"
        where: list[str] = []
        params: dict[str, Any] = {}
        if tool is not None:
            match += "-[:ABOUT_TOOL]->(:Tool {name: $tool})"
            params["tool"] = tool
        if topic is not None:
            match += ", (l)-[:ABOUT_TOPIC]->(:Topic {name: $topic})"
            params["topic"] = topic
        if entity is not None:
            match += ", (l)-[:MENTIONS]->(:Entity {name: $entity})"
            params["entity"] = entity
        if user_id is not None:
            where.append("(l.user_id = $user" + (" OR l.shared = true)" if include_shared else ")"))
            params["user"] = user_id
        for name, value in (("status", status), ("tier", tier), ("kind", kind), ("objective_type", objective_type)):
            if value is not None:
                where.append(f"l.{name} = ${name}")
                params[name] = value
        query = match + (" WHERE " + " AND ".join(where) if where else "")
        query += f" RETURN {_RETURN} ORDER BY l.created_at DESC"
        if limit is not None:
            query += " LIMIT $limit"
            params["limit"] = int(limit)
        return [learning_from_row(r) for r in self.read(query, params)]

    def count_learnings(self) -> int:
        """How many Learning nodes there are."""
        return int(self.read("MATCH (l:Learning) RETURN count(l) AS n")[0]["n"])

    def load_learning_catalog(self) -> None:
        """Rebuild the in-memory learning catalog from the database (columnar, in chunks)."""
        from graphmem.store.catalog_load import load_learning_catalog

        self._loaded_rows = load_learning_catalog(self, _RETURN)  # rows get_learning reads (Arrow)

    def log_transition(self, transition: Transition) -> None:
        """Persist one lifecycle change as a Transition node linked from its learning."""
        data = transition.model_dump()
        data["created_at"] = to_db_time(transition.created_at)
        props = ", ".join(f"{k}: ${k}" for k in data)
        self.write(
            f"MATCH (l:Learning {{id: $learning_id}}) CREATE (l)-[:HAS_TRANSITION]->(:Transition {{{props}}})",
            data,
        )

    def transitions(self, learning_id: str | None = None, *, limit: int = 1000) -> list[Transition]:
        """Logged transitions, oldest first (of one learning, or of all)."""
        where = "WHERE t.learning_id = $id " if learning_id else ""
        rows = self.read(
            f"MATCH (t:Transition) {where}RETURN t.id AS id, t.learning_id AS learning_id, t.field AS field, "
            "t.old AS old, t.new AS new, t.reason AS reason, t.version AS version, t.created_at AS created_at "
            "ORDER BY t.created_at, t.version LIMIT $limit",
            {"id": learning_id, "limit": int(limit)} if learning_id else {"limit": int(limit)},
        )
        return [Transition.model_validate({**r, "created_at": from_db_time(r["created_at"])}) for r in rows]
