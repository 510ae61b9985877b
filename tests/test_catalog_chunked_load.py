"""Opening a file rebuilds the catalogs in chunks: the same mirrors as one full-table read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import kuzu
import numpy as np
import pytest

from graphmem import HashEmbedder, Memory, Settings
from graphmem.store import KuzuGraphStore
from graphmem.store.consistency import mirror_mismatches

TOOLS = ["send_email", None, "search_web", "create_ticket"]
NAMES = ["Dana", "Ravi", "Acme", "Globex", "Mei"]
TOPICS = ["pricing", "tone", "security"]


def _fill(mem: Memory, other: Memory) -> None:
    items = []
    for i in range(40):
        items.append({
            "content": f"Rule {i}: tell {NAMES[i % 5]} about {TOPICS[i % 3]} number {i * 7}",
            "tool": TOOLS[i % 4], "entities": [NAMES[i % 5], NAMES[(i + 2) % 5]], "topics": [TOPICS[i % 3]],
            "shared": i % 9 == 0, "ttl_days": 30 if i % 7 == 0 else None,
            "status": "candidate" if i % 11 == 0 else "active", "tier": "archive" if i % 13 == 0 else "active",
            "objective_type": "outreach" if i % 6 == 0 else None,
        })
    made = mem.add_learnings(items)
    other.add_learnings([{"content": f"Bob's rule {i} on {TOPICS[i % 3]}", "tool": "send_email",
                          "entities": [NAMES[i % 5], NAMES[(i + 1) % 5]], "topics": [TOPICS[i % 3]]} for i in range(15)])
    for gone in made[3:8]:  # holes in the node offsets
        mem.forget_learning(gone.id)
    for i in range(12):
        mem.record_event("message", f"Event {i} mentions {NAMES[i % 5]}", role="user")
        other.record_event("message", f"Bob event {i}", role="user")
    mem.cypher("MATCH (l:Learning {id: $id}) SET l.status = 'zombie'", {"id": made[20].id}, write=True, scope="all")


def _one_shot(store: KuzuGraphStore) -> None:
    """The catalog load as graphmem did it before chunking (the reference)."""
    from graphmem.store import health
    from graphmem.store.anchors import anchors_of
    from graphmem.store.catalog import STATUS_CODE, TIER_CODE
    from graphmem.store.learnings import _RETURN

    proj = _RETURN + ", l.content_key AS content_key, l.search_text AS search_text, l.embedding AS embedding"
    table = health.split_rows(store, "Learning", store.execute_read(f"MATCH (l:Learning) RETURN {proj}").get_as_arrow(chunk_size=1_000_000))
    n = table.num_rows
    store._loaded_rows = table.drop_columns(["embedding", "content_key", "search_text"]).combine_chunks()
    store._loaded_index = {ident: i for i, ident in enumerate(table.column("id").to_pylist())}
    vectors = np.asarray(table.column("embedding").combine_chunks().flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(n, store.dim)

    def pylist(name: str) -> list[Any]:
        return list(table.column(name).to_pylist())

    def num(name: str, default: float = 0.0) -> np.ndarray:
        return np.nan_to_num(np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=np.float64), nan=default)

    def seconds(name: str) -> np.ndarray:
        arr = table.column(name).cast("timestamp[us]").to_numpy(zero_copy_only=False)
        return arr.astype("datetime64[us]").astype(np.int64) / 1e6

    created = seconds("created_at")
    ttl = np.asarray([t if t is not None else np.nan for t in pylist("ttl_days")], dtype=np.float64)
    columns = {
        "status": np.asarray([STATUS_CODE[s] for s in pylist("status")], dtype=np.float64),
        "tier": np.asarray([TIER_CODE[t] for t in pylist("tier")], dtype=np.float64),
        "superseded": np.asarray([1.0 if s else 0.0 for s in pylist("superseded_by")]),
        "shared": np.asarray([1.0 if s else 0.0 for s in pylist("shared")]),
        "helpful": num("helpful"), "harmful": num("harmful"), "validations": num("validations"),
        "confidence": num("confidence", 0.5), "score": num("score", 0.5),
        "canary_allocation": num("canary_allocation", 1.0), "created_at": created,
        "updated_at": seconds("updated_at"),
        "expires_at": np.where(np.isnan(ttl) | (ttl <= 0), np.inf, created + np.nan_to_num(ttl) * 86400.0),
    }
    tools = pylist("tool")
    anchors = [anchors_of(t, e or (), p or (), o) for t, e, p, o in zip(tools, pylist("entities"), pylist("topics"), pylist("objective_type"))]
    store.learning_catalog.load_columns(pylist("id"), pylist("user_id"), tools, pylist("content_key"), vectors, columns,
                                        anchors, pylist("search_text"))
    events = health.split_rows(store, "Event", store.execute_read(
        "MATCH (e:Event) RETURN e.id AS id, e.user_id AS user_id, e.embedding AS embedding, e.search_text AS search_text"
    ).get_as_arrow(chunk_size=1_000_000))
    emb = np.asarray(events.column("embedding").combine_chunks().flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
    store.event_catalog.load(events.column("id").to_pylist(), events.column("user_id").to_pylist(),
                             emb.reshape(events.num_rows, store.dim), events.column("search_text").to_pylist())


def _state(store: KuzuGraphStore) -> dict[str, Any]:
    lc, ec = store.learning_catalog, store.event_catalog
    lex = lc.lexical
    out: dict[str, Any] = {
        "ids": list(lc.ids), "user": list(lc.user), "tool": list(lc.tool),
        "cols": {c: lc.col(c).tolist() for c in lc.COLUMNS},
        "matrix": lc.vectors.matrix.copy(), "quantised": lc.vectors.quantised,
        "rows": dict(lc.vectors.rows), "keys": dict(lc.keys), "key_of": dict(lc._key_of),
        "anchors": list(lc.anchors.of_row), "owners": list(lc.anchors.owner),
        "anchor_rows": {a: sorted(r) for a, r in lc.anchors.rows.items() if r}, "cooc": lc.anchors.cooc,
        "docs": dict(lex._docs), "n": list(lex._n), "len": list(lex._len), "df": [dict(d) for d in lex._df],
        "search": [lex.search(q, u, 10) for q in ("rule dana", "pricing tone", "bob") for u in ("alice", "bob")],
        "loaded_index": dict(store._loaded_index), "loaded_rows": store._loaded_rows.to_pylist(),
        "bad_rows": [(b["table"], b["id"]) for b in store.bad_rows],
        "event_ids": list(ec.vectors.ids), "event_user": list(ec.user), "event_matrix": ec.vectors.matrix.copy(),
        "event_docs": dict(ec.lexical._docs),
    }
    return out


def _assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        else:
            assert a[key] == b[key], key


@pytest.mark.parametrize("storage", ["float32", "int8"])
def test_chunked_load_builds_the_same_mirrors_as_one_read(
    make_memory: Callable[..., Memory], db_path: Path, storage: str
) -> None:
    settings = Settings(vector_storage=storage)
    mem = make_memory(settings=settings)
    _fill(mem, make_memory("bob", settings=settings))
    store = mem.store
    store.scan_chunk_rows = 10**9  # one range: the whole table in one query
    store.reload_catalogs()
    whole = _state(store)
    assert len(whole["ids"]) == 40 + 15 - 5 - 1  # forgotten and bad rows are out
    assert whole["bad_rows"] == [("Learning", whole["bad_rows"][0][1])]
    assert whole["quantised"] == (storage == "int8")
    for step in (1, 3, 7):
        store.scan_chunk_rows = step
        store.reload_catalogs()
        _assert_same(whole, _state(store))
    bad_id = whole["bad_rows"][0][1]
    assert all(bad_id in m for m in mirror_mismatches(store))  # only the bad row, by design
    _one_shot(store)  # graphmem's earlier loader: one full-table query, one Arrow table
    _assert_same(whole, _state(store))
    mem.close()


def test_chunked_load_of_an_empty_file(tmp_path: Path) -> None:
    store = KuzuGraphStore(tmp_path / "empty.kuzu", dim=16, embedder_name="hash-16")
    try:
        assert len(store.learning_catalog) == 0 and len(store.event_catalog) == 0
        assert store.bad_rows == []
        assert "content" in store._loaded_rows.column_names
    finally:
        store.close()


def test_a_store_reopened_in_chunks_serves_context(make_memory: Callable[..., Memory], db_path: Path) -> None:
    mem, bob = make_memory(), make_memory("bob")
    _fill(mem, bob)
    query = {"tool": "send_email", "entities": ["Dana"]}
    expected = [s.learning.id for s in mem.context("Email Dana about pricing", **query).learnings]
    assert expected
    mem.close()
    bob.close()
    store = KuzuGraphStore(db_path, dim=HashEmbedder().dim, embedder_name=HashEmbedder().name)
    try:
        store.scan_chunk_rows = 4
        store.reload_catalogs()
        assert [l.id for l in store.get_learnings(expected)] == expected
        assert len(mirror_mismatches(store)) == 1  # the bad row, left out by design
    finally:
        store.close()


def test_buffer_pool_setting_reaches_kuzu(
    make_memory: Callable[..., Memory], db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    real = kuzu.Database

    class Spy(real):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            seen.append(int(kwargs.get("buffer_pool_size", 0)))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(kuzu, "Database", Spy)
    mem = make_memory(settings=Settings(kuzu_buffer_pool_mb=64))
    mem.add_learning("Keep emails short", tool="send_email")
    assert seen[-1] == 64 << 20 and mem.store.buffer_pool_mb == 64
    assert 256 <= mem.store.scan_chunk_rows < 16_384  # ranges small enough for the capped pool
    assert [s.learning.content for s in mem.context("Email Dana", tool="send_email").learnings]
    mem.close()
    make_memory(settings=Settings(kuzu_buffer_pool_mb=0)).close()
    assert seen[-1] == 1024 << 20  # sized from the (small) file: the 1,024 MB floor
    assert Settings().kuzu_buffer_pool_mb == 0  # sized from the file unless asked
    with pytest.raises(ValueError):
        Settings(kuzu_buffer_pool_mb=-1)
    in_memory = KuzuGraphStore(None, dim=16, embedder_name="hash-16", buffer_pool_mb=64)
    in_memory.close()
    assert seen[-1] == 0  # an in-memory database keeps its data in the pool: never capped


def test_scan_chunks_covers_every_node_once(tmp_path: Path) -> None:
    store = KuzuGraphStore(tmp_path / "scan.kuzu", dim=16, embedder_name="hash-16")
    try:
        store.scan_chunk_rows = 5
        made = [f"k{i}" for i in range(23)]
        for k in made:
            store.write("CREATE (:Meta {key: $k, value: 'x'})", {"k": k})
        tables = list(store.scan_chunks("Meta", "m", "m.key AS key"))
        keys = [k for t in tables for k in t.column("key").to_pylist()]
        assert sorted(k for k in keys if k.startswith("k")) == sorted(made)
        assert max(t.num_rows for t in tables) <= 5 and len(tables) >= 5
        assert len(keys) == len(set(keys))
        assert isinstance(store._db, kuzu.Database)
    finally:
        store.close()


def test_anchor_load_matches_row_by_row_writes() -> None:
    from graphmem.store.anchors import SHARED, AnchorIndex, anchors_of

    rng = np.random.default_rng(3)
    of_row, owners = [], []
    for i in range(300):
        ents = [NAMES[j] for j in rng.choice(5, size=int(rng.integers(0, 4)), replace=False)]
        tops = [TOPICS[j] for j in rng.choice(3, size=int(rng.integers(0, 3)), replace=False)]
        of_row.append(anchors_of(TOOLS[i % 4], ents, tops, "outreach" if i % 5 == 0 else None))
        owners.append(SHARED if i % 7 == 0 else ["alice", "bob", "carol"][i % 3])
    loaded, written = AnchorIndex(), AnchorIndex()
    loaded.load(of_row, owners)
    for row, (anchors, owner) in enumerate(zip(of_row, owners)):
        written.set_row(row, anchors, owner)
    assert loaded.of_row == written.of_row and loaded.owner == written.owner
    assert loaded.rows == {a: r for a, r in written.rows.items() if r}
    assert loaded.cooc == written.cooc
    assert loaded.neighbours([("entity", "Dana")], 5, "alice") == written.neighbours([("entity", "Dana")], 5, "alice")


def test_lexical_load_in_blocks_matches_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphmem.store import lexical

    rng = np.random.default_rng(5)
    vocab = ["email", "dana", "pricing", "tone", "acme", "invoice", "deadline", "report", "bob"]
    texts = [" ".join(rng.choice(vocab, size=int(rng.integers(0, 8)))) for _ in range(200)]
    users = [["alice", "bob", "carol"][i % 3] for i in range(200)]
    shared = [i % 10 == 0 for i in range(200)]
    one = lexical.LexicalIndex()
    one.load(texts, users, shared)
    monkeypatch.setattr(lexical, "_LOAD_BLOCK", 7)
    blocks = lexical.LexicalIndex()
    blocks.load(texts, users, shared)
    assert one._base_id == blocks._base_id and one._df == blocks._df and one._n == blocks._n
    np.testing.assert_array_equal(one._base_rows, blocks._base_rows)
    np.testing.assert_array_equal(one._dl, blocks._dl)
    for q in ("email dana", "pricing report tone", "bob"):
        for u in ("alice", "bob"):
            assert one.search(q, u, 10) == blocks.search(q, u, 10)
