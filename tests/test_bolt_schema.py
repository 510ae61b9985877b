"""Schema versions on a Bolt store: an older database is migrated on open, a newer one refused.
Skipped when neo4j / arcadedb_embedded are missing or GRAPHMEM_SKIP_BOLT=1."""

from __future__ import annotations

from typing import Any

import pytest

from graphmem import HashEmbedder
from graphmem.errors import SchemaVersionError
from graphmem.store import migrations
from graphmem.store.bolt import open_bolt_store
from graphmem.store.bolt.schema import migration_steps
from graphmem.store.bolt.testing import ArcadeServer

pytestmark = pytest.mark.bolt


def _open(url: str, auth: tuple[str, str]) -> Any:
    emb = HashEmbedder()
    return open_bolt_store(url, dim=emb.dim, embedder_name=emb.name, auth=auth)


def _version(store: Any) -> int:
    return int(store.read("MATCH (m:Meta {key: 'schema_version'}) RETURN m.value AS v")[0]["v"])


def test_migration_steps_fill_defaults_and_translate_data_statements() -> None:
    steps = dict(migration_steps(8, 3))
    assert sorted(steps) == [m.version for m in migrations.available() if m.version > 3]
    assert any("SET n.pending = []" in s for s in steps[4])  # a column added with DEFAULT []
    assert any("RELATED" in s and "count(*)" in s for s in steps[6])  # 006 rebuilds RELATED from anchors
    assert not migration_steps(8, migrations.latest_version())


def test_an_older_database_is_migrated_on_open(bolt_url: str, arcade: ArcadeServer) -> None:
    store = _open(bolt_url, arcade.auth)
    try:
        with store.transaction():
            store.write("CREATE (:Learning {id: 'l1', user_id: 'u'}), (:Topic {name: 'a'}), (:Topic {name: 'b'})")
            store.write("MATCH (l:Learning {id: 'l1'}), (a:Topic {name: 'a'}), (b:Topic {name: 'b'}) "
                        "CREATE (l)-[:ABOUT_TOPIC]->(a), (l)-[:ABOUT_TOPIC]->(b), (a)-[:RELATED {weight: 99}]->(b)")
            store.write("CREATE (:Summary {key: 'old'})")  # written before `pending` existed
            store.write("MATCH (m:Meta {key: 'schema_version'}) SET m.value = '3'")
    finally:
        store.close()
    store = _open(bolt_url, arcade.auth)
    try:
        assert _version(store) == migrations.latest_version()
        assert store.read("MATCH (s:Summary {key: 'old'}) RETURN s.pending AS p")[0]["p"] == []
        rel = store.read("MATCH (a:Topic)-[r:RELATED]->(b:Topic) RETURN a.name AS a, b.name AS b, r.weight AS w, r.user_id AS u")
        assert rel == [{"a": "a", "b": "b", "w": 1, "u": "u"}]  # rebuilt from the anchors by the 006 data migration
    finally:
        store.close()


def test_a_newer_database_is_refused(bolt_url: str, arcade: ArcadeServer) -> None:
    store = _open(bolt_url, arcade.auth)
    try:
        store.write("MATCH (m:Meta {key: 'schema_version'}) SET m.value = $v", {"v": str(migrations.latest_version() + 1)})
    finally:
        store.close()
    with pytest.raises(SchemaVersionError):
        _open(bolt_url, arcade.auth)


def test_analyst_writes_on_bolt(bolt_url: str, arcade: ArcadeServer) -> None:
    from graphmem import Memory
    from graphmem.errors import CypherError
    from tests.conftest import offline_llm

    with Memory(bolt_url, user="alice", bolt_auth=arcade.auth, embedder=HashEmbedder(), llm=offline_llm(), admin=True) as mem:
        ident = mem.add_learning("Dana at Acme wants bullet points", tool="send_email").id
        rows = mem.cypher("MATCH (l:Learning {id: $id}) SET l.confidence = 0.42 RETURN count(l) AS n",
                          {"id": ident}, scope="all", write=True)
        assert rows == [{"n": 1}]
        assert mem.get_learning(ident).confidence == pytest.approx(0.42)  # the mirrors were re-read
        with pytest.raises(CypherError):  # a write without write=True
            mem.cypher("MATCH (l:Learning) SET l.confidence = 0.1", scope="all")
        with pytest.raises(CypherError, match="Meta"):
            mem.cypher("MATCH (m:Meta {key: 'dim'}) SET m.value = '7'", scope="all", write=True)
        assert mem.store.read("MATCH (m:Meta {key: 'dim'}) RETURN m.value AS v")[0]["v"] == str(mem.embedder.dim)
        with pytest.raises(CypherError):
            mem.cypher("DROP INDEX gm_learning_user_id", scope="all", write=True)
        with pytest.raises(CypherError):
            mem.cypher("MATCH (l:Learning) RETURN l; MATCH (n) DETACH DELETE n", scope="all", write=True)
        assert mem.get_learning(ident).confidence == pytest.approx(0.42)
