"""The mirrors' snapshot beside the file (graphmem/store/snapshot.py): an open that maps it builds
the same mirrors as one that reads the file, and a snapshot that does not match the file (stale,
truncated, corrupt, missing, or left by a process killed after a write) is never used."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graphmem import HashEmbedder, Memory, Settings
from graphmem.store import KuzuGraphStore, snapshot
from tests.conftest import offline_llm
from tests.test_catalog_chunked_load import _assert_same, _state

SNAP = Settings(mirror_snapshot_min_rows=1)
OFF = Settings(mirror_snapshot=False)
TOOLS = ["send_email", None, "search_web", "create_ticket"]
NAMES = ["Dana", "Ravi", "Acme", "Globex", "Mei"]
TOPICS = ["pricing", "tone", "security"]
QUERIES = [("Email Dana about pricing", {"tool": "send_email", "entities": ["Dana"]}),
           ("security review for Acme", {"topics": ["security"]}), ("tone of tickets", {"tool": "create_ticket"})]


def _open(path: Path, user: str = "alice", settings: Settings = SNAP, **kwargs: Any) -> Memory:
    return Memory(path, user=user, settings=settings, embedder=HashEmbedder(), llm=offline_llm(), **kwargs)


def _fill(path: Path) -> None:
    mem, bob = _open(path), _open(path, "bob")
    made = mem.add_learnings([{
        "content": f"Rule {i}: tell {NAMES[i % 5]} about {TOPICS[i % 3]} number {i * 7}",
        "tool": TOOLS[i % 4], "entities": [NAMES[i % 5], NAMES[(i + 2) % 5]], "topics": [TOPICS[i % 3]],
        "shared": i % 9 == 0, "ttl_days": 30 if i % 7 == 0 else None,
        "status": "candidate" if i % 11 == 0 else "active", "tier": "archive" if i % 13 == 0 else "active",
        "objective_type": "outreach" if i % 6 == 0 else None,
    } for i in range(40)])
    bob.add_learnings([{"content": f"Bob's rule {i} on {TOPICS[i % 3]}", "tool": "send_email",
                        "entities": [NAMES[i % 5], NAMES[(i + 1) % 5]], "topics": [TOPICS[i % 3]]} for i in range(15)])
    for gone in made[3:8]:  # holes in the rows, swap-removes in the mirrors
        mem.forget_learning(gone.id)
    mem.record_outcome(mem.context("Email Dana about pricing", tool="send_email").id, success=True)
    for i in range(12):
        mem.record_event("message", f"Event {i} mentions {NAMES[i % 5]}", role="user")
        bob.record_event("message", f"Bob event {i}", role="user")
    mem.close()
    bob.close()


def _results(mem: Memory) -> list[Any]:
    out: list[Any] = []
    for text, kw in QUERIES:
        ctx = mem.context(text, **kw)
        out.append([(s.learning.id, round(s.score, 9), s.learning.content, s.learning.helpful) for s in ctx.learnings])
        out.append([(h.id, round(h.score, 9)) for h in mem.search(text, k=10)])
    out.append([(h.id, round(h.score, 9)) for h in mem.search("Dana", over="events", k=10)])
    return out


def _store(path: Path, mirror_snapshot: bool = True, read_only: bool = False) -> KuzuGraphStore:
    emb = HashEmbedder()
    return KuzuGraphStore(path, dim=emb.dim, embedder_name=emb.name, mirror_snapshot=mirror_snapshot,
                          mirror_snapshot_min_rows=1, read_only=read_only)


@pytest.fixture(scope="module")
def filled_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One filled file per module (filling takes seconds); each test gets a copy of it."""
    path = tmp_path_factory.mktemp("filled") / "memory.kuzu"
    _fill(path)
    assert snapshot.path_of(path).exists()  # written by the clean close
    return path


