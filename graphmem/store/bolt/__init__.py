"""graphmem's store on a graph server that speaks Bolt (ArcadeDB, Neo4j, Memgraph), through the
official ``neo4j`` Python driver (``pip install graphmem[bolt]``).

``Memory("bolt://127.0.0.1:7687/mydb", bolt_auth=("user", "password"))`` opens it; the path of
the URL names the database. The store is the Kùzu store's mixins over :class:`BoltBase`
(:mod:`.store`), with the Kùzu-only Cypher rewritten per statement (:mod:`.dialect`) and the
schema kept in Python (:mod:`.schema`). The base is split by concern: sessions, statements, commits
and conflict replays (:mod:`.connection`), mirror freshness across processes (:mod:`.freshness`),
analysts' engine-dialect Cypher (:mod:`.cypher`), the engine's own indexes (:mod:`.engine_index`).

Mirrors. graphmem ranks from in-memory mirrors of the learnings (vectors, filter columns, BM25
statistics, anchors), loaded from the store. On Bolt they are kept, so ranking is Kùzu's: the
engine's vector and full-text indexes are reachable (:mod:`.engine_index`, behind a ``SHOW
INDEXES`` check) but not on the ranking path, for the reasons and figures in docs/scale-out.md
(ArcadeDB's Cypher cannot create them, its vector index cannot filter by user inside the search,
and a query through either took longer than a whole context() from the mirrors). Several processes may write one
database, so every write transaction increments one of 16 counter nodes
``(:Meta {key: 'generation:K'}).n`` (a store picks its K at random) in the same transaction, and the
write counter is their sum; a transaction that changed what the mirrors hold also writes a change
record naming the rows it changed (:mod:`.changes`). Before ranking and before reads outside a
transaction a store reads the counters (one round trip; ``store.freshness_seconds``, default 0,
spaces the checks out) and, when another process moved them, re-reads only the rows the change
records name (a full reload when the records were pruned or a change is not row by row).

ArcadeDB dialect notes (ArcadeDB 26.10.2 over Bolt, neo4j driver 6.4; probed by
``benchmarks/bolt_probe.py``):

- Works as in Neo4j: CREATE, MERGE (with ON CREATE/ON MATCH SET), UNWIND $rows with map rows,
  list and map parameters, ``SET n += $map``, OPTIONAL MATCH, count/collect, list slices
  ``ids[0..2]``, ``IN``, list comprehensions, list ``+``, coalesce, CASE, EXISTS { } and pattern
  predicates, ``labels(n)``, ``type(r)``, ``[:A|B]``, UNION ALL, FOREACH, CALL { } subqueries,
  DETACH DELETE, explicit transactions with rollback, 2**62 integers, non-ASCII text.
- ``CREATE CONSTRAINT name IF NOT EXISTS FOR (n:L) REQUIRE n.p IS UNIQUE`` and
  ``CREATE INDEX name IF NOT EXISTS FOR (n:L) ON (n.p)`` work (``SHOW INDEXES`` lists them).
- Datetimes: an aware datetime parameter comes back as ``neo4j.time.DateTime`` with UTC, a naive
  one as a DateTime without zone; both compare and order together. graphmem sends aware UTC and
  reads back naive UTC ``datetime`` (Kùzu's form), see :mod:`.dialect`.
- Float lists store and return as lists of floats; ``vector.similarity.cosine`` exists.
- ``db.index.fulltext.queryNodes`` and ``db.index.vector.queryNodes`` exist, on indexes made with
  SQL (``CREATE INDEX ON L (p) FULL_TEXT`` / ``LSM_VECTOR``, e.g. through the HTTP API); Cypher's
  ``CREATE FULLTEXT INDEX`` / ``CREATE VECTOR INDEX`` fail ("Only standard, RANGE and TEXT index
  types are supported"); the index names are ``Type[property]``.
- Kùzu functions graphmem used (list_contains, list_slice, list_append, list_intersect,
  CAST(... AS STRING[]), label(), contains(), offset(id())) are rewritten by :mod:`.dialect`.
- A query on a label with no node yet returns no column names (taken from the RETURN clause).
"""

from __future__ import annotations

from graphmem.store.bolt.base import BoltBase, is_bolt_url, split_url
from graphmem.store.bolt.store import BoltOverrides, bolt_store_class, open_bolt_store

__all__ = ["BoltBase", "BoltOverrides", "bolt_store_class", "is_bolt_url", "open_bolt_store", "split_url"]
