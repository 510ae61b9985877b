"""The graph stage's cap on rows reached per anchor (``graph_max_reached``) and the per-user
eligibility kept between calls: nothing changes below the cap, a hub reaches its best rows only,
and the kept eligibility equals the mask computed from scratch after every kind of write."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import numpy as np

from graphmem import Memory, Settings
from graphmem.retrieve.candidates import Eligibility, GraphHits, eligible_mask, graph_candidates
from graphmem.store.catalog import _ts
from graphmem.store.vectors import LazyCosine

PEOPLE = ["Dana", "Ravi", "Mei", "Omar", "Lena"]
TOPICS = ["email", "billing", "travel", "security"]


def _fill(mem: Memory, n: int = 90) -> None:
    mem.add_learnings([
        {"content": f"Rule {i}: {TOPICS[i % 4]} advice for {PEOPLE[i % 5]} number {i * 7 % 13}",
         "entities": sorted({PEOPLE[i % 5], PEOPLE[(i * 3) % 5]}), "topics": [TOPICS[i % 4]],
         "tool": ["send_email", "book_travel", None][i % 3]}
        for i in range(n)
    ])


def _as_dict(hits: object) -> dict[int, tuple[float, list[str]]]:
    assert isinstance(hits, GraphHits)
    return {row: (hits[row].weight, hits[row].paths) for row in hits}


def test_a_cap_that_does_not_bind_changes_nothing(make_memory: Callable[..., Memory], clock: object) -> None:
    mem = make_memory(settings=Settings(graph_anchor_cap=10, candidates_per_source=10), clock=clock)
    _fill(mem)
    catalog = mem.store.learning_catalog
    n = len(catalog)
    mask = np.ones(n, dtype=bool)
    mask[::5] = False
    query = mem.deps.embed_one("email advice for Dana")
    full = catalog.vectors.cosine(query)
    top = np.argsort(-np.where(mask, full, -np.inf))[:12]
    degrees = [catalog.anchors.degree(a) for a in catalog.anchors.rows]
    pool = [catalog.ids[int(r)] for r in top[:4]]
    for anchors in ({"entity": ["Dana"]}, {"tool": ["send_email"], "topic": ["billing"]},
                    {"entity": ["Mei", "Ravi"], "topic": ["travel"]}):
        for make_sims in (lambda: full, lambda: LazyCosine(catalog.vectors, query, top, full[top]), lambda: None):
            results = []
            for cap in (0, max(degrees), n):
                s = mem.settings.model_copy(update={"graph_max_reached": cap})
                hits = graph_candidates(mem.store, catalog, anchors, mask, s, pool=pool, sims=make_sims(), user="alice")
                results.append(_as_dict(hits))
            assert results[0] and results[0] == results[1] == results[2]
    # and through context(): the same learnings, scores and reasons with and without the cap
    capped, uncapped = mem.settings, mem.settings.model_copy(update={"graph_max_reached": 0})
    for query_text, tool, entities in (("billing for Dana", "send_email", ()), ("travel", None, ("Mei",)), ("", "book_travel", ())):
        seen = []
        for s in (capped, uncapped):
            mem.settings = s
            ctx = mem.context(query_text, tool=tool, entities=entities, limit=6)
            seen.append([(i.id, round(i.score, 9), i.reasons) for i in ctx.learnings])
        assert seen[0] and seen[0] == seen[1]


def test_a_hub_reaches_its_best_rows_only(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.add_learnings([
        {"content": f"Hub note {i} about {['invoices', 'flights', 'passwords', 'meetings'][i % 4]} {i}",
         "entities": ["Hub", "Pair"] if i % 20 == 0 else ["Hub"]}
        for i in range(200)
    ])
    catalog = mem.store.learning_catalog
    n, cap = len(catalog), 20
    mask = np.ones(n, dtype=bool)
    mask[1::3] = False
    hub = catalog.anchors.rows_of(("entity", "Hub"))
    pair = catalog.anchors.rows_of(("entity", "Pair"))
    query = mem.deps.embed_one("passwords")
    full = catalog.vectors.cosine(query)
    s = Settings(graph_max_reached=cap, graph_anchor_cap=1000)
    anchors = {"entity": ["Hub", "Pair"]}

    # every cosine at hand: the hub's best ``cap`` eligible rows, plus the small anchor's rows
    hits = graph_candidates(mem.store, catalog, anchors, mask, s, sims=full)
    eligible_hub = hub[mask[hub]]
    best = set(eligible_hub[np.argsort(-full[eligible_hub])[:cap]].tolist())
    both = set(pair[mask[pair]].tolist())
    assert isinstance(hits, GraphHits)
    assert set(hits.rows.tolist()) == best | both
    assert {r: w for r, w in zip(hits.rows.tolist(), hits.weights.tolist()) if w == 2.0}.keys() == both
    uncapped = graph_candidates(mem.store, catalog, anchors, mask, s.model_copy(update={"graph_max_reached": 0}), sims=full)
    assert set(uncapped) == set(eligible_hub.tolist())

    # lazy cosines (an HNSW search): the rows the search scored first, then the newest eligible
    found = eligible_hub[np.argsort(-full[eligible_hub])[:5]]
    lazy = LazyCosine(catalog.vectors, query, found, full[found])
    hits = graph_candidates(mem.store, catalog, {"entity": ["Hub"]}, mask, s, sims=lazy)
    newest = [r for r in eligible_hub[::-1].tolist() if r not in set(found.tolist())][: cap - found.size]
    assert set(hits.rows.tolist()) == set(found.tolist()) | set(newest) | both  # Pair: its second hop
    through_pair = sorted(both - set(found.tolist()) - set(newest))  # in the hub too: weight 1 + decay
    assert through_pair and [hits[r].weight for r in through_pair] == [1.0 + s.graph_hop_decay] * len(through_pair)
    assert int(lazy._known.sum()) <= found.size + cap  # cosines computed: bounded by the cap, not the hub
    # a hub neighbour with lazy cosines lifts only rows the search scored or the first hop reached
    lazy = LazyCosine(catalog.vectors, query, found, full[found])
    hits = graph_candidates(mem.store, catalog, {"entity": ["Pair"]}, mask, s.model_copy(update={"graph_fanout_cap": 8}),
                            sims=lazy)
    assert isinstance(hits, GraphHits) and hits._second
    for _nb, _via, rows in hits._second:
        assert rows.size <= 8 and set(rows.tolist()) <= set(found.tolist()) | both
    assert int(lazy._known.sum()) <= found.size + len(both)
    ranked = mem.context("passwords", entities=["Hub"], limit=5)
    assert ranked.learnings and all(any("via entity Hub" in r for r in i.reasons) for i in ranked.learnings)


def test_kept_eligibility_equals_the_mask_from_scratch(make_memory: Callable[..., Memory], clock: object) -> None:
    mem = make_memory(clock=clock)
    bob = make_memory(user="bob", clock=clock)
    _fill(mem, 40)
    bob.add_learning("Bob shares this", shared=True, tool="send_email")
    bob.add_learning("Bob keeps this", tool="send_email")
    catalog = mem.store.learning_catalog
    kept = Eligibility()

    def same(at_days: float = 0.0) -> None:
        now = _ts(mem.now() + timedelta(days=at_days))
        users = np.array([u == "alice" for u in catalog.user])
        for seed in (1, 2):
            a = kept.mask(catalog, "alice", now, np.random.default_rng(seed))
            b = eligible_mask(catalog, users, now, np.random.default_rng(seed))
            assert a.tolist() == b.tolist()

    same()
    ids = [catalog.ids[r] for r in range(len(catalog)) if catalog.user[r] == "alice"]
    mem.update_learning(ids[0], status="canary", canary_allocation=0.5)
    mem.update_learning(ids[1], status="disabled")
    mem.update_learning(ids[2], tier="archive")
    same()
    mem.add_learning("short lived advice", ttl_days=1, tool="send_email")
    mem.add_learnings([{"content": f"Canary rule {i}", "status": "canary"} for i in range(5)])
    same()
    same(at_days=2)
    mem.update_learning(ids[3], shared=True)
    mem.forget_learning(ids[4])
    same()
    same(at_days=2)
    assert kept.mask(catalog, "bob", _ts(mem.now()), np.random.default_rng(0)).sum() >= 2
