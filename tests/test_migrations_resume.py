"""Schema migrations are idempotent and resumable: a half-created file is finished on open."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import kuzu
import pytest

from graphmem import HashEmbedder, Memory
from graphmem.store import migrations

ROOT = Path(__file__).resolve().parent.parent
_ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def _core_statements(dim: int) -> tuple[list[str], list[str]]:
    core = migrations.available()[0]
    statements = core.statements(dim)
    return [s for s in statements if not s.upper().startswith("CALL ")], [s for s in statements if s.upper().startswith("CALL ")]


def _opens_fully(path: Path) -> None:
    with Memory(path, user="alice", embedder=HashEmbedder()) as mem:
        assert mem.store.schema_version == migrations.latest_version()
        learning = mem.add_learning("Resumed files work like new ones", tool="send_email")
        assert mem.search("resumed files")  # the full-text index exists and answers
        assert mem.get_learning(learning.id).content == learning.content
        indexes = {r["i"] for r in mem.cypher("CALL show_indexes() RETURN index_name AS i", scope="all")}
        assert {"learning_fts", "event_fts"} <= indexes
    with Memory(path, user="alice", embedder=HashEmbedder()) as again:  # and opens again
        assert again.cypher("MATCH (l:Learning) RETURN count(l) AS n") == [{"n": 1}]


@pytest.mark.parametrize("applied", [1, 2, 5, 17])
def test_half_applied_core_file_is_finished(tmp_path: Path, applied: int) -> None:
    path = tmp_path / "half.kuzu"
    ddl, _ = _core_statements(HashEmbedder().dim)
    db = kuzu.Database(str(path))
    conn = kuzu.Connection(db)
    for stmt in ddl[:applied]:  # auto-commit, one by one: as an interrupted older version left it
        conn.execute(stmt)
    conn.close()
    db.close()
    _opens_fully(path)


def test_core_committed_but_indexes_and_version_missing(tmp_path: Path) -> None:
    """The state a kill between the core transaction and its full-text indexes leaves."""
    path = tmp_path / "noindex.kuzu"
    emb = HashEmbedder()
    ddl, calls = _core_statements(emb.dim)
    db = kuzu.Database(str(path))
    conn = kuzu.Connection(db)
    conn.execute("BEGIN TRANSACTION")
    for stmt in ddl:
        conn.execute(stmt)
    conn.execute("MERGE (m:Meta {key: 'embedder'}) SET m.value = $v", {"v": emb.name})
    conn.execute("MERGE (m:Meta {key: 'dim'}) SET m.value = $v", {"v": str(emb.dim)})
    conn.execute("COMMIT")
    conn.execute(calls[0])  # one of the two indexes made it
    conn.close()
    db.close()
    _opens_fully(path)


def test_later_file_half_applied(tmp_path: Path) -> None:
    path = tmp_path / "later.kuzu"
    with Memory(path, embedder=HashEmbedder()):
        pass
    db = kuzu.Database(str(path))
    conn = kuzu.Connection(db)
    conn.execute("MATCH (m:Meta {key: 'schema_version'}) SET m.value = '4'")  # as if 005 had not run...
    conn.execute("ALTER TABLE Learning DROP decayed_at")  # ...and stopped after its first ALTER
    conn.close()
    db.close()
    _opens_fully(path)


def test_idempotent_forms() -> None:
    assert migrations.idempotent("CREATE NODE TABLE Meta(key STRING PRIMARY KEY)").startswith(
        "CREATE NODE TABLE IF NOT EXISTS Meta("
    )
    assert migrations.idempotent("create rel table R(FROM A TO B)").startswith("create rel table IF NOT EXISTS R(")
    assert migrations.idempotent("ALTER TABLE Learning ADD decayed_at TIMESTAMP") == (
        "ALTER TABLE Learning ADD IF NOT EXISTS decayed_at TIMESTAMP"
    )
    already = "CREATE NODE TABLE IF NOT EXISTS Meta(key STRING PRIMARY KEY)"
    assert migrations.idempotent(already) == already


_CREATE = """
import sys, time
from graphmem import HashEmbedder, Memory
print("ready", flush=True)
start = time.perf_counter()
Memory(sys.argv[1], embedder=HashEmbedder()).close()
print(f"done {time.perf_counter() - start}", flush=True)
"""

_CHECK = """
import json, sys
from graphmem import HashEmbedder, Memory
out = {}
for path in sys.argv[1:]:
    try:
        with Memory(path, embedder=HashEmbedder()) as mem:
            mem.add_learning("still works")
            ok = mem.store.schema_version and bool(mem.search("still works"))
            out[path] = "ok" if ok else "incomplete"
    except Exception as e:
        out[path] = f"{type(e).__name__}: {e}"
