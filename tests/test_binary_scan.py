"""The binary (sign-bit) first pass of the vector mirror: exact top-k on separated data, row
subsets, staying in step with writes, and the off switch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from graphmem import Memory, Settings
from graphmem.retrieve.candidates import _top_rows, vector_candidates
from graphmem.store import binary_scan
from graphmem.store.consistency import mirror_mismatches
from graphmem.store.vectors import LazyCosine, ScanMatrix


def _clusters(n_centres: int, per: int, dim: int = 64, noise: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_centres, dim)).astype(np.float32)
    rows = np.repeat(centres, per, axis=0) + noise * rng.normal(size=(n_centres * per, dim)).astype(np.float32)
    return rows, centres


def _loaded(storage: str, data: np.ndarray) -> ScanMatrix:
    m = ScanMatrix(data.shape[1], storage)
    m.bulk_load([f"l{i}" for i in range(len(data))], data.copy())
    return m


def test_hamming_and_popcount_match_a_plain_count() -> None:
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(300, 100)).astype(np.float32)
    q = rng.normal(size=100).astype(np.float32)
    bits = binary_scan.BinaryCodes.of(rows, len(rows))
    dist = binary_scan.hamming(bits.bits[:, :300], binary_scan.sign_words(q)[0])
    assert np.array_equal(dist, ((rows > 0) != (q > 0)).sum(axis=1))
    x = rng.integers(0, 2**63, size=50, dtype=np.uint64)
    out = np.empty(50, dtype=np.uint8)
    want = np.array([bin(int(v)).count("1") for v in x])
    assert np.array_equal(binary_scan._popcount(x, out), want)


def test_hamming_split_over_two_threads_gives_the_same_distances() -> None:
    """The second half on a helper thread (when one is free), the first on the caller's; a
    helper with no free thread leaves it all to the caller."""
    from concurrent.futures import Future, ThreadPoolExecutor

    rng = np.random.default_rng(8)
    m = 3 * binary_scan._CHUNK + 123
    bits = rng.integers(0, 2**63, size=(6, m), dtype=np.uint64)
    q = rng.integers(0, 2**63, size=6, dtype=np.uint64)
    want = binary_scan.hamming(bits, q)
    threads: list[str] = []
    with ThreadPoolExecutor(1, thread_name_prefix="helper") as pool:
        def helper(task: Callable[[], object]) -> Future[object]:
            def run() -> object:
                threads.append(__import__("threading").current_thread().name)
                return task()
            return pool.submit(run)

        assert np.array_equal(binary_scan.hamming(bits, q, helper, split_from=1000), want)
        assert threads and threads[0].startswith("helper")
        assert np.array_equal(binary_scan.hamming(bits, q, lambda task: None, split_from=1000), want)
        assert np.array_equal(binary_scan.hamming(bits, q, helper, split_from=m + 1), want)  # below: not split
    assert len(threads) == 1


def test_nearest_takes_the_smallest_distances_and_ties_in_order() -> None:
    dist = np.array([5, 1, 3, 1, 9, 3, 3, 0], dtype=np.uint16)
    assert binary_scan.nearest(dist, 4).tolist() == [1, 2, 3, 7]  # 0, 1, 1 and the first 3
    allowed = np.array([True, False, True, True, True, True, True, False])
    assert binary_scan.nearest(dist, 3, allowed).tolist() == [2, 3, 5]
    assert binary_scan.nearest(dist, 20, allowed).tolist() == np.flatnonzero(allowed).tolist()



def _nearest_by_sort(dist: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` smallest distances' positions, ties in position order, ascending."""
    return np.sort(np.argsort(dist, kind="stable")[:count])


