"""The HNSW index beside the vector mirror: recall against exact search, switching by size,
saving and repairing it across reopen, and context() served by it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from graphmem import Memory, Settings
from graphmem.retrieve.candidates import vector_candidates
from graphmem.store import ann
from graphmem.store.vectors import LazyCosine, ScanMatrix, unit_rows

pytestmark = pytest.mark.skipif(not ann.available(), reason="usearch is not installed")


def _clustered(n: int, dim: int = 96, seed: int = 0) -> np.ndarray:
    """Sentence-embedding-like vectors: many topics, each a cloud around its centre."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(60, dim))
    return unit_rows(centres[rng.integers(0, 60, n)] + 0.6 * rng.normal(size=(n, dim)))


def _matrix(data: np.ndarray, ann_min_rows: int, storage: str = "int8") -> ScanMatrix:
    m = ScanMatrix(data.shape[1], storage)
    m.configure(storage, 0, ann_min_rows)
    m.bulk_load([f"l{i}" for i in range(len(data))], data.copy())
    return m


def _recall(m: ScanMatrix, queries: np.ndarray, mask: np.ndarray) -> float:
    out = []
    for q in queries:
        exact = np.where(mask, m.cosine(q), -np.inf)
        want = set(np.argsort(-exact)[:10].tolist())
        found = m.ann_search(q, mask, 50, int(mask.sum()))
        assert found is not None and mask[found].all()
        got = found[np.argsort(-m.cosine(q, found))[:10]]
        out.append(len(want & set(got.tolist())) / 10)
    return float(np.mean(out))


def test_ann_recall_against_exact_search_on_clustered_vectors() -> None:
    data = _clustered(6000)
    m = _matrix(data, ann_min_rows=1000)
    assert m.wait_ann(120) and m.ann_error is None
    assert len(m.ann) == 6000  # type: ignore[arg-type]
    rng = np.random.default_rng(3)
    queries = data[rng.integers(0, len(data), 60)] + 0.05 * rng.normal(size=(60, data.shape[1])).astype(np.float32)
    assert _recall(m, queries, np.ones(len(data), dtype=bool)) >= 0.95
    one_user = rng.random(len(data)) < 0.2  # a fifth of the rows eligible: over-fetch, then filter
    assert _recall(m, queries, one_user) >= 0.95


def test_the_index_is_kept_only_from_the_configured_size() -> None:
    data = _clustered(1200)
    small = _matrix(data[:999], ann_min_rows=1000)
    assert not small.ann_ready and small._builder is None
    assert small.ann_search(data[0], np.ones(999, dtype=bool), 10, 999) is None  # callers scan exactly
    small.put("l999", data[999])  # grows past the threshold: the build starts
    assert small.wait_ann(60) and len(small.ann) == 1000  # type: ignore[arg-type]
    small.configure("int8", 0, 0)  # 0: never
    assert not small.ann_ready
    assert _matrix(data, ann_min_rows=0)._builder is None


def test_writes_reach_the_index_and_lazy_cosines_match_the_scan() -> None:
    data = _clustered(3000)
    m = _matrix(data, ann_min_rows=100)
    assert m.wait_ann(60)
    fresh = _clustered(1, seed=9)[0]
    m.put("new", fresh)
    m.remove("l7")  # swap-remove: the last row moves into row 7
    assert "l7" not in m.ann.key_of and m.ids[7] == "new"  # type: ignore[union-attr]
    mask = np.ones(len(m), dtype=bool)
    found = m.ann_search(fresh, mask, 10, len(m))
    assert found is not None and m.ids[int(found[0])] == "new"
    lazy = LazyCosine(m, fresh)
    rows = np.array([0, 7, m.rows["new"]])
    assert np.allclose(lazy[rows], m.cosine(fresh)[rows], atol=1e-6)
    assert lazy[int(rows[2])] == pytest.approx(float(m.cosine(fresh)[rows[2]]), abs=1e-6)


