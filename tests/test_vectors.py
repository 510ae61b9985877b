"""The learnings' vector mirror: int8 codes against float32 rows, and context() on an int8 mirror."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from graphmem import Memory, Settings
from graphmem.store.consistency import mirror_mismatches
from graphmem.store.vectors import ScanMatrix, quantise, unit_rows


def _vectors(n: int, dim: int = 64, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(8, dim))
    return (centres[rng.integers(0, 8, n)] + 0.5 * rng.normal(size=(n, dim))).astype(np.float32)


def test_int8_codes_reconstruct_unit_rows_closely() -> None:
    unit = unit_rows(_vectors(200))
    codes, scale = quantise(unit)
    assert codes.dtype == np.int8 and np.abs(codes).max() <= 127
    assert np.abs(codes.astype(np.float32) * scale[:, None] - unit).max() < 0.01


def test_int8_cosine_matches_float32_and_keeps_the_top_ten() -> None:
    data = _vectors(3000)
    exact, approx = ScanMatrix(64, "float32"), ScanMatrix(64, "int8")
    ids = [f"l{i}" for i in range(len(data))]
    exact.bulk_load(ids, data.copy())
    approx.bulk_load(ids, data.copy())
    assert approx.quantised and not exact.quantised
    assert approx.nbytes < exact.nbytes / 3
    recalls = []
    for q in _vectors(20, seed=1):
        want, got = exact.cosine(q), approx.cosine(q)
        assert np.abs(want - got).max() < 0.02
        recalls.append(len(set(np.argsort(-want)[:10]) & set(np.argsort(-got)[:10])) / 10)
    assert np.mean(recalls) >= 0.9
    rows = np.array([5, 17, 2999])
    assert np.allclose(approx.cosine(data[0], rows), approx.cosine(data[0])[rows])
    assert np.allclose(approx.vectors_of(rows), exact.vectors_of(rows), atol=0.01)


def test_auto_storage_quantises_when_the_mirror_reaches_the_threshold() -> None:
    m = ScanMatrix(64, "auto", int8_min_rows=50)
    data = _vectors(60)
    for i in range(49):
        m.put(f"l{i}", data[i])
    assert not m.quantised
    before = m.cosine(data[0])
    m.put("l49", data[49])
    assert m.quantised
    assert np.abs(m.cosine(data[0])[:49] - before).max() < 0.02
    m.remove("l3")  # swap-remove moves the last row (l49) into row 3
    assert m.ids[3] == "l49" and m.rows["l49"] == 3
    assert np.allclose(m.vectors_of([3]), unit_rows(data[49]), atol=0.01)
    assert m.configure("float32", 50) is False  # int8 rows cannot become float32 without the file


def _two_users(make_memory: Callable[..., Memory], settings: Settings) -> tuple[Memory, Memory]:
    alice = make_memory("alice", settings)
    bob = alice.for_user("bob")
    for i in range(30):
        alice.add_learning(f"Alice rule {i}: send the weekly billing report to Acme on Fridays")
        bob.add_learning(f"Bob rule {i}: send the weekly billing report to Globex on Mondays")
    return alice, bob


@pytest.mark.parametrize("subset", [0.0, 0.9])
def test_int8_mirror_keeps_users_apart_and_filters_status(make_memory: Callable[..., Memory], subset: float) -> None:
    settings = Settings(vector_storage="int8", vector_scan_subset_below=subset)
    alice, bob = _two_users(make_memory, settings)
    assert alice.store.learning_catalog.vectors.quantised
    mine = {l.id for l in alice.learnings()}
    ctx = alice.context("send the weekly billing report", limit=20)
    assert ctx.learnings and {i.learning.id for i in ctx.learnings} <= mine
    assert all(i.learning.user_id == "bob" for i in bob.context("weekly billing report", limit=20).learnings)
    top = ctx.learnings[0].learning
    alice.update_learning(top.id, status="disabled")
    again = alice.context("send the weekly billing report", limit=20)
    assert top.id not in {i.learning.id for i in again.learnings}
    alice.update_learning(ctx.learnings[1].learning.id, tier="archive")
    assert ctx.learnings[1].learning.id not in {i.learning.id for i in alice.context("weekly billing report", limit=20).learnings}
    alice.forget_learning(ctx.learnings[2].learning.id)
    assert mirror_mismatches(alice.store) == []


def test_int8_and_float32_mirrors_rank_alike(make_memory: Callable[..., Memory], tmp_path) -> None:  # type: ignore[no-untyped-def]
    texts = [f"Use {fmt} when reporting {topic} to the team" for fmt in ("tables", "bullets", "plain text", "charts")
             for topic in ("pricing", "security", "deadlines", "billing", "travel", "hiring")]
    tops = []
    for storage in ("float32", "int8"):
        mem = make_memory("alice", Settings(vector_storage=storage), path=tmp_path / f"{storage}.kuzu")
        mem.add_learnings([{"content": t} for t in texts])
        assert mem.store.learning_catalog.vectors.quantised is (storage == "int8")
        tops.append([i.learning.content for i in mem.context("how to report security findings", limit=5).learnings])
    assert tops[0][:3] == tops[1][:3]


def test_reopening_applies_the_storage_rule(make_memory: Callable[..., Memory], db_path) -> None:  # type: ignore[no-untyped-def]
    mem = make_memory("alice", Settings(vector_storage="float32"))
    mem.add_learnings([{"content": f"Keep release notes for version {i} short"} for i in range(5)])
    mem.close()
    again = make_memory("alice", Settings(vector_storage="auto", vector_int8_min_rows=3))
    assert again.store.learning_catalog.vectors.quantised
    assert len(again.context("release notes", limit=3).learnings) == 3
    again.store.configure_vectors("float32", 0)  # back to float32: re-read from the file
    assert not again.store.learning_catalog.vectors.quantised
    assert mirror_mismatches(again.store) == []


def test_vector_storage_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="vector_storage"):
        Settings(vector_storage="hnsw")
    with pytest.raises(ValueError, match="vector_scan_subset_below"):
        Settings(vector_scan_subset_below=2.0)
