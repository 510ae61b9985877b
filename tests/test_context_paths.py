"""context()'s faster paths rank exactly as the plain one: the gathered vector blocks
(Settings.vector_scan_blocks) and the helper thread that runs the filters and the full-text
search while the query is embedded (Settings.context_overlap_embedding)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from graphmem import Memory, Settings
from graphmem.retrieve.candidates import _top_rows, eligible_mask, scan_rows, vector_candidates
from graphmem.retrieve.service import Aside
from graphmem.store.catalog import STATUS_CODE
from graphmem.store.vectors import ScanMatrix

VARIANTS = [(False, False), (True, False), (False, True), (True, True)]
TOOLS = ["send_email", "create_ticket", "book_travel"]
PEOPLE = ["Dana", "Ravi", "Mei", "Omar"]
TOPICS = ["pricing", "tone", "deadlines", "security"]
QUERIES = [
    "Email Dana about the pricing changes", "Draft a note on deadlines for Ravi", "security review with Omar",
    "book travel for Mei", "tone of the weekly report", "invoice for the pricing team",
]


def _fill(mem: Memory, bob: Memory) -> None:
    rows = []
    for i in range(60):
        rows.append({
            "content": f"When writing to {PEOPLE[i % 4]} about {TOPICS[i % 4]}, rule {i}: keep it short",
            "tool": TOOLS[i % 3] if i % 5 else None, "entities": [PEOPLE[(i * 7) % 4]], "topics": [TOPICS[(i * 3) % 4]],
            "status": "canary" if i % 6 == 0 else "candidate" if i % 10 == 3 else "disabled" if i % 10 == 7 else "active",
        })
    mem.add_learnings(rows)
    bob.add_learnings([{"content": f"Bob's note {i} on {TOPICS[i % 4]} for {PEOPLE[i % 4]}", "tool": TOOLS[i % 3]}
                       for i in range(160)])  # alice may see under half the rows: the subset scan
    bob.add_learning("Shared: state the deadline explicitly", shared=True, topics=["deadlines"])


@pytest.mark.parametrize("storage", ["float32", "int8"])
def test_every_path_ranks_the_same_learnings_with_the_same_scores(
    make_memory: Callable[..., Memory], tmp_path: Path, storage: str
) -> None:
    path = tmp_path / f"paths_{storage}.kuzu"
    base = Settings(vector_storage=storage)
    _fill(make_memory(path=path, settings=base), make_memory("bob", path=path, settings=base))
    fixed = datetime.now(UTC)
    mems = [
        make_memory(path=path, clock=lambda: fixed, settings=Settings(
            vector_storage=storage, vector_scan_blocks=blocks, context_overlap_embedding=overlap))
        for blocks, overlap in VARIANTS
    ]
    catalog = mems[0].store.learning_catalog
    assert catalog.vectors.quantised is (storage == "int8")
    compared = 0
    for _ in range(3):  # the canary draws advance the same way on every path
        for q in QUERIES:
            tool = TOOLS[len(q) % 3] if len(q) % 2 else None
            ranked = [[(h.id, h.score, tuple(h.reasons)) for h in m.search(q, over="learnings", tool=tool, k=8)]
                      for m in mems]
            assert ranked[0], q
            for other in ranked[1:]:
                assert other == ranked[0]
            compared += 1
    assert compared == 3 * len(QUERIES)
    blocks = catalog.vectors._blocks
    assert any(key == ("visible", "alice") for key in blocks)  # the block path ran
    retriever = mems[-1]._retrieval.retriever()
    user_rows = retriever.users.mask(catalog, "alice")
    kept = scan_rows(catalog, user_rows)
    for _ in range(20):  # whatever the canary draws, the eligible rows are among the kept ones
        eligible = np.flatnonzero(eligible_mask(catalog, user_rows, 0.0, retriever.rng))
        assert np.isin(eligible, kept).all()
    statuses = catalog.col("status")[kept]
    assert set(np.unique(statuses).tolist()) <= {float(STATUS_CODE["active"]), float(STATUS_CODE["canary"])}


def test_context_runs_the_vector_free_part_in_the_helper_thread_and_close_stops_it(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory(settings=Settings(context_overlap_embedding=True))
    mem.add_learning("Email Dana in plain text", tool="send_email", entities=["Dana"])
    ran_in: list[str] = []
    retriever = mem._retrieval.retriever()
    prepare = retriever._prepare

    def spy(*args: object) -> object:
        ran_in.append(threading.current_thread().name)
        return prepare(*args)  # type: ignore[arg-type]

    retriever._prepare = spy  # type: ignore[method-assign]
    ctx = mem.context("write to Dana", tool="send_email")
    assert [item.learning.content for item in ctx.learnings] == ["Email Dana in plain text"]
    assert "aside_wait" in ctx.timings_ms
    assert ran_in and ran_in[0].startswith("graphmem-context")
    aside = mem._retrieval._aside
    mem.settings = Settings(context_overlap_embedding=True, mmr_lambda=0.9)  # rebuilds the services
    assert mem._retrieval._aside is aside  # ... keeping the one helper thread
    pool = aside._pool
    assert pool is not None
    threads = list(pool._threads)
    assert threads and all(t.is_alive() for t in threads)
    mem.close()
    assert not any(t.is_alive() for t in threads)


def test_overlap_off_runs_everything_in_the_caller(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(context_overlap_embedding=False))
    mem.add_learning("Email Dana in plain text", tool="send_email")
    ctx = mem.context("write to Dana", tool="send_email")
    assert ctx.learnings and "aside_wait" not in ctx.timings_ms
    assert mem._retrieval._aside._pool is None  # no thread was ever started


def test_aside_takes_one_call_at_a_time_and_none_after_close() -> None:
    aside = Aside()
    started, release = threading.Event(), threading.Event()

    def slow() -> int:
        started.set()
        assert release.wait(10)
        return 1

    first = aside.submit(slow)
    assert first is not None and started.wait(10)
    assert aside.submit(lambda: 2) is None  # busy: the caller runs its own work
    release.set()
    assert first.result(10) == 1
    second = aside.submit(lambda: 3)
    assert second is not None and second.result(10) == 3
    aside.close()
    assert aside.submit(lambda: 4) is None


def test_a_failing_embedding_waits_for_the_helper_and_frees_it(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(context_overlap_embedding=True))
    mem.add_learning("Email Dana in plain text", tool="send_email")
    service = mem._retrieval

    def boom() -> np.ndarray:
        raise RuntimeError("embedder down")

    with pytest.raises(RuntimeError, match="embedder down"):
        service.rank_learnings("write to Dana", query_vector=boom)
    follow = service._aside.submit(lambda: 5)
    assert follow is not None and follow.result(10) == 5  # the helper is free again


def _matrix(storage: str, n: int = 300, dim: int = 32) -> tuple[ScanMatrix, np.ndarray]:
    rng = np.random.default_rng(3)
    data = rng.normal(size=(n, dim)).astype(np.float32)
    m = ScanMatrix(dim, storage)
    m.bulk_load([f"l{i}" for i in range(n)], data.copy())
    return m, data


@pytest.mark.parametrize("storage", ["float32", "int8"])
def test_cosine_block_equals_the_gathered_scan_and_follows_writes(storage: str) -> None:
    m, data = _matrix(storage)
    rows = np.arange(3, 300, 4)
    q = data[7] + 0.1
    first = m.cosine_block(q, rows, "alice")
    assert np.array_equal(first, m.cosine(q, rows))
    assert np.array_equal(m.cosine_block(q, rows, "alice"), first)  # from the kept block
    assert "alice" in m._blocks
    m.put("l3", -data[3])  # a write drops the blocks; the next call sees the new vector
    assert not m._blocks
    again = m.cosine_block(q, rows, "alice")
    assert np.array_equal(again, m.cosine(q, rows))
    assert again[0] < 0 < first[0] or again[0] == pytest.approx(-first[0], abs=0.02)
    other = rows[:-5]  # other rows under the same key: gathered again
    assert np.array_equal(m.cosine_block(q, other, "alice"), m.cosine(q, other))
    m.remove("l0")  # swap-remove moves the last row into row 0
    assert np.array_equal(m.cosine_block(q, rows, "alice"), m.cosine(q, rows))


def test_cosine_block_keeps_blocks_within_the_byte_cap() -> None:
    m, data = _matrix("float32")
    rows = np.arange(0, 200)
    one = m._m[rows].nbytes + m._scale[rows].nbytes + rows.nbytes
    m.block_cache_bytes = int(one * 1.5)
    for user in ("a", "b", "c"):
        assert np.array_equal(m.cosine_block(data[1], rows, user), m.cosine(data[1], rows))
    assert list(m._blocks) == ["c"]  # the older blocks made room
    m.block_cache_bytes = 0
    assert np.array_equal(m.cosine_block(data[2], rows, "d"), m.cosine(data[2], rows))
    assert "d" not in m._blocks


def test_top_rows_break_equal_values_by_row() -> None:
    rows = np.array([40, 7, 12, 3, 25, 9])
    values = np.array([0.5, 0.9, 0.5, 0.5, 0.1, 0.5], dtype=np.float32)
    assert _top_rows(rows, values, 3) == [7, 3, 9]  # 0.9, then the lowest rows tied at 0.5
    assert _top_rows(rows, values, 10) == [7, 3, 9, 12, 40, 25]
    assert _top_rows(rows, values, 0) == [] and _top_rows(rows[:0], values[:0], 3) == []


def test_vector_candidates_agree_on_every_scan_path(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    bob = make_memory("bob")
    mem.add_learnings([{"content": f"alice rule {i} about {TOPICS[i % 4]}"} for i in range(20)])
    bob.add_learnings([{"content": f"bob rule {i} about {TOPICS[i % 4]}"} for i in range(40)])
    catalog = mem.store.learning_catalog
    mine = np.array([u == "alice" for u in catalog.user[: len(catalog)]])
    mask = mine.copy()
    mask[np.flatnonzero(mine)[::3]] = False  # some of alice's rows are not eligible now
    for text in ("rule about pricing", "tone", "deadlines for bob"):
        q = mem.embedder.embed([text])[0]
        full, sims_full = vector_candidates(catalog, q, mask, 5)
        subset, sims_subset = vector_candidates(catalog, q, mask, 5, subset_below=0.9)
        block, sims_block = vector_candidates(catalog, q, mask, 5, subset_below=0.9, visible=mine, user="alice")
        assert full == subset == block and len(full) == 5
        assert all(mask[r] for r in full)
        assert np.array_equal(sims_subset, sims_block)
        assert np.array_equal(sims_block[mask], sims_full[mask]) and not sims_block[~mask].any()


def test_for_user_copies_share_their_creators_helper_thread(make_memory: Callable[..., Memory]) -> None:
    root = make_memory(settings=Settings(context_overlap_embedding=True))
    root.add_learning("Email Dana in plain text", tool="send_email")
    bob = root.for_user("bob")
    bob.add_learning("Bob books trains, not flights", tool="book_travel")
    assert bob._retrieval._aside is root._retrieval._aside  # one thread however many users
    assert [i.learning.content for i in bob.context("book travel", tool="book_travel").learnings] == [
        "Bob books trains, not flights"]
    pool = root._retrieval._aside._pool
    assert pool is not None
    threads = list(pool._threads)
    bob.close()  # a copy borrows the thread: closing it leaves the creator's running
    assert all(t.is_alive() for t in threads)
    assert root.context("write to Dana", tool="send_email").learnings
    root.close()
    assert not any(t.is_alive() for t in threads)


def test_concurrent_contexts_on_one_memory_all_finish(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(context_overlap_embedding=True))
    mem.add_learnings([{"content": f"Email rule {i} for Dana", "tool": "send_email", "entities": ["Dana"]}
                       for i in range(12)])
    errors: list[BaseException] = []
    counts: list[int] = []

    def ask() -> None:
        try:
            for _ in range(10):
                counts.append(len(mem.context("write to Dana", tool="send_email").learnings))
        except BaseException as e:  # reported below
            errors.append(e)

    workers = [threading.Thread(target=ask) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert not any(w.is_alive() for w in workers) and not errors
    assert len(counts) == 30 and min(counts) > 0
