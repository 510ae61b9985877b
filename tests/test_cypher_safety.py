"""Analyst Cypher: read-only cannot write, files stay out of reach, users see only their own view."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from graphmem import CypherError, HashEmbedder, InvalidInputError, Memory
from tests.conftest import offline_llm


def _count(mem: Memory, label: str = "Learning") -> int:
    return int(mem.cypher(f"MATCH (n:{label}) RETURN count(n) AS n", scope="all")[0]["n"])


@pytest.fixture(scope="module")
def filled_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Alice's file, written once per module; each test opens a copy of it."""
    path = tmp_path_factory.mktemp("filled") / "memory.kuzu"
    with Memory(path, user="alice", embedder=HashEmbedder(), llm=offline_llm()) as mem:
        mem.add_learning("Alice's secret: the launch code is 1234", tool="send_email", entities=["Acme"],
                         topics=["launch"])
        mem.add_learning("Alice prefers short emails", tool="send_email", topics=["email style"])
        mem.record_event("tool_call", "alice called send_email about the launch", tool="send_email")
    return path


@pytest.fixture
def filled(filled_once: Path, db_path: Path, make_memory: Callable[..., Memory]) -> Memory:
    shutil.copy2(filled_once, db_path)
    return make_memory("alice")


def _reopened_count(db_path: Path) -> int:
    with Memory(db_path, user="alice", embedder=HashEmbedder()) as again:
        return _count(again)


# --- read-only cannot write --------------------------------------------------------------------
@pytest.mark.parametrize(
    "query",
    [
        "COMMIT; MATCH (n:Learning) DETACH DELETE n",
        "ROLLBACK; MATCH (n:Learning) DETACH DELETE n",
        "COMMIT; MATCH (n:Learning) SET n.content = 'gone'",
        "ROLLBACK; CREATE (:Tool {name: 'planted'})",
        "MATCH (n:Learning) RETURN n.id; MATCH (n:Learning) DETACH DELETE n",
    ],
)
def test_multi_statement_and_transaction_prefix_are_refused(filled: Memory, db_path: Path, query: str) -> None:
    before = _count(filled)
    contents = sorted(r["c"] for r in filled.cypher("MATCH (n:Learning) RETURN n.content AS c", scope="all"))
    for scope in ("user", "all"):
        with pytest.raises(CypherError):
            filled.cypher(query, scope=scope)
    assert _count(filled) == before
    assert sorted(r["c"] for r in filled.cypher("MATCH (n:Learning) RETURN n.content AS c", scope="all")) == contents
    assert _count(filled, "Tool") == 1
    filled.close()
    assert _reopened_count(db_path) == before  # durable: nothing was committed behind our back


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n:Learning) SET n.content = 'gone'",
        "CREATE (:Tool {name: 'planted'})",
        "MERGE (:Tool {name: 'planted'})",
        "MATCH (n:Learning) DETACH DELETE n",
        "MATCH (n:Learning) CREATE (n)-[:ABOUT_TOOL]->(:Tool {name: 'planted'})",
        "MATCH (n:Learning) WITH n LIMIT 1 SET n.status = 'zombie' RETURN n.id",
    ],
)
def test_writes_need_write_true(filled: Memory, query: str) -> None:
    before = _count(filled)
    for scope in ("user", "all"):
        with pytest.raises(CypherError, match="write=True"):
            filled.cypher(query, scope=scope)
    assert _count(filled) == before
    assert _count(filled, "Tool") == 1
    assert not filled.cypher("MATCH (n:Learning) WHERE n.content = 'gone' OR n.status = 'zombie' RETURN n", scope="all")


@pytest.mark.parametrize(
    "statement",
    ["COMMIT", "ROLLBACK", "BEGIN TRANSACTION", "BEGIN TRANSACTION READ ONLY", "CHECKPOINT"],
)
def test_transaction_control_is_refused(filled: Memory, statement: str) -> None:
    for write in (False, True):
        with pytest.raises(CypherError):
            filled.cypher(statement, write=write, scope="all")
    assert filled.cypher("MATCH (n:Learning) RETURN count(n) AS n", scope="all") == [{"n": 2}]