@pytest.mark.parametrize("shape", ["binomial", "few values", "small ones at sampled rows", "small ones off them"])
def test_nearest_on_many_rows_equals_a_stable_sort(shape: str) -> None:
    # from _SAMPLE_FROM rows on the cut is first bounded on a sample: the rows must not change,
    # including when the sample misleads (the small distances sit only at the sampled rows, or
    # only between them)
    rng = np.random.default_rng(7)
    n = 2 * binary_scan._SAMPLE_FROM + 11
    dist = rng.binomial(384, 0.5, n).astype(np.uint16)
    if shape == "few values":
        dist = rng.integers(0, 3, n).astype(np.uint16)
    sampled = np.arange(n) % binary_scan._SAMPLE_EVERY == 0
    if shape == "small ones at sampled rows":
        dist[sampled] = rng.integers(0, 4, int(sampled.sum()))
    if shape == "small ones off them":
        dist[~sampled] = rng.integers(0, 4, int((~sampled).sum()))
    for count in (1, 17, 2_000, n // binary_scan._SAMPLE_EVERY + 5, n // 2, n - 1):
        assert np.array_equal(binary_scan.nearest(dist, count), _nearest_by_sort(dist, count)), count
    allowed = rng.random(n) < 0.3
    got = binary_scan.nearest(dist, 500, allowed)
    want = np.flatnonzero(allowed)[_nearest_by_sort(dist[allowed], 500)]
    assert np.array_equal(got, want)

@pytest.mark.parametrize("storage", ["float32", "int8"])
def test_binary_pass_returns_the_exact_top_k_on_separated_data(storage: str) -> None:
    data, centres = _clusters(40, 50)
    m = _loaded(storage, data)
    everything = np.arange(len(data))
    rng = np.random.default_rng(1)
    for c in range(0, 40, 4):
        q = centres[c] + 0.05 * rng.normal(size=centres.shape[1]).astype(np.float32)
        want = _top_rows(everything, m.cosine(q), 10)
        rows, cos = m.binary_top(q, 100)
        assert rows.size == 100 and np.all(np.diff(rows) > 0)
        assert np.allclose(cos, m.cosine(q, rows))  # rescored exactly
        assert _top_rows(rows, cos, 10) == want


def test_binary_pass_only_ranks_the_allowed_rows() -> None:
    data, centres = _clusters(20, 50)
    m = _loaded("int8", data)
    mask = np.zeros(len(data), dtype=bool)
    mask[::3] = True
    visible = np.flatnonzero(np.arange(len(data)) % 2 == 0)  # a superset of nothing in particular
    q = centres[4]
    rows, _ = m.binary_top(q, 30, mask)
    assert rows.size == 30 and mask[rows].all()
    rows2, cos2 = m.binary_top(q, 30, mask, visible, ("visible", "alice"))
    assert rows2.size == 30 and mask[rows2].all() and np.isin(rows2, visible).all()
    again, _ = m.binary_top(q, 30, mask, visible, ("visible", "alice"))  # the kept block
    assert np.array_equal(again, rows2)
    allowed = visible[mask[visible]]
    exact = _top_rows(allowed, m.cosine(q, allowed), 5)
    assert _top_rows(rows2, cos2, 5) == exact


def test_bits_stay_in_step_after_put_and_remove() -> None:
    data, centres = _clusters(10, 30)
    m = _loaded("int8", data)
    m.binary_top(centres[0], 10)  # derives the bits
    key = ("visible", "bob")
    visible = np.arange(0, 200)
    m.binary_top(centres[0], 10, None, visible, key)
    fresh = np.random.default_rng(5).normal(size=(3, data.shape[1])).astype(np.float32)
    for i, v in enumerate(fresh):
        m.put(f"new{i}", v)
    m.put("l7", -data[7])  # a rewrite flips every sign
    m.remove("l3")  # the last row moves into row 3
    m.remove("l100")
    n = len(m)
    derived = binary_scan.BinaryCodes.of(m._m, n)
    assert m._bits is not None
    assert np.array_equal(m._bits.bits[:, :n], derived.bits[:, :n])
    rows, _ = m.binary_top(fresh[1], 5)
    assert m.rows["new1"] in rows.tolist()
    q = -data[7]  # row 7 sits in the kept block: its rewritten bits must be seen there
    kept, _ = m.binary_top(q, 5, None, visible, key)
    gathered, _ = m.binary_top(q, 5, None, visible, None)
    assert np.array_equal(kept, gathered) and 7 in kept.tolist()


def test_a_reload_drops_the_bits_and_derives_them_again() -> None:
    data, centres = _clusters(10, 30)
    m = _loaded("int8", data)
    m.binary_top(centres[0], 10)
    assert m.binary_nbytes > 0
    m.bulk_load([f"x{i}" for i in range(50)], data[:50].copy())
    assert m.binary_nbytes == 0
    rows, _ = m.binary_top(centres[0], 10)
    assert rows.max() < 50


def test_vector_candidates_off_path_is_unchanged_and_on_path_is_exact_on_its_rows(
    make_memory: Callable[..., Memory],
) -> None:
    mem = make_memory("alice", Settings(vector_storage="int8"))
    mem.add_learnings([{"content": f"Rule {i}: send the {t} report to {c} on {d}"} for i, (t, c, d) in enumerate(
        (t, c, d) for t in ("billing", "security", "travel", "hiring") for c in ("Acme", "Globex", "Initech")
        for d in ("Mondays", "Fridays", "weekends"))])
    catalog = mem.store.learning_catalog
    q = mem.embedder.embed(["send the security report"])[0]
    mask = np.ones(len(catalog), dtype=bool)
    mask[::4] = False
    plain = vector_candidates(catalog, q, mask, 5)
    off = vector_candidates(catalog, q, mask, 5, binary=(0, 8))
    assert plain[0] == off[0] and np.array_equal(plain[1], off[1])  # type: ignore[arg-type]
    rows, sims = vector_candidates(catalog, q, mask, 5, binary=(1, 8))
    assert isinstance(sims, LazyCosine) and len(rows) == 5 and mask[rows].all()
    assert np.allclose(sims[np.asarray(rows)], catalog.vectors.cosine(q, np.asarray(rows)))
    big = vector_candidates(catalog, q, mask, 5, binary=(10 * len(catalog), 8))  # below the size: exact
    assert big[0] == plain[0]


def test_context_with_the_binary_pass_keeps_users_apart(make_memory: Callable[..., Memory]) -> None:
    settings = Settings(vector_storage="int8", vector_binary_min_rows=1, vector_binary_candidates=12, candidates_per_source=8)
    alice = make_memory("alice", settings)
    bob = alice.for_user("bob")
    for i in range(30):
        alice.add_learning(f"Alice rule {i}: send the weekly billing report to Acme on Fridays")
        bob.add_learning(f"Bob rule {i}: send the weekly billing report to Globex on Mondays")
    mine = {l.id for l in alice.learnings()}
    ctx = alice.context("send the weekly billing report", limit=5)
    assert ctx.learnings and {i.learning.id for i in ctx.learnings} <= mine
    assert alice.store.learning_catalog.vectors.binary_nbytes > 0
    alice.forget_learning(ctx.learnings[0].learning.id)
    again = alice.context("send the weekly billing report", limit=5)
    assert ctx.learnings[0].learning.id not in {i.learning.id for i in again.learnings}
    assert all(i.learning.user_id == "bob" for i in bob.context("weekly billing report", limit=5).learnings)
    assert mirror_mismatches(alice.store) == []


def test_binary_settings_are_checked() -> None:
    assert Settings(vector_binary_min_rows=0).vector_binary_min_rows == 0
    with pytest.raises(ValueError, match="vector_binary_candidates"):
        Settings(vector_binary_candidates=0)
    with pytest.raises(ValueError, match="vector_binary_min_rows"):
        Settings(vector_binary_min_rows=-1)
