"""Score fusion, the tool-mismatch penalty and the single best second hop of the learnings ranking."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from graphmem import Memory, Settings
from graphmem.retrieve.candidates import graph_candidates
from graphmem.retrieve.fusion import rrf, score_fusion


def test_score_fusion_scales_each_signal_between_its_candidates() -> None:
    cos = np.array([0.9, 0.5, 0.1, 0.3])
    lists = {"vector": [0, 1, 3], "graph": [2, 1]}
    fused = score_fusion(lists, {"vector": 1.0, "graph": 2.0}, {"vector": cos, "graph": {2: 1.0, 1: 1.0}})
    # candidates 0, 1, 3, 2: cosine scaled over 0.1..0.9, graph over 0..1
    assert fused[0] == pytest.approx(1.0)
    assert fused[1] == pytest.approx(0.5 + 2.0)
    assert fused[2] == pytest.approx(0.0 + 2.0)
    assert fused[3] == pytest.approx(0.25)
    # a graph tie stays a tie (the cosine breaks it), which reciprocal ranks do not keep
    assert fused[1] > fused[2]
    ranks = rrf(lists, {"vector": 1.0, "graph": 2.0}, 10)
    assert ranks[2] != ranks[1] - 1.0 / 12


def test_score_fusion_drops_zero_weight_lists_and_handles_flat_signals() -> None:
    cos = np.array([0.4, 0.4, 0.2])
    lists = {"vector": [0, 1], "fulltext": [2], "graph": [2]}
    fused = score_fusion(lists, {"vector": 1.0, "fulltext": 0.0, "graph": 0.0}, {"vector": cos, "fulltext": {2: 3.0}})
    assert set(fused) == {0, 1}  # row 2 came only from lists weighted 0
    assert fused[0] == fused[1] == pytest.approx(1.0)  # one flat positive signal: full weight
    assert score_fusion({"vector": []}, {"vector": 1.0}, {"vector": cos}) == {}


def test_rank_fusion_setting_is_checked(make_memory: Callable[..., Memory]) -> None:
    with pytest.raises(ValueError, match="rank_fusion must be one of score, rrf"):
        Settings(rank_fusion="sum")
    for mode in ("score", "rrf"):  # both modes answer, with the same explanations
        mem = make_memory(settings=Settings(rank_fusion=mode))
        target = mem.add_learning("Use the corporate letterhead", tool="send_email")
        mem.add_learning("Quarterly revenue is reported in euros")
        ctx = mem.context("quarterly revenue", tool="send_email", token_budget=5000)
        hit = next(i for i in ctx.learnings if i.id == target.id)
        assert "via tool send_email" in hit.reasons
        # the fused relevance is named by the method that made it
        label = "score fusion " if mode == "score" else "rrf "
        assert sum(r.startswith(label) for r in hit.reasons) == 1, hit.reasons
        assert not any(r.startswith("rrf ") for r in hit.reasons) or mode == "rrf"


def test_learning_bound_to_another_tool_loses_relevance(make_memory: Callable[..., Memory]) -> None:
    def run(penalty: float) -> tuple[list[str], list[list[str]]]:
        mem = make_memory(settings=Settings(tool_mismatch_penalty=penalty, quality_prior_enabled=False, mmr_lambda=1.0))
        other = mem.add_learning("Dana renewal meetings are booked by her assistant", tool="create_calendar_event",
                                 entities=["Dana"])
        same = mem.add_learning("Keep emails short", tool="send_email")
        free = mem.add_learning("Dana prefers bullet points", entities=["Dana"])
        ctx = mem.context("Email Dana about the renewal", tool="send_email", entities=["Dana"], limit=3,
                          token_budget=5000)
        names = {other.id: "other", same.id: "same", free.id: "free"}
        return [names[i.id] for i in ctx.learnings], [i.reasons for i in ctx.learnings]

    order, _ = run(0.0)
    assert order[0] == "other"  # the other tool's learning matches the words and the entity best
    order, reasons = run(0.5)
    assert order.index("other") > order.index("free")
    assert order.index("other") > order.index("same")
    hit = reasons[order.index("other")]
    assert any(r.startswith("bound to tool create_calendar_event, not send_email") for r in hit)
    assert not any(r.startswith("bound to tool") for r in reasons[order.index("free")])


def test_second_hop_counts_a_rows_best_path_once(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    hub = mem.add_learning("Raj is in Singapore", entities=["Globex", "Raj", "Singapore", "Lena"],
                           topics=["time zones"])
    for name in ("Raj", "Singapore", "Lena"):
        mem.add_learning(f"{name} and Globex work together", entities=["Globex", name])
    mem.add_learning("Time zones matter at Globex", entities=["Globex"], topics=["time zones"])
    reached = mem.add_learning("Only two hops away", entities=["Raj", "Lena"])
    store = mem.store
    catalog = store.learning_catalog
    mask = np.ones(len(catalog), dtype=bool)
    rows = catalog.vectors.rows
    decay = mem.settings.graph_hop_decay

    def weights(best_only: bool) -> dict[str, float]:
        s = Settings(graph_second_hop_max=best_only)
        hits = graph_candidates(store, catalog, {"entity": ["Globex"]}, mask, s)
        return {lid: hits[rows[lid]].weight for lid in (hub.id, reached.id)}

    summed, best = weights(False), weights(True)
    assert summed[hub.id] > 1.0 + decay  # one path per neighbour of Globex it also names
    assert best[hub.id] == pytest.approx(1.0 + decay)
    assert best[reached.id] == pytest.approx(decay)
    assert summed[reached.id] == pytest.approx(2 * decay)