def test_copy_to_writes_no_file(filled: Memory, tmp_path: Path) -> None:
    target = tmp_path / "x.csv"
    for write in (False, True):
        with pytest.raises(CypherError, match="COPY"):
            filled.cypher(f"COPY (MATCH (l:Learning) RETURN l.content) TO '{target}'", write=write, scope="all")
    with pytest.raises(CypherError, match="COPY"):
        filled.cypher(f"COPY (MATCH (l:Learning) RETURN l.content) TO '{target}'")
    assert not target.exists()


def test_load_from_reads_no_file(filled: Memory, tmp_path: Path) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("name,password\nroot,hunter2\n", encoding="utf-8")
    queries = [
        f"LOAD FROM '{secret}' RETURN *",
        f"LOAD WITH HEADERS (name STRING, password STRING) FROM '{secret}' RETURN *",
        "LOAD FROM '/etc/passwd' (file_format='csv', header=false, delim=':') RETURN *",
        f"MATCH (l:Learning) WITH l LIMIT 1 LOAD FROM '{secret}' RETURN *",
        f"COPY Tool FROM '{secret}'",
    ]
    for query in queries:
        for write, scope in ((False, "user"), (False, "all"), (True, "all")):
            with pytest.raises(CypherError) as info:
                filled.cypher(query, write=write, scope=scope)
            assert "hunter2" not in str(info.value)


@pytest.mark.parametrize(
    "make_query",
    [
        lambda d: f"ATTACH '{d / 'other.kuzu'}' AS other (dbtype kuzu)",
        lambda d: "INSTALL json",
        lambda d: "LOAD EXTENSION json",
        lambda d: "LOAD json",
        lambda d: f"EXPORT DATABASE '{d / 'dump'}'",
        lambda d: f"IMPORT DATABASE '{d / 'dump'}'",
        lambda d: "USE other",
        lambda d: "CALL threads=1",
        lambda d: "CALL timeout=1",
        lambda d: "CALL CREATE_FTS_INDEX('Learning', 'planted_fts', ['content'])",
        lambda d: "CALL DROP_FTS_INDEX('Learning', 'learning_fts')",
        lambda d: "CALL CREATE_VECTOR_INDEX('Learning', 'planted_vec', 'embedding')",
        lambda d: "CALL clear_warnings()",
        lambda d: "CREATE MACRO planted(x) AS x + 1",
    ],
)
def test_outside_the_graph_is_refused(filled: Memory, tmp_path: Path, make_query: Callable[[Path], str]) -> None:
    query = make_query(tmp_path)
    indexes_before = filled.cypher("CALL show_indexes() RETURN *", scope="all")
    for write, force in ((False, False), (True, False), (True, True)):
        with pytest.raises(CypherError):
            filled.cypher(query, write=write, force=force, scope="all")
    with pytest.raises(CypherError):
        filled.cypher(query)
    assert not (tmp_path / "dump").exists()
    assert not (tmp_path / "other.kuzu").exists()
    assert filled.cypher("CALL show_indexes() RETURN *", scope="all") == indexes_before
    assert filled.search("launch code")  # the full-text index still answers


def test_strings_and_comments_do_not_confuse_the_checks(filled: Memory) -> None:
    rows = filled.cypher(
        "MATCH (l:Learning) // COMMIT; LOAD FROM\n WHERE l.content <> 'COMMIT; COPY x TO y' /* DROP */ "
        "RETURN count(l) AS `load`",
        scope="all",
    )
    assert rows == [{"load": 2}]
    with pytest.raises(CypherError):
        filled.cypher("MATCH (l:Learning) RETURN l.content AS x /* unterminated", scope="all")


def test_reads_still_work(filled: Memory) -> None:
    queries = [
        "MATCH (l:Learning)-[:ABOUT_TOOL]->(t:Tool) RETURN t.name AS tool, count(l) AS n",
        "OPTIONAL MATCH (l:Learning) RETURN count(l) AS n",
        "UNWIND [1, 2, 3] AS x RETURN sum(x) AS n",
        "WITH 1 AS x RETURN x AS n",
        "RETURN 1 AS n",
        "MATCH p = (l:Learning)-[*1..2]-(x) RETURN count(p) AS n",
        "MATCH (l:Learning) RETURN l.content AS c ORDER BY c DESC SKIP 1 LIMIT 1",
        "MATCH (l:Learning) WHERE EXISTS { MATCH (l)-[:ABOUT_TOPIC]->() } RETURN count(*) AS n",
        "MATCH (l:Learning) RETURN l.id AS n UNION MATCH (e:Event) RETURN e.id AS n",
        "CALL show_tables() RETURN name",
        "CALL table_info('Learning') RETURN name",
        "CALL QUERY_FTS_INDEX('Learning', 'learning_fts', 'launch') RETURN node.id AS id, score",
    ]
    for query in queries:
        for scope in ("user", "all"):
            assert filled.cypher(query, scope=scope), query
    assert filled.cypher("MATCH (l:Learning) WHERE l.content CONTAINS $w RETURN count(l) AS n", {"w": "secret"}) == [{"n": 1}]


