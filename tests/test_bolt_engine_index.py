"""The engine's own full-text and vector indexes on a Bolt store (ArcadeDB): found by the
capability check (``SHOW INDEXES``), queried through ``db.index.*.queryNodes``; without them the
store says how to create one. Skipped when neo4j / arcadedb_embedded are missing or GRAPHMEM_SKIP_BOLT=1."""

from __future__ import annotations

import numpy as np
import pytest

from graphmem import HashEmbedder, Memory
from graphmem.errors import StoreError
from graphmem.llm import OfflineLLM
from graphmem.store.bolt.engine_index import find_indexes
from graphmem.store.bolt.testing import ArcadeServer
from graphmem.store.text import search_text

pytestmark = pytest.mark.bolt

TEXTS = ["rotate the api keys every week", "check the vendor ledger before paying an invoice",
         "retry the payment gateway with backoff", "the api gateway needs a new certificate"]


def test_find_indexes_reads_neo4j_style_rows() -> None:
    rows = [{"name": "other", "type": "FULLTEXT", "labelsOrTypes": ["Event"], "properties": ["content"], "state": "ONLINE"},
            {"name": "ft", "type": "FULLTEXT", "labelsOrTypes": ["Learning"], "properties": ["content", "search_text"], "state": "ONLINE"},
            {"name": "vec", "type": "VECTOR", "labelsOrTypes": ["Learning"], "properties": ["vec"], "state": "POPULATING"},
            {"name": "Learning[id]", "type": "RANGE", "labelsOrTypes": ["Learning"], "properties": ["id"]}]
    found = find_indexes(rows)
    assert (found.fulltext, found.fulltext_property) == ("ft", "search_text")
    assert found.vector is None  # not online yet


def test_engine_indexes_answer_when_the_database_has_them(bolt_url: str, arcade: ArcadeServer) -> None:
    emb = HashEmbedder()
    db = bolt_url.rsplit("/", 1)[1]
    with Memory(bolt_url, user="alice", embedder=emb, llm=OfflineLLM(), bolt_auth=arcade.auth) as mem:
        ids = [mem.add_learning(t).id for t in TEXTS]
        store = mem.store
        assert store.engine_indexes().fulltext is None and store.engine_indexes().vector is None
        with pytest.raises(StoreError, match="FULL_TEXT"):
            store.fulltext_learnings("api keys", 5)
        with pytest.raises(StoreError, match="no vector index"):
            store.vector_learnings([0.0] * emb.dim, 5)
        # ArcadeDB's Cypher cannot create these indexes: SQL through its HTTP API does
        arcade.sql(db, "CREATE PROPERTY Learning.search_text IF NOT EXISTS STRING")
        arcade.sql(db, "CREATE INDEX IF NOT EXISTS ON Learning (search_text) FULL_TEXT")
        # graphmem stores the embedding as bytes: a vector index needs a float-list copy
        vectors = emb.embed(TEXTS).astype(np.float32)
        with store.transaction():
            for ident, v in zip(ids, vectors):
                store.write("MATCH (l:Learning {id: $id}) SET l.vec = $v", {"id": ident, "v": [float(x) for x in v]})
        arcade.sql(db, "CREATE PROPERTY Learning.vec IF NOT EXISTS ARRAY_OF_FLOATS")
        arcade.sql(db, f'CREATE INDEX IF NOT EXISTS ON Learning (vec) LSM_VECTOR METADATA {{"dimensions": {emb.dim}, "similarity": "COSINE"}}')
        found = store.engine_indexes(refresh=True)
        assert found.fulltext_property == "search_text" and found.vector_property == "vec"

        hits = store.fulltext_learnings(search_text("api keys"), 10)
        assert hits and hits[0][0] == ids[0]
        assert {i for i, _ in hits} <= {ids[0], ids[3]}  # only learnings with those words
        assert store.fulltext_learnings("   ", 10) == []

        query = emb.embed(["rotate the api keys every week"])[0]
        near = store.vector_learnings([float(x) for x in query], 2)
        exact = [ids[i] for i in np.argsort(-(vectors @ query))[:2]]
        assert near[0][0] == exact[0]  # the learning itself first
        assert len(near) == 2
