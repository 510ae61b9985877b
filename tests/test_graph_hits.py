"""The graph signal's hits are built on demand: the same weights and paths as crediting every
reached row eagerly, and the same ranking."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from graphmem import Memory, Settings
from graphmem.retrieve.candidates import GraphHit, GraphHits, graph_candidates


def _eager(hits: GraphHits, second_hop_max: bool) -> dict[int, GraphHit]:
    """The hits as the eager version built them: each path credited once per row, in order; with
    ``second_hop_max`` a row's two-hop paths add the decay once, however many there are."""
    out: dict[int, GraphHit] = {}
    hop2: dict[int, float] = {}
    paths = [hits._index.rows_of(a) for a in hits._first] + [rows for _nb, _via, rows in hits._second]
    kept = np.zeros(1 + max(int(r.max()) for r in [hits.rows, *paths] if r.size), dtype=bool)
    kept[hits.rows] = True

    def credit(rows: np.ndarray, path: str, weight: float) -> None:
        for row in rows.tolist():
            hit = out.get(row)
            if hit is None:
                out[row] = GraphHit(weight, [path])
            elif path not in hit.paths:
                hit.weight += weight
                hit.paths.append(path)

    for anchor in hits._first:
        members = hits._index.rows_of(anchor)
        kind, name = anchor
        suffix = " (named in query)" if anchor in hits._linked else ""
        credit(members[kept[members]], f"via {kind.replace('_', ' ')} {name}{suffix}", 1.0)
    for (nkind, nname), (vkind, vname), rows in hits._second:
        credit(rows[kept[rows]], f"2 hops via {vkind} {vname} → {nkind} {nname}", hits._decay)
        for row in rows[kept[rows]].tolist():
            hop2[row] = hop2.get(row, 0.0) + hits._decay
    if second_hop_max:
        for row, extra in hop2.items():
            if extra > hits._decay:
                out[row].weight -= extra - hits._decay
    return out


def test_lazy_graph_hits_equal_the_eager_ones(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory(settings=Settings(graph_anchor_cap=5, candidates_per_source=5))
    people = ["Dana", "Ravi", "Mei"]
    mem.add_learnings([
        {"content": f"Rule {i} about {['email', 'billing', 'travel'][i % 3]} for {people[i % 3]}",
         "entities": [people[i % 3], people[(i + 1) % 3]] if i % 4 else [people[i % 3]],
         "topics": [["email", "billing", "travel"][i % 3]], "tool": "send_email" if i % 2 else None}
        for i in range(60)
    ])
    catalog = mem.store.learning_catalog
    mask = np.ones(len(catalog), dtype=bool)
    mask[::7] = False
    for anchors in ({"entity": ["Dana"]}, {"tool": ["send_email"], "topic": ["billing"]}, {"entity": ["Mei", "Ravi"]}):
        hits = graph_candidates(mem.store, catalog, anchors, mask, mem.settings, user="alice",
                                sims=np.linspace(0, 1, len(catalog)))
        assert isinstance(hits, GraphHits) and len(hits)
        eager = _eager(hits, mem.settings.graph_second_hop_max)
        assert sorted(eager) == sorted(hits) == hits.rows.tolist()
        for row, weight in zip(hits.rows.tolist(), hits.weights.tolist()):
            assert row in hits and hits[row].paths == eager[row].paths
            assert hits[row].weight == weight
            assert abs(eager[row].weight - weight) < 1e-9
        assert -1 not in hits and len(catalog) not in hits
    assert mem.context("billing for Dana", tool="send_email", limit=5).learnings


def test_fusion_reads_graph_weights_without_building_paths(make_memory: Callable[..., Memory]) -> None:
    from graphmem.retrieve.rank import _graph_weights

    mem = make_memory()
    mem.add_learnings([{"content": f"Rule {i} for Dana", "entities": ["Dana"], "topics": ["email"]} for i in range(30)])
    catalog = mem.store.learning_catalog
    hits = graph_candidates(mem.store, catalog, {"entity": ["Dana"]}, np.ones(len(catalog), dtype=bool),
                            mem.settings, user="alice")
    assert isinstance(hits, GraphHits) and len(hits) == 30
    weights = _graph_weights(hits)
    assert weights == dict(zip(hits.rows.tolist(), hits.weights.tolist()))
    assert not hits._made  # no per-row paths were built to read the weights
    assert weights == {r: hits[r].weight for r in hits}