# --- write=True keeps graphmem's bookkeeping ---------------------------------------------------
def test_write_needs_the_whole_file_scope(filled: Memory) -> None:
    with pytest.raises(InvalidInputError, match="scope='all'"):
        filled.cypher("MATCH (l:Learning) SET l.confidence = 0.9", write=True)
    filled.cypher("MATCH (l:Learning) SET l.confidence = 0.9", write=True, scope="all")
    assert {r["c"] for r in filled.cypher("MATCH (l:Learning) RETURN l.confidence AS c")} == {0.9}


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (m:Meta) DELETE m",
        "MATCH (m:Meta {key: 'dim'}) SET m.value = '3'",
        "MATCH (n) DETACH DELETE n",
        "CREATE (:Meta {key: 'planted', value: '999'})",
        "MERGE (m:Meta {key: 'embedder'}) SET m.value = 'other'",
    ],
)
def test_write_cannot_touch_meta_without_force(filled: Memory, db_path: Path, query: str) -> None:
    meta = filled.cypher("MATCH (m:Meta) RETURN m.key AS k, m.value AS v ORDER BY k", scope="all")
    learnings = _count(filled)
    with pytest.raises(CypherError, match="Meta"):
        filled.cypher(query, write=True, scope="all")
    assert filled.cypher("MATCH (m:Meta) RETURN m.key AS k, m.value AS v ORDER BY k", scope="all") == meta
    assert _count(filled) == learnings  # rolled back as a whole
    filled.close()
    assert _reopened_count(db_path) == learnings


@pytest.mark.parametrize(
    "query",
    ["DROP TABLE Meta", "DROP TABLE Learning", "ALTER TABLE Learning DROP content", "ALTER TABLE Meta ADD x INT64",
     "CREATE NODE TABLE Planted(id STRING PRIMARY KEY)"],
)
def test_schema_changes_need_force(filled: Memory, query: str) -> None:
    tables = filled.cypher("CALL show_tables() RETURN name ORDER BY name", scope="all")
    with pytest.raises(CypherError):
        filled.cypher(query)
    with pytest.raises(CypherError, match="force=True"):
        filled.cypher(query, write=True, scope="all")
    assert filled.cypher("CALL show_tables() RETURN name ORDER BY name", scope="all") == tables
    assert filled.cypher("CALL table_info('Learning') RETURN name", scope="all")


def test_force_allows_bookkeeping_repairs(filled: Memory) -> None:
    filled.cypher("MERGE (m:Meta {key: 'note'}) SET m.value = 'repaired'", write=True, force=True, scope="all")
    assert filled.cypher("MATCH (m:Meta {key: 'note'}) RETURN m.value AS v", scope="all") == [{"v": "repaired"}]
    filled.cypher("CREATE NODE TABLE Scratch(id STRING PRIMARY KEY)", write=True, force=True, scope="all")
    assert {"name": "Scratch"} in filled.cypher("CALL show_tables() RETURN name", scope="all")