def _copy_filled(source: Path, path: Path) -> Path:
    """``source`` and its snapshot copied to ``path`` (copy2 keeps the mtime the fingerprint holds)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, path)
    shutil.copy2(snapshot.path_of(source), snapshot.path_of(path))
    return path


@pytest.fixture
def filled(filled_once: Path, db_path: Path) -> Path:
    return _copy_filled(filled_once, db_path)


@pytest.mark.parametrize("storage", ["float32", "int8"])
def test_snapshot_builds_the_same_mirrors_as_reading_the_file(filled: Path, storage: str) -> None:
    db_path = filled
    emb = HashEmbedder()
    opened = KuzuGraphStore(db_path, dim=emb.dim, embedder_name=emb.name, vector_storage=storage, mirror_snapshot_min_rows=1)
    opened.close()  # the snapshot now holds this storage
    mapped = KuzuGraphStore(db_path, dim=emb.dim, embedder_name=emb.name, vector_storage=storage, mirror_snapshot_min_rows=1)
    assert mapped._snapshot_loaded
    from_snapshot = _state(mapped)
    assert from_snapshot["quantised"] == (storage == "int8")
    mapped.close()
    read = KuzuGraphStore(db_path, dim=emb.dim, embedder_name=emb.name, vector_storage=storage, mirror_snapshot=False)
    assert not read._snapshot_loaded
    from_file = _state(read)
    read.close()
    _assert_same(from_file, from_snapshot)


def test_same_context_and_search_results_with_and_without_the_snapshot(filled: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin" / filled.name  # the same file state for both runs (context() writes Applications)
    twin.parent.mkdir()
    shutil.copy2(filled, twin)
    shutil.copy2(snapshot.path_of(filled), snapshot.path_of(twin))
    now = datetime.now(UTC) + timedelta(days=3)  # ranking reads the clock (recency, decay): one instant for both
    mem = _open(filled, clock=lambda: now)
    assert mem.store._snapshot_loaded
    with_snapshot = _results(mem)
    mem.close()
    assert snapshot.path_of(filled).exists()  # a close without mirror writes re-stamps it
    mem = _open(twin, settings=OFF, clock=lambda: now)
    assert not mem.store._snapshot_loaded
    assert _results(mem) == with_snapshot
    mem.close()
    assert with_snapshot[0]
    mem = _open(filled)  # the re-stamped snapshot matches the file
    assert mem.store._snapshot_loaded
    mem.close()


def test_context_records_do_not_delete_the_snapshot(filled: Path) -> None:
    mem = _open(filled, user="carol")
    for text, kw in QUERIES:
        mem.context(text, **kw)  # each records an Application (a deferred write: no mirror changes)
    mem.store.flush_deferred()
    assert snapshot.path_of(filled).exists() and mem.store._snapshot_on_disk
    mem.close()
    mem = _open(filled)
    assert mem.store._snapshot_loaded
    ctx = mem.context(*QUERIES[0][:1], **QUERIES[0][1])
    mem.record_outcome(ctx.id, success=True)  # changes counters in the mirrors: the snapshot goes
    assert not snapshot.path_of(filled).exists()
    mem.close()


def test_a_write_deletes_the_snapshot_first_and_the_close_writes_a_new_one(filled: Path) -> None:
    mem = _open(filled)
    assert mem.store._snapshot_loaded
    made = mem.add_learning("Always greet Dana by name", tool="send_email", entities=["Dana"])
    assert not snapshot.path_of(filled).exists()  # gone before the commit
    assert made.id in [s.learning.id for s in mem.context("greet Dana", tool="send_email").learnings]
    mem.close()
    mem = _open(filled)
    assert mem.store._snapshot_loaded
    assert mem.get_learning(made.id).content == "Always greet Dana by name"
    assert made.id in [s.learning.id for s in mem.context("greet Dana", tool="send_email").learnings]
    mem.close()


def test_a_snapshot_from_before_another_write_is_ignored(filled: Path) -> None:
    saved = snapshot.path_of(filled).read_bytes()
    mem = _open(filled, settings=OFF)  # a process that does not keep snapshots writes
    made = mem.add_learning("Never email Ravi on Fridays", tool="send_email", entities=["Ravi"])
    mem.close()
    snapshot.path_of(filled).write_bytes(saved)  # the stale snapshot is back
    store = _store(filled)
    try:
        assert not store._snapshot_loaded
        assert made.id in store.learning_catalog.ids
        assert store.get_learning(made.id).content == "Never email Ravi on Fridays"
    finally:
        store.close()


@pytest.mark.parametrize("damage", ["truncate", "flip", "trailer", "empty"])
def test_a_damaged_snapshot_is_ignored(filled: Path, damage: str) -> None:
    reference = _store(filled, mirror_snapshot=False)
    expected = _state(reference)
    reference.close()
    _open(filled).close()  # a fresh snapshot again
    target = snapshot.path_of(filled)
    data = bytearray(target.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":  # inside the learning ids, a checked array
        r = snapshot._Reader(target)
        off = int(r.entries["l.ids"]["offset"]) + int(r.entries["l.ids"]["nbytes"]) // 2
        del r
        data[off] ^= 0xFF
    elif damage == "trailer":
        data[-3] ^= 0xFF
    else:
        data = bytearray()
    target.write_bytes(bytes(data))
    store = _store(filled)
    try:
        assert not store._snapshot_loaded
        _assert_same(expected, _state(store))
    finally:
        store.close()


def test_a_half_written_snapshot_is_removed_by_the_next_writable_open(filled: Path) -> None:
    left = snapshot.path_of(filled).with_name(snapshot.path_of(filled).name + ".tmp4242")
    left.write_bytes(b"half a snapshot")
    mem = _open(filled)
    assert mem.store._snapshot_loaded and not left.exists()
    mem.close()


def test_a_missing_snapshot_reads_the_file_and_read_only_opens_use_it(filled: Path) -> None:
    store = _store(filled, read_only=True)
    assert store._snapshot_loaded
    mapped = _state(store)
    store.close()
    assert snapshot.path_of(filled).exists()
    snapshot.discard(filled)
    store = _store(filled, read_only=True)
    try:
        assert not store._snapshot_loaded
        _assert_same(mapped, _state(store))
    finally:
        store.close()
    assert not snapshot.path_of(filled).exists()  # a read-only store writes nothing


_CHILD = textwrap.dedent("""
    import os, sys
    from graphmem import HashEmbedder, Memory, Settings
    from graphmem.llm.offline import OfflineLLM
    mem = Memory(sys.argv[1], user="alice", settings=Settings(mirror_snapshot_min_rows=1), embedder=HashEmbedder(), llm=OfflineLLM())
    assert mem.store._snapshot_loaded
    made = mem.add_learning(sys.argv[2], tool="send_email")
    print(made.id, flush=True)
    if sys.argv[3] == "kill":
        os.kill(os.getpid(), 9)
    mem.close()
