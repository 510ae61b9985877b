"""The vector signal of event search on a large int8 mirror scans a shortlist (sign-bit first
pass, the events other signals name, their session neighbours) with its mean and spread from
kept sums (graphmem/retrieve/event_shortlist.py): the statistics equal the full scan's, the
shortlisted cosines are the full scan's bit for bit, and the hits match the full scan, also
after writes; below ``search_shortlist_min_events`` and on float32 mirrors nothing changes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import graphmem.retrieve.event_rank as event_rank
import graphmem.retrieve.search as search_mod
from graphmem import Memory, Settings
from graphmem.retrieve.event_arrays import entity_index, query_entities, user_cosines
from graphmem.retrieve.search import EventSearch

TOPICS = ["lake", "museum", "garden", "violin", "harbour", "recipe", "marathon", "telescope", "pottery", "kayak"]
QUESTIONS = [f"What did Dana say about the {a} and the {b}?" for a in TOPICS for b in TOPICS[:3]] + [
    f"when did we talk about the {t}?" for t in TOPICS
] + [f"Eli {t}" for t in TOPICS]
SHORT = {"search_shortlist_min_events": 100, "search_shortlist_candidates": 150}


def _conversation(mem: Memory, n: int, start: int = 0) -> None:
    mem.record_events([
        {"kind": "message", "content": f"turn {i}: the {TOPICS[i % 10]} and the {TOPICS[(7 * i) % 10]} "
         f"with friend {i % 17} ({'yes' if i % 3 else 'really?'})",
         "role": "Dana" if i % 2 else "Eli", "session_id": f"s{i // 20}", "entities": ["Dana" if i % 2 else "Eli"]}
        for i in range(start, start + n)
    ])


def _hits(mem: Memory, **update: object) -> list[list[tuple[str, float]]]:
    base = mem.settings
    mem.settings = base.model_copy(update=update)
    try:
        return [[(h.id, h.score) for h in mem.search(q, over="events", k=10)] for q in QUESTIONS]
    finally:
        mem.settings = base


def _assert_same(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> None:
    assert [[i for i, _ in hits] for hits in got] == [[i for i, _ in hits] for hits in want]
    for a, b in zip(got, want):
        assert np.allclose([s for _, s in a], [s for _, s in b], rtol=0, atol=1e-7)


@pytest.fixture
def int8_memory(make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch) -> Memory:
    monkeypatch.setattr(event_rank, "SYNC_ROWS", 10**9)  # the kept sums grow in the query itself
    mem = make_memory()
    _conversation(mem, 600)
    mem.store.event_catalog.vectors.configure("int8", 0)  # quantise the event mirror in place
    assert mem.store.event_catalog.vectors.quantised
    return mem


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    used: list[int] = []
    plain = search_mod.shortlist_cosines

    def spy(*args: object, **kwargs: object) -> object:
        out = plain(*args, **kwargs)  # type: ignore[arg-type]
        if out is not None:
            used.append(int(out[2].size))  # the events scanned
        return out

    monkeypatch.setattr(search_mod, "shortlist_cosines", spy)
    return used


def test_the_statistics_and_the_shortlisted_cosines_are_the_full_scans(int8_memory: Memory) -> None:
    mem = int8_memory
    settings = Settings(**SHORT)  # type: ignore[arg-type]
    searcher = EventSearch(mem.store, mem.embedder, settings, "alice")
    full = EventSearch(mem.store, mem.embedder, Settings(search_shortlist_min_events=0), "alice")
    layout = mem.store.event_layout("alice")
    index = entity_index(mem.store, "alice", layout)
    vectors = mem.store.event_catalog.vectors
    for query in ("What did Dana say about the lake?", "the violin and the kayak"):
        wanted = query_entities(query, (), index)
        sig = searcher.signals(query, layout, index, wanted)
        ref = full.signals(query, layout, index, wanted)
        assert sig.dense_stats is not None and ref.dense_stats is None
        a = settings.search_weight_stripped
        dense = ref.dense if ref.stripped is None else (1 - a) * ref.dense + a * ref.stripped
        assert sig.dense_stats[0] == pytest.approx(float(dense.mean()), rel=1e-6, abs=1e-9)
        assert sig.dense_stats[1] == pytest.approx(float(dense.std()), rel=1e-5)
        dense_sig = np.asarray(sig.dense)  # OUTSIDE off the scanned events
        scanned = dense_sig > -1.0
        assert 150 <= np.count_nonzero(scanned) < 600
        assert np.array_equal(dense_sig[scanned], ref.dense[scanned])  # bit for bit
        assert np.array_equal(sig.dense[sig.scanned], dense_sig[sig.scanned])
        unit = np.asarray(mem.embedder.embed([query]), dtype=np.float32)
        assert np.array_equal(ref.dense, user_cosines(vectors, layout.rows, unit / np.linalg.norm(unit))[:, 0])
        assert scanned[(sig.entity > 0) | (sig.mention > 0) | (sig.bm25 > 0)].all()  # the events named


def test_the_hits_match_the_full_scan_also_after_writes(int8_memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = int8_memory
    used = _spy(monkeypatch)
    want = _hits(mem, search_shortlist_min_events=0)
    assert not used
    _assert_same(_hits(mem, **SHORT), want)
    assert len(used) == len(QUESTIONS) and max(used) < 600
    _conversation(mem, 60, start=600)  # the kept sums grow, the shortlist follows the new rows
    used.clear()
    got = _hits(mem, **SHORT)
    assert len(used) == len(QUESTIONS)
    _assert_same(got, _hits(mem, search_shortlist_min_events=0))


def test_the_sign_bit_pass_and_the_scan_split_over_two_threads_give_the_same_hits(int8_memory: Memory) -> None:
    mem = int8_memory
    whole = _hits(mem, **SHORT, search_shortlist_split_from=0, search_scan_split_from=0)
    # every scan split (a worker is idle here); 600 rows are too few to split the sign-bit pass,
    # whose split tests/test_binary_scan.py compares
    split = _hits(mem, **SHORT, search_shortlist_split_from=1, search_scan_split_from=1)
    assert whole and whole[0] and split == whole


def test_small_layouts_float32_mirrors_and_growing_sums_take_the_full_scan(
    make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_memory()
    _conversation(mem, 300)
    used = _spy(monkeypatch)
    want = _hits(mem, search_shortlist_min_events=0)
    _assert_same(_hits(mem, **SHORT), want)  # float32 mirror
    assert not used
    mem.store.event_catalog.vectors.configure("int8", 0)
    want = _hits(mem, search_shortlist_min_events=0)
    _assert_same(_hits(mem, search_shortlist_min_events=1000, search_shortlist_candidates=150), want)  # too few events
    assert not used
    monkeypatch.setattr(event_rank, "SYNC_ROWS", 0)  # the sums grow on the background thread
    first = _hits(mem, **SHORT)
    assert event_rank.wait_for_sums(mem.store, "alice", timeout=60)
    _assert_same(_hits(mem, **SHORT), first)
    assert used  # once the sums were ready


def test_top_k_on_long_arrays_is_the_stable_sort() -> None:
    from graphmem.retrieve.event_arrays import top_k

    rng = np.random.default_rng(3)
    for n in (65_536, 70_001, 200_000):
        for trial in range(6):
            values = rng.random(n)
            if trial % 3 == 0:
                values = np.round(values, 2)  # many ties
            elif trial % 3 == 1:
                values[rng.integers(0, n, 40)] = 2.0  # ties at the top
            for k in (1, 10, 12, 40):
                assert np.array_equal(top_k(values, k), np.argsort(-values, kind="stable")[:k])


def test_split_scans_under_concurrent_searches_and_writes(int8_memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sign-bit pass and the exact scan split onto idle shared workers while two threads search
    and three write (each write checked by a search right after it): under a watchdog, nothing
    hangs, raises or is missed."""
    from graphmem.store import binary_scan
    from tests.test_event_layout import write_while_searching

    monkeypatch.setattr(binary_scan, "_CHUNK", 64)  # halves of whole chunks at 600 rows too
    mem = int8_memory
    mem.settings = mem.settings.model_copy(update={**SHORT, "search_shortlist_split_from": 1, "search_scan_split_from": 1})
    write_while_searching(mem, notes=12, check_every=3, query="What did Dana say about the lake?", seconds=90)