# --- the per-user view --------------------------------------------------------------------------
def test_bob_sees_only_his_view(filled: Memory, make_memory: Callable[..., Memory]) -> None:
    bob = make_memory("bob")
    bob.add_learning("Bob likes long reports", tool="write_report", topics=["reports"])
    shared = filled.add_learning("Everyone: the office closes at 6", shared=True)
    leaks = [
        "MATCH (l:Learning) RETURN l.content AS x",
        "MATCH (l:Learning) RETURN l AS x",
        "MATCH (l:Learning) RETURN collect(l.content) AS x",
        "MATCH (e:Event) RETURN e.content AS x",
        "MATCH (n) RETURN n AS x",
        "MATCH (a)-[r]->(b) RETURN a AS x, r AS y, b AS z",
        "MATCH (t:Tool) RETURN t.name AS x",
        "MATCH (t:Topic) RETURN t.name AS x",
        "MATCH (e:Entity) RETURN e.name AS x",
        "CALL QUERY_FTS_INDEX('Learning', 'learning_fts', 'launch code') RETURN node.content AS x",
        "MATCH (l:Learning) WHERE l.user_id = 'alice' RETURN l.content AS x",
    ]
    for query in leaks:
        text = json.dumps(bob.cypher(query), default=str)
        for secret in ("1234", "launch", "Alice prefers", "alice called", "send_email", "Acme"):
            assert secret not in text, (query, secret)
    contents = {r["c"] for r in bob.cypher("MATCH (l:Learning) RETURN l.content AS c")}
    assert contents == {"Bob likes long reports", shared.content}
    assert bob.cypher("MATCH (l:Learning) RETURN count(l) AS n") == [{"n": 2}]
    assert bob.cypher("MATCH (l:Learning) WHERE l.user_id <> $me AND NOT l.shared RETURN count(l) AS n", {"me": "bob"}) == [{"n": 0}]
    # the whole file, when asked for
    everything = {r["c"] for r in bob.cypher("MATCH (l:Learning) RETURN l.content AS c", scope="all")}
    assert "Alice's secret: the launch code is 1234" in everything
    # and alice's view is hers
    assert "Bob likes long reports" not in json.dumps(filled.cypher("MATCH (n) RETURN n"), default=str)


def test_user_view_counts_are_the_users_own(filled: Memory, make_memory: Callable[..., Memory]) -> None:
    bob = make_memory("bob")
    bob.add_learning("Bob writes about launch plans", topics=["launch"], entities=["Zed"])
    rel = bob.cypher("MATCH (a)-[r:RELATED]-(b) RETURN a.name AS a, b.name AS b, r.weight AS w")
    assert {(r["a"], r["b"], r["w"]) for r in rel} == {("launch", "Zed", 1), ("Zed", "launch", 1)}
    tools = bob.cypher("MATCH (t:Tool) RETURN t.success_count AS s, t.error_count AS e")
    assert tools == []


def test_user_view_is_reused_until_a_write_or_another_user(filled: Memory, make_memory: Callable[..., Memory]) -> None:
    bob = make_memory("bob")
    bob.add_learning("Bob's first rule")
    count = "MATCH (l:Learning) WHERE NOT l.shared RETURN count(l) AS n"
    assert bob.cypher(count) == [{"n": 1}]
    held = filled.store._graphmem_user_view.holds  # type: ignore[attr-defined]
    assert held is not None and held[0] == "bob"
    assert bob.cypher(count) == [{"n": 1}]  # reused: same user, nothing written since
    assert filled.store._graphmem_user_view.holds == held  # type: ignore[attr-defined]
    bob.add_learning("Bob's second rule")
    assert bob.cypher(count) == [{"n": 2}]  # a write refills it
    alice_n = filled.cypher(count)[0]["n"]
    assert alice_n == len([l for l in filled.learnings(limit=1000) if not l.shared])  # another user: her own
    with pytest.raises(CypherError):
        bob.cypher("MATCH (l:Learning) RETURN l.no_such_column")
    assert filled.store._graphmem_user_view.holds is None  # type: ignore[attr-defined]  # a failure empties it
    assert bob.cypher(count) == [{"n": 2}]