print(json.dumps(out), flush=True)
"""


def _create(path: Path, kill_after: float | None) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CREATE, str(path)], env=_ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the imports are done
        assert first.strip() == "ready"
        if kill_after is None:
            out, _ = proc.communicate(timeout=120)
            return out
        time.sleep(kill_after)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        return proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_kill_9_while_creating_never_leaves_an_unopenable_file(tmp_path: Path) -> None:
    done = _create(tmp_path / "calibrate.kuzu", None)
    window = float(done.split()[1]) if done.startswith("done") else 1.0
    rng = random.Random(20261122)
    paths, interrupted = [], 0
    for i in range(16):  # kills spread over the creation window; a kill that came too late shrinks it
        path = tmp_path / f"killed{i}.kuzu"
        out = _create(path, window * ((i % 10) + rng.random()) / 10)
        finished = out.startswith("done")
        interrupted += not finished
        window *= 0.7 if finished else 1.0
        paths.append(path)
        if interrupted >= 6:
            break
    assert interrupted >= 5  # most kills land while the file is being created
    check = subprocess.run(
        [sys.executable, "-c", _CHECK, *map(str, paths)], env=_ENV, capture_output=True, text=True, timeout=300
    )
    assert check.returncode == 0, check.stderr[-2000:]
    results = json.loads(check.stdout.strip().splitlines()[-1])
    assert results == {str(p): "ok" for p in paths}


def test_new_file_is_built_aside_and_stale_leftovers_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "new.kuzu"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".new.kuzu.creating-{dead.stdout.strip()}-abcd1234"
    stale.write_bytes(b"half a database")
    live = tmp_path / f".new.kuzu.creating-{os.getpid()}-abcd1234"  # "another process" still at work
    live.write_bytes(b"in progress")
    with Memory(path, embedder=HashEmbedder()) as mem:
        assert mem.store.schema_version == migrations.latest_version()
    assert not stale.exists()
    assert live.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, live.name])


def test_later_new_files_are_written_from_the_first_and_stay_independent(tmp_path: Path) -> None:
    first, second, third = (tmp_path / f"{n}.kuzu" for n in ("first", "second", "third"))
    with Memory(first, user="a", embedder=HashEmbedder()) as mem:
        mem.add_learning("Keep emails under three paragraphs", tool="send_email")
    migrations.create_file(second, HashEmbedder().dim, HashEmbedder().name)
    migrations.create_file(third, HashEmbedder().dim, HashEmbedder().name)
    assert second.read_bytes() == third.read_bytes()  # one image, written twice
    with Memory(second, user="b", embedder=HashEmbedder()) as mem:
        assert mem.store.schema_version == migrations.latest_version()
        assert mem.learnings() == []  # nothing of the first file
        mem.add_learning("Book aisle seats on long flights", tool="book_flight")
        assert [h.node.content for h in mem.search("aisle seats")][:1] == ["Book aisle seats on long flights"]
        assert [i for i, _ in mem.store.fulltext_learnings("aisle", 5)] == [mem.learnings()[0].id]  # Kùzu's FTS index
    with Memory(first, user="a", embedder=HashEmbedder()) as mem:
        assert [l.content for l in mem.learnings()] == ["Keep emails under three paragraphs"]
    with pytest.raises(Exception, match="embedder"):
        Memory(third, embedder=HashEmbedder(dim=32))  # the image is per embedder
