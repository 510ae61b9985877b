"""Event search's ranking without passes over every event (graphmem/retrieve/event_score.py)
gives the plain computation's values bit for bit: the fused score on the support after a
shortlist scan, and the later signals added on their own positions with the best positions
kept aside (:class:`Ranked`), compared here with the plain arrays on a real Kùzu file."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import graphmem.retrieve.event_rank as event_rank
from graphmem import Memory, Settings
from graphmem.retrieve.event_arrays import diverse_top, entity_index, query_entities, top_k
from graphmem.retrieve.event_hops import continuation
from graphmem.retrieve.event_score import Ranked
from graphmem.retrieve.search import EventSearch

TOPICS = ["lake", "museum", "garden", "violin", "harbour", "recipe", "marathon", "telescope", "pottery", "kayak"]
QUESTIONS = [f"What did Dana say about the {a} and the {b}?" for a in TOPICS[:5] for b in TOPICS[5:8]] + [
    f"When did Eli talk about the {t}?" for t in TOPICS[:5]
] + [f"the {t} in May 2025" for t in TOPICS[:3]] + ["Eli kayak", "when was the recipe?", "tool garden"]
# the soft term signal off: it applies to users below search_terms_max_events only, the sparse fusion above
SHORT = {"search_shortlist_min_events": 100, "search_shortlist_candidates": 60, "search_candidates": 30,
         "search_weight_terms": 0.0}
SPEAKERS = ["Dana", "Eli", "Fay", "Gus", "Hal", "Ivy"]


@pytest.fixture
def int8_memory(make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch) -> Memory:
    monkeypatch.setattr(event_rank, "SYNC_ROWS", 10**9)  # the kept sums grow in the query itself
    mem = make_memory()
    mem.record_events([
        {"kind": "message", "content": f"turn {i}: the {TOPICS[i % 10]} and the {TOPICS[(7 * i) % 10]} "
         f"with friend {i % 17}{' last Monday' if i % 4 == 0 else ''} ({'yes' if i % 3 else 'really?'})",
         "role": SPEAKERS[i % 6], "session_id": f"s{i // 20}", "entities": [SPEAKERS[i % 6]]}
        for i in range(900)
    ])
    mem.store.event_catalog.vectors.configure("int8", 0)  # quantise the event mirror in place
    return mem


def _plain_rank(searcher: EventSearch, sig: Any, layout: Any, index: Any, wanted: list[str], k: int) -> tuple[Any, ...]:
    """The ranking as it was before: whole arrays at every step (the reference)."""
    s = searcher.settings
    final, parts = searcher._score(dataclasses.replace(sig, scanned=None), layout.neighbour_index(s.search_neighbour_window))
    hop, _ = searcher._second_hop(final, index, wanted, layout)
    final = final + s.search_weight_hop * hop
    prf, _ = searcher._prf(final, sig, layout)
    final = final + s.search_weight_prf * prf
    fb, fill, _ = searcher._rocchio(final, sig, layout, k if s.search_session_decay >= 1.0 else 4 * k)
    final = final + s.search_weight_rocchio * fb
    cont = continuation(final, layout, s)
    if fill is not None:
        lifted = np.flatnonzero(cont)
        exact = fill(lifted)
        final[lifted] += s.search_weight_rocchio * (exact - fb[lifted])
        fb[lifted] = exact
    final = final + s.search_weight_continuation * cont
    return diverse_top(final, layout.session, k, s.search_session_decay), final, parts, fb, cont


@pytest.mark.parametrize("update", [{}, {"search_session_decay": 0.5, "search_prf_anchored": True},
                                    {"search_weight_length": 0.0, "search_weight_question_turn": 0.0,
                                     "search_neighbour_window": 2}])
def test_the_sparse_ranking_equals_the_plain_one(int8_memory: Memory, update: dict[str, object]) -> None:
    mem = int8_memory
    settings = Settings(**{**SHORT, **update})  # type: ignore[arg-type]
    searcher = EventSearch(mem.store, mem.embedder, settings, "alice")
    layout = mem.store.event_layout("alice")
    index = entity_index(mem.store, "alice", layout)
    sparse_seen = partial = 0
    for query in QUESTIONS:
        wanted = query_entities(query, (), index)
        sig = searcher.signals(query, layout, index, wanted, tool="garden" if query.startswith("tool") else None)
        assert sig.scanned is not None  # the shortlist was taken
        partial += sig.scanned.size < len(layout)
        nb = layout.neighbour_index(settings.search_neighbour_window)
        final, parts = searcher._score(sig, nb, layout)
        plain, plain_parts = searcher._score(dataclasses.replace(sig, scanned=None), nb)
        sparse_seen += parts["dense_rank"].__class__.__name__ == "RankAmong"
        assert np.array_equal(final, plain), query  # bit for bit
        for key in ("vector", "fulltext", "base", "near"):
            assert np.array_equal(parts[key], plain_parts[key]), (query, key)
        for i in top_k(np.asarray(final), 10):
            if parts["vector"][i] > 0:
                assert parts["dense_rank"][int(i)] == plain_parts["dense_rank"][int(i)]
            assert parts["bm_rank"][int(i)] == plain_parts["bm_rank"][int(i)]
        top, final, parts = searcher.rank(sig, layout, index, wanted, 10)
        want_top, want_final, _, want_fb, want_cont = _plain_rank(searcher, sig, layout, index, wanted, 10)
        assert np.array_equal(top, want_top), query
        assert np.array_equal(final, want_final), query
        assert np.array_equal(parts["rocchio"], want_fb) and np.array_equal(parts["continuation"], want_cont)
    assert sparse_seen == partial >= len(QUESTIONS) // 2


def test_with_the_soft_term_signal_the_plain_fusion_scores(int8_memory: Memory) -> None:
    """The soft term signal is nonzero beyond the support, so with it on the plain fusion runs."""
    mem = int8_memory
    settings = Settings(**{**SHORT, "search_weight_terms": 0.15, "search_terms_max_events": 10**6})
    searcher = EventSearch(mem.store, mem.embedder, settings, "alice")
    layout = mem.store.event_layout("alice")
    index = entity_index(mem.store, "alice", layout)
    nb = layout.neighbour_index(settings.search_neighbour_window)
    with_terms = 0
    for query in QUESTIONS:
        sig = searcher.signals(query, layout, index, query_entities(query, (), index))
        final, parts = searcher._score(sig, nb, layout)
        plain, _ = searcher._score(dataclasses.replace(sig, scanned=None), nb)
        assert np.array_equal(final, plain), query
        if sig.terms is not None and sig.terms.any():
            with_terms += 1
            assert parts["dense_rank"].__class__.__name__ != "RankAmong", query
    assert with_terms > 0


def test_the_sparse_ranking_equals_the_plain_one_after_appended_events(int8_memory: Memory) -> None:
    """Events written after the layout was built (kept scores patched, not rebuilt) rank the same."""
    mem = int8_memory
    for i in range(30):
        mem.record_event("message", f"appended {i}: the {TOPICS[i % 10]} again, said {SPEAKERS[i % 6]}",
                         role=SPEAKERS[i % 6], session_id="late", entities=[SPEAKERS[i % 6]])
    settings = Settings(**SHORT)  # type: ignore[arg-type]
    searcher = EventSearch(mem.store, mem.embedder, settings, "alice")
    mem.search("the lake", over="events", k=5)  # the kept structures grow with the writes
    layout = mem.store.event_layout("alice")
    index = entity_index(mem.store, "alice", layout)
    assert len(layout) == 930
    for query in QUESTIONS:
        wanted = query_entities(query, (), index)
        sig = searcher.signals(query, layout, index, wanted)
        top, final, _ = searcher.rank(sig, layout, index, wanted, 10)
        want_top, want_final, *_ = _plain_rank(searcher, sig, layout, index, wanted, 10)
        assert np.array_equal(top, want_top), query
        assert np.array_equal(final, want_final), query


@pytest.mark.parametrize("update", [{}, {"search_weight_feedback": 0.05}])
def test_the_hits_equal_the_plain_rankings(int8_memory: Memory, monkeypatch: pytest.MonkeyPatch,
                                           update: dict[str, object]) -> None:
    """Through Memory.search: the same hits, scores and reasons with the sparse fusion turned off
    (also with the second hop in embedding space, which needs every event's score)."""
    import graphmem.retrieve.search as search_mod

    mem = int8_memory
    mem.settings = mem.settings.model_copy(update={**SHORT, **update})
    got = [[(h.id, h.score, h.reasons) for h in mem.search(q, over="events", k=10)] for q in QUESTIONS]
    monkeypatch.setattr(search_mod, "sparse_score", lambda *a, **k: None)
    want = [[(h.id, h.score, h.reasons) for h in mem.search(q, over="events", k=10)] for q in QUESTIONS]
    assert got == want


def test_ranked_keeps_the_stable_top_under_additions() -> None:
    rng = np.random.default_rng(5)
    for n in (7, 300, 70_000):
        values = np.round(rng.normal(size=n), 2)  # many ties
        plain = values.copy()
        ranked = Ranked(values, 12)
        for _ in range(6):
            for k in (1, 5, 12, 40):
                assert np.array_equal(ranked.top(k), top_k(plain, k))
            floor = float(plain[top_k(plain, 8)[-1]]) - 0.05
            assert np.array_equal(ranked.at_least(floor), np.flatnonzero(plain >= floor))
            at = rng.choice(n, size=min(n, 9), replace=False)
            amount = np.round(rng.random(at.size), 2)
            ranked.add(at, amount)
            plain[at] = plain[at] + amount
            assert np.array_equal(ranked.values, plain)


def test_date_keys_are_the_date_mentions_of_extract_entities() -> None:
    from graphmem.retrieve.entities import date_keys, extract_entities

    texts = ["When did Dana go to Paris in May 2023?", "in 2022, or 7 May 2023, or March 3rd, 2021.",
             "She may come on Monday", "what happened in may", "June, June and July 2020", "no dates here",
             "On 1 January 2024 and 1 January 2024 again"]
    for text in texts:
        assert date_keys(text) == [m.key for m in extract_entities(text) if m.kind == "date"], text


def test_scattered_reads_like_the_array_it_stands_for() -> None:
    from graphmem.retrieve.sparse_arrays import Scattered

    x = Scattered(6, np.array([1, 4]), np.array([0.5, 2.0]))
    dense = np.array([0.0, 0.5, 0.0, 0.0, 2.0, 0.0])
    assert [x[i] for i in range(6)] == dense.tolist()
    assert np.array_equal(x, dense) and np.array_equal(x[np.array([4, 0])], dense[[4, 0]])
    assert x.astype(np.float32).dtype == np.float32 and x[5] == 0.0 and not x[np.int64(3)] > 0
    assert np.array_equal(x[dense > 0.1], [0.5, 2.0])  # a mask over every position


def test_filled_reads_like_the_array_it_stands_for() -> None:
    from graphmem.retrieve.sparse_arrays import Filled

    at = np.array([0, 3, 5])
    x = Filled(7, at, np.array([0.2, 0.9, -0.3]), -1.0)
    dense = np.array([0.2, -1.0, -1.0, 0.9, -1.0, -0.3, -1.0])
    assert [x[i] for i in range(7)] == dense.tolist()
    assert np.array_equal(x, dense) and np.array_equal(x[np.array([6, 3, 1])], dense[[6, 3, 1]])
    assert np.array_equal(x[dense > -1.0], dense[dense > -1.0])
    held = x[at]  # its own positions: their values, a copy
    held[:] = 5.0
    assert np.array_equal(x, dense) and x.shape == (7,)


def test_an_overlay_reads_like_its_array_and_ranks_like_it_under_additions() -> None:
    """The final scores as kept priors plus values at the support: the same reads, top and
    additions as the plain array, whether the best are found among the support alone (priors
    all lower) or need every position (a prior among the best)."""
    from graphmem.retrieve.sparse_arrays import Overlay

    rng = np.random.default_rng(11)
    n = 5_000
    for prior_scale in (0.01, 3.0):  # priors below the support's best; priors among them
        prior = np.round(rng.normal(size=n) * prior_scale, 2)
        at = np.sort(rng.choice(n, size=400, replace=False))
        values = np.round(rng.normal(size=at.size) + 2.0, 2)  # ties
        plain = prior.copy()
        plain[at] = values
        overlay = Overlay(prior, float(prior.max()), at.copy(), values.copy())
        assert np.array_equal(np.asarray(overlay), plain)
        probe = rng.choice(n, size=50)
        assert np.array_equal(overlay[probe], plain[probe])
        assert [overlay[int(i)] for i in probe] == plain[probe].tolist()
        ranked, reference = Ranked(overlay, 12), plain.copy()
        for _ in range(5):
            for k in (1, 5, 12):
                assert np.array_equal(ranked.top(k), top_k(reference, k))
            floor = float(reference[top_k(reference, 8)[-1]]) - 0.05
            assert np.array_equal(ranked.at_least(floor), np.flatnonzero(reference >= floor))
            where = rng.choice(n, size=9, replace=False)  # some in the support, most not
            amount = np.round(rng.random(where.size), 2)
            ranked.add(where, amount)
            reference[where] = reference[where] + amount
            assert np.array_equal(np.asarray(ranked.values), reference)
        assert np.array_equal(ranked.top(40), top_k(reference, 40))  # beyond the pool: every position
