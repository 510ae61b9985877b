"""The event mirror's int8 rows: their cosines keep the float32 top ten, and the event search
ranks the same on either storage."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from graphmem import Memory
from graphmem.store.vectors import ScanMatrix, scan_cosines


def _vectors(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, dim))
    return (centres[rng.integers(0, 40, n)] + 0.8 * rng.normal(size=(n, dim))).astype(np.float32)


def test_int8_event_scan_keeps_the_float32_top_ten() -> None:
    data = _vectors(20_000)
    ids = [f"e{i}" for i in range(len(data))]
    exact, approx = ScanMatrix(384, "float32"), ScanMatrix(384, "int8")
    exact.bulk_load(ids, data.copy())
    approx.bulk_load(ids, data.copy())
    assert approx.quantised and not exact.quantised
    rng = np.random.default_rng(1)  # questions near some of the events, as real ones are
    queries = data[rng.integers(0, len(data), 40)] + 1.2 * rng.normal(size=(40, 384)).astype(np.float32)
    units = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    want, got = scan_cosines(exact, units), scan_cosines(approx, units)
    assert want.shape == got.shape == (len(data), 40)
    assert np.abs(want - got).max() < 0.02
    # strict recall@10 suffers from near-ties on synthetic Gaussian vectors (0.96-0.99 here; 0.993
    # on MiniLM vectors, measured by benchmarks/events_scale.py); within 0.005 of the 10th best
    # float32 cosine a row counts as a right answer
    strict, tolerant = [], []
    for j in range(units.shape[0]):
        best, found = np.argsort(-want[:, j])[:10], np.argsort(-got[:, j])[:10]
        strict.append(len(set(best) & set(found)) / 10)
        tolerant.append(float(np.mean(want[found, j] >= want[best[-1], j] - 0.005)))
    assert np.mean(strict) >= 0.95, np.mean(strict)
    assert np.mean(tolerant) >= 0.99, np.mean(tolerant)
    rows = np.array([3, 70, 19_999])  # a subset of rows, aligned with them
    assert np.allclose(scan_cosines(approx, units[:2], rows), got[rows, :2])
    assert np.allclose(scan_cosines(exact, units[:1], rows), want[rows, :1], atol=1e-6)


def test_event_search_ranks_alike_on_int8_rows(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    topics = ["lake", "museum", "garden", "violin", "harbour", "recipe", "marathon", "telescope"]
    mem.record_events([
        {"kind": "message", "content": f"turn {i}: {topics[i % 8]} and {topics[(3 * i) % 8]} with friend {i % 13}",
         "role": "Dana" if i % 2 else "Eli", "session_id": f"s{i // 10}"}
        for i in range(400)
    ])
    store = mem.store
    questions = [f"what about the {a} near the {b}?" for a in topics for b in topics[:3]]
    before = [[h.id for h in mem.search(q, over="events", k=10)] for q in questions]
    store.event_catalog.vectors.configure("int8", 0)  # quantise the event mirror in place
    assert store.event_catalog.vectors.quantised
    after = [[h.id for h in mem.search(q, over="events", k=10)] for q in questions]
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(before, after)])
    assert overlap >= 0.9, overlap


@pytest.mark.parametrize("kernel", ["numkong", "einsum"])
def test_int8_dots_are_the_exact_integer_products(kernel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphmem.store import vector_math
    from graphmem.store.vector_math import DOT_CHUNK, int8_dots

    if kernel == "einsum":  # the fallback when numkong is missing
        monkeypatch.setattr(vector_math, "_NUMKONG", [None])
    else:
        assert vector_math._numkong() is not None, "numkong is a core dependency"

    rng = np.random.default_rng(3)
    codes = rng.integers(-127, 128, (DOT_CHUNK + 500, 384), dtype=np.int8)
    codes[0] = 127  # the largest products: far from overflowing int32
    q = rng.integers(-127, 128, (2, 384), dtype=np.int8)
    q[0] = 127
    want = codes.astype(np.int64) @ q.T.astype(np.int64)
    assert np.array_equal(int8_dots(codes, q), want)
    rows = np.concatenate([rng.integers(0, codes.shape[0], DOT_CHUNK + 7), [0, 0]])  # chunked, repeats
    assert np.array_equal(int8_dots(codes, q, rows), want[rows])
    assert np.array_equal(int8_dots(codes, q[:1], rows[:5]), want[rows[:5], :1])
