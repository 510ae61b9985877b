"""Embedding feedback on a large int8 event mirror scans only the events that can still reach
the top k (graphmem/retrieve/event_rank.py): the hits, their order and scores match the plain
full scan, also after writes and when the kept sums grow on the background thread."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import graphmem.retrieve.event_rank as event_rank
from graphmem import Memory
from graphmem.store.vectors import scan_cosines

TOPICS = ["lake", "museum", "garden", "violin", "harbour", "recipe", "marathon", "telescope", "pottery", "kayak"]
QUESTIONS = [f"What did Dana say about the {a} and the {b}?" for a in TOPICS for b in TOPICS[:3]] + [
    f"when did we talk about the {t}?" for t in TOPICS
]


def _conversation(mem: Memory, n: int, start: int = 0) -> None:
    mem.record_events([
        {"kind": "message", "content": f"turn {i}: the {TOPICS[i % 10]} and the {TOPICS[(7 * i) % 10]} "
         f"with friend {i % 17} ({'yes' if i % 3 else 'really?'})",
         "role": "Dana" if i % 2 else "Eli", "session_id": f"s{i // 20}", "entities": ["Dana" if i % 2 else "Eli"]}
        for i in range(start, start + n)
    ])


def _hits(mem: Memory) -> list[list[tuple[str, float]]]:
    return [[(h.id, h.score) for h in mem.search(q, over="events", k=10)] for q in QUESTIONS]


def _assert_same(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> None:
    assert [[i for i, _ in hits] for hits in got] == [[i for i, _ in hits] for hits in want]
    for a, b in zip(got, want):
        assert np.allclose([s for _, s in a], [s for _, s in b], rtol=0, atol=1e-7)


@pytest.fixture
def int8_memory(make_memory: Callable[..., Memory]) -> Memory:
    mem = make_memory()
    _conversation(mem, 600)
    mem.store.event_catalog.vectors.configure("int8", 0)  # quantise the event mirror in place
    assert mem.store.event_catalog.vectors.quantised
    return mem


def test_pruned_feedback_ranks_as_the_full_scan(int8_memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = int8_memory
    used: list[int] = []
    plain = event_rank.pruned_feedback

    def spy(*args: object, **kwargs: object) -> object:
        out = plain(*args, **kwargs)  # type: ignore[arg-type]
        if out is not None:
            used.append(int(out[1].size))
        return out

    monkeypatch.setattr("graphmem.retrieve.search.pruned_feedback", spy)
    monkeypatch.setattr(event_rank, "PRUNE_MIN_EVENTS", 10**9)
    want = _hits(mem)
    assert not used
    monkeypatch.setattr(event_rank, "PRUNE_MIN_EVENTS", 0)
    monkeypatch.setattr(event_rank, "SYNC_ROWS", 10**9)  # the sums grow in the query itself
    _assert_same(_hits(mem), want)
    assert len(used) == len(QUESTIONS)
    assert np.median(used) < 600 / 4  # most events are not scanned a second time
    # writes grow the kept sums (no rebuild): the ranking still matches the full scan
    stats = mem.store.event_layout("alice").derived["rocchio_stats"]
    _conversation(mem, 40, start=600)
    got = _hits(mem)
    assert mem.store.event_layout("alice").derived["rocchio_stats"] is stats and stats.count == 640
    monkeypatch.setattr(event_rank, "PRUNE_MIN_EVENTS", 10**9)
    _assert_same(got, _hits(mem))


def test_kept_sums_match_the_cosines_and_grow_in_the_background(
    int8_memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = int8_memory
    monkeypatch.setattr(event_rank, "PRUNE_MIN_EVENTS", 0)
    monkeypatch.setattr(event_rank, "SYNC_ROWS", 0)  # every missing row: the background thread
    monkeypatch.setattr(event_rank, "_CHUNK", 128)
    mem.search(QUESTIONS[0], over="events", k=10)  # starts the thread, takes the plain scan
    assert event_rank.wait_for_sums(mem.store, "alice", timeout=60)
    layout = mem.store.event_layout("alice")
    stats = layout.derived["rocchio_stats"]
    assert stats.count == len(layout) == 600
    vectors = mem.store.event_catalog.vectors
    rng = np.random.default_rng(0)
    unit = rng.normal(size=(1, vectors.dim)).astype(np.float32)
    unit /= np.linalg.norm(unit)
    cos = scan_cosines(vectors, unit)[:, 0].astype(np.float64)
    from graphmem.store.vectors import quantise

    codes, scale = quantise(unit)
    q = codes[0].astype(np.float64) * float(scale[0])
    assert float(stats.s @ q) == pytest.approx(float(cos.sum()), rel=1e-5)
    assert float(q @ stats.m @ q) == pytest.approx(float((cos * cos).sum()), rel=1e-5)
    # a plain query's z-scores, against the pruned ones on the candidates
    final = rng.random(600)
    seeds = np.argsort(-final)[:5]
    got = event_rank.pruned_feedback(mem.store, vectors, layout, unit, seeds, final, 0.02, 10)
    assert got is not None
    z, cand, exact_at = got
    assert np.array_equal(exact_at(cand), z[cand])
    others = np.ones(600, dtype=bool)
    others[seeds] = False
    want = np.clip((cos - cos[others].mean()) / cos[others].std(), 0.0, None) / 4.0
    assert np.allclose(z[cand], want[cand], atol=1e-7)
    assert set(np.argsort(-(final + 0.02 * want), kind="stable")[:10]) <= set(cand.tolist()) and cand.size < 600