""")


@pytest.mark.parametrize("end", ["kill", "close"])
def test_another_process_writes_then_dies_or_closes(filled: Path, end: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(filled), f"Written by a child that ends by {end}", end],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == (-9 if end == "kill" else 0), done.stderr
    made = done.stdout.split()[0]
    assert snapshot.path_of(filled).exists() == (end == "close")
    mem = _open(filled)
    try:
        assert mem.store._snapshot_loaded == (end == "close")
        assert mem.get_learning(made).content == f"Written by a child that ends by {end}"
        assert made in [s.learning.id for s in mem.context("Written by a child", tool="send_email").learnings]
    finally:
        mem.close()


def test_settings_turn_it_off_and_small_files_get_none(db_path: Path) -> None:
    assert Settings().mirror_snapshot and Settings().mirror_snapshot_min_rows > 0
    mem = _open(db_path, settings=Settings(mirror_snapshot_min_rows=1000))
    mem.add_learning("Keep emails short", tool="send_email")
    mem.close()
    assert not snapshot.path_of(db_path).exists()
    _fill(db_path)
    assert snapshot.path_of(db_path).exists()
    mem = _open(db_path, settings=OFF)
    assert not mem.store._snapshot_loaded
    mem.add_learning("Keep tickets short", tool="create_ticket")  # deletes the snapshot it did not use
    assert not snapshot.path_of(db_path).exists()
    mem.close()
    assert not snapshot.path_of(db_path).exists()
    with pytest.raises(ValueError):
        Settings(mirror_snapshot_min_rows=-1)


def test_a_file_with_bad_rows_gets_no_snapshot(filled: Path) -> None:
    mem = _open(filled)
    some = mem.store.learning_catalog.ids[0]
    mem.cypher("MATCH (l:Learning {id: $id}) SET l.status = 'zombie'", {"id": some}, write=True, scope="all")
    mem.close()
    assert not snapshot.path_of(filled).exists()
    store = _store(filled)
    try:
        assert [b["id"] for b in store.bad_rows] == [some]
    finally:
        store.close()


def test_an_int8_event_mirror_round_trips(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Event mirrors switch to int8 codes from a size on: the snapshot keeps codes and scales."""
    from graphmem.store.vectors import ScanMatrix

    monkeypatch.setattr(ScanMatrix.__init__, "__defaults__", ("auto", 8))  # events quantise from 8 rows
    _fill(db_path)
    mapped = _store(db_path)
    assert mapped._snapshot_loaded and mapped.event_catalog.vectors.quantised
    from_snapshot = _state(mapped)
    mapped.close()
    read = _store(db_path, mirror_snapshot=False)
    assert not read._snapshot_loaded and read.event_catalog.vectors.quantised
    from_file = _state(read)
    read.close()
    # rows quantised when the mirror crossed its threshold in the session round differently from a
    # fresh read of the file in the last bits (float32 rounding), never by more than 1e-6
    import numpy as np

    np.testing.assert_allclose(from_file.pop("event_matrix"), from_snapshot.pop("event_matrix"), atol=1e-6)
    _assert_same(from_file, from_snapshot)