def test_vector_candidates_use_the_index_only_with_enough_eligible_rows() -> None:
    from graphmem.store.catalog import LearningCatalog

    data = _clustered(2000)
    catalog = LearningCatalog(data.shape[1])
    catalog.vectors.configure("int8", 0, 500)
    catalog.vectors.bulk_load([f"l{i}" for i in range(len(data))], data.copy())
    assert catalog.vectors.wait_ann(60)
    mask = np.ones(len(data), dtype=bool)
    rows, sims = vector_candidates(catalog, data[5], mask, 20, 0.0, ann_exact_below=100)
    assert isinstance(sims, LazyCosine) and rows[0] == 5
    exact_rows, exact_sims = vector_candidates(catalog, data[5], mask, 20, 0.0, ann_exact_below=10_000)
    assert isinstance(exact_sims, np.ndarray) and exact_rows[0] == 5
    assert len(set(rows[:10]) & set(exact_rows[:10])) >= 9


def _texts(n: int, start: int = 0) -> list[dict[str, object]]:
    topics = ["pricing", "security", "deadlines", "billing", "travel", "hiring", "testing", "budget"]
    return [{"content": f"Rule {i}: mention the {topics[i % 8]} owner and ticket {i * 7 % 101} when writing to team {i % 13}",
             "topics": [topics[i % 8]]} for i in range(start, start + n)]


def test_index_is_saved_loaded_and_repaired_across_reopen(make_memory: Callable[..., Memory], db_path: Path) -> None:
    on = Settings(vector_ann_min_rows=200, vector_ann_exact_below=1)
    mem = make_memory("alice", on)
    mem.add_learnings(_texts(300))
    vectors = mem.store.learning_catalog.vectors
    assert vectors.wait_ann(60)
    top = mem.context("security owner ticket for team 4", limit=5).learnings
    assert top
    mem.close()
    saved = Path(str(db_path) + ".ann")
    assert saved.exists() and Path(str(saved) + ".ids").exists()

    again = make_memory("alice", on)  # loaded from the file, not rebuilt
    vectors = again.store.learning_catalog.vectors
    assert vectors.ann_ready and vectors._builder is None
    assert set(vectors.ann.key_of) == set(vectors.ids)  # type: ignore[union-attr]
    gone = again.learnings()[0].id
    again.close()

    off = make_memory("alice", Settings(vector_ann_min_rows=0))  # writes the index does not see
    off.add_learnings(_texts(40, start=300))
    off.forget_learning(gone)
    off.close()

    third = make_memory("alice", on)
    vectors = third.store.learning_catalog.vectors
    assert vectors.ann_ready and vectors._builder is None  # repaired, not rebuilt
    index = vectors.ann
    assert index is not None and set(index.key_of) == set(vectors.ids) and gone not in index.key_of
    _rows, prints = vectors.rows_for_index(np.arange(len(vectors)))
    assert [index.prints[index.key_of[i]] for i in vectors.ids] == prints.tolist()
    ctx = third.context("mention the billing owner and ticket when writing to team 3", limit=5)
    assert ctx.learnings and all(i.learning.id != gone for i in ctx.learnings)


def test_context_with_the_index_finds_what_the_exact_scan_finds(make_memory: Callable[..., Memory], tmp_path: Path) -> None:
    tops = []
    for name, settings in (("exact", Settings(vector_ann_min_rows=0)),
                           ("ann", Settings(vector_ann_min_rows=100, vector_ann_exact_below=1))):
        mem = make_memory("alice", settings, path=tmp_path / f"{name}.kuzu")
        mem.add_learnings(_texts(250))
        if name == "ann":
            assert mem.store.learning_catalog.vectors.wait_ann(60)
        tops.append([i.learning.content for i in mem.context("the hiring owner and ticket 42", limit=5).learnings])
    assert tops[0][:3] == tops[1][:3]


def test_ann_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="vector_ann_min_rows"):
        Settings(vector_ann_min_rows=-1)