def test_graphml_export_is_scoped(filled: Memory, make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    bob = make_memory("bob")
    bob.add_learning("Bob likes long reports", tool="write_report")
    mine, everything = tmp_path / "bob.graphml", tmp_path / "all.graphml"
    report = bob.export_graphml(mine)
    text = mine.read_text(encoding="utf-8")
    for secret in ("1234", "Alice prefers", "alice called", "send_email", "Acme"):
        assert secret not in text
    assert "Bob likes long reports" in text
    assert report.nodes == nx.read_graphml(mine).number_of_nodes()
    bob.export_graphml(everything, scope="all")
    assert "1234" in everything.read_text(encoding="utf-8")
    assert nx.read_graphml(everything).number_of_nodes() > report.nodes


def test_in_memory_database_has_a_user_view() -> None:
    with Memory(None, user="alice", embedder=HashEmbedder()) as alice:
        alice.add_learning("alice only")
        bob = alice.for_user("bob")
        assert bob.cypher("MATCH (l:Learning) RETURN count(l) AS n") == [{"n": 0}]
        assert bob.cypher("MATCH (l:Learning) RETURN count(l) AS n", scope="all") == [{"n": 1}]


def test_bad_scope_is_a_clear_error(filled: Memory, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="scope"):
        filled.cypher("RETURN 1", scope="everyone")
    with pytest.raises(InvalidInputError, match="scope"):
        filled.export_graphml(tmp_path / "g.graphml", scope="everyone")


# --- the CLI ---------------------------------------------------------------------------------------
def _cli(db: Path, user: str, *args: str) -> Any:
    from typer.testing import CliRunner

    from graphmem.cli import _register_groups, app

    _register_groups()
    return CliRunner().invoke(app, ["--db", str(db), "--user", user, "--embedder", "hash", *args])


def test_cli_cypher_refuses_bypasses(filled: Memory, db_path: Path, tmp_path: Path) -> None:
    before = _count(filled)
    filled.close()
    target = tmp_path / "out.csv"
    bypasses = [
        ["cypher", "COMMIT; MATCH (n:Learning) DETACH DELETE n"],
        ["cypher", "ROLLBACK; MATCH (n:Learning) DETACH DELETE n"],
        ["cypher", "--all-users", "COMMIT; MATCH (n:Learning) DETACH DELETE n"],
        ["cypher", "--all-users", "MATCH (n:Learning) SET n.content = 'gone'"],
        ["cypher", "--all-users", "CREATE (:Tool {name: 'planted'})"],
        ["cypher", "--all-users", f"COPY (MATCH (l:Learning) RETURN l.content) TO '{target}'"],
        ["cypher", "--all-users", "--write", f"COPY (MATCH (l:Learning) RETURN l.content) TO '{target}'"],
        ["cypher", "--all-users", "LOAD FROM '/etc/passwd' (file_format='csv', header=false, delim=':') RETURN *"],
        ["cypher", "--all-users", "--write", "MATCH (m:Meta) DELETE m"],
        ["cypher", "--all-users", "--write", "COMMIT; MATCH (n:Learning) DETACH DELETE n"],
        ["cypher", "--write", "MATCH (n:Learning) DETACH DELETE n"],  # a write needs --all-users
    ]
    for args in bypasses:
        out = _cli(db_path, "alice", *args)
        assert out.exit_code != 0, (args, out.output)
        assert "Traceback" not in out.output
    assert not target.exists()
    assert _reopened_count(db_path) == before
    out = _cli(db_path, "alice", "cypher", "--all-users", "--json", "MATCH (t:Tool) RETURN count(t) AS n")
    assert json.loads(out.stdout) == [{"n": 1}]


def test_cli_cypher_and_export_are_scoped(filled: Memory, db_path: Path, tmp_path: Path) -> None:
    filled.close()
    query = "MATCH (l:Learning) RETURN l.content AS c"
    out = _cli(db_path, "bob", "cypher", "--json", query)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == []
    out = _cli(db_path, "bob", "cypher", "--all-users", "--json", query)
    assert len(json.loads(out.stdout)) == 2
    mine, everything = tmp_path / "bob.graphml", tmp_path / "all.graphml"
    assert _cli(db_path, "bob", "export", "--graphml", str(mine)).exit_code == 0
    assert _cli(db_path, "bob", "export", "--graphml", str(everything), "--all-users").exit_code == 0
    assert "1234" not in mine.read_text(encoding="utf-8")
    assert "1234" in everything.read_text(encoding="utf-8")


def test_user_view_copies_vectors_when_the_query_names_them(filled: Memory) -> None:
    rows = filled.cypher("MATCH (l:Learning) RETURN l.embedding AS e")
    assert len(rows) == 2 and all(r["e"] is not None and len(r["e"]) == filled.embedder.dim for r in rows)
    sims = filled.cypher(
        "MATCH (a:Learning), (b:Learning) WHERE a.id < b.id RETURN array_cosine_similarity(a.embedding, b.embedding) AS s"
    )
    assert len(sims) == 1 and sims[0]["s"] is not None
