"""The ranking pipeline shared by ``Memory.context()`` and ``Memory.search(over="learnings")``.

filters → candidates (vector, full-text, graph) → weighted RRF → quality prior (optional
Thompson draw) → MMR diversity → full rows fetched for the winners only.
"""

from __future__ import annotations

import concurrent.futures
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.config import Settings
from graphmem.retrieve.candidates import (
    Eligibility,
    NameIndex,
    UserColumn,
    fulltext_candidates,
    vector_candidates,
)
from graphmem.retrieve.context import ScoredLearning
from graphmem.retrieve.fusion import (
    blend,
    clearly_harmful,
    exploration,
    is_pinned,
    mmr,
    quality_prior,
    record,
    rrf,
    score_fusion,
)
from graphmem.retrieve.graph import GraphHit, GraphHits, graph_candidates
from graphmem.store.catalog import LearningCatalog, _ts

if TYPE_CHECKING:
    from graphmem.store import KuzuGraphStore


_Prepared = tuple[
    np.ndarray | None, np.ndarray, dict[str, list[str]], set[tuple[str, str]], list[tuple[int, float]], dict[str, float]
]  # what Retriever._prepare returns


class Retriever:
    """Per-Memory retrieval state: the name index, the cached user column, the seeded RNG.

    The RNG (``Settings.random_seed``) drives canary sampling and Thompson draws, so a fresh
    Memory with the same seed and the same calls makes the same choices.
    """

    def __init__(self, store: KuzuGraphStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.names = NameIndex()
        self.users = UserColumn()
        self.eligible = Eligibility()  # per-user eligible rows, patched after writes
        self.rng = np.random.default_rng(settings.random_seed)
        self.timings_ms: dict[str, float] = {}

    def _prepare(
        self, user: str, query: str, now_ts: float, tool: str | None, entities: Sequence[str], topics: Sequence[str],
        objective_type: str | None, link_names: bool, scan: bool = True,
    ) -> _Prepared:
        """What ranking needs before the query vector: the rows the user may see (for the
        vector scan's kept block; None when ``vector_scan_blocks`` is off or not ``scan``), the
        eligible mask (the canary draws), the anchors (with the names found in ``query``) and the
        full-text hits."""
        s = self.settings
        catalog = self.store.learning_catalog
        timings: dict[str, float] = {}
        t = time.perf_counter()
        mask = self.eligible.mask(catalog, user, now_ts, self.rng)
        visible = self.eligible.visible(catalog, user) if s.vector_scan_blocks and scan else None
        t1 = time.perf_counter()
        anchors: dict[str, list[str]] = {
            "tool": [tool] if tool else [],
            "entity": list(dict.fromkeys(entities)),
            "topic": list(dict.fromkeys(topics)),
            "objective_type": [objective_type] if objective_type else [],
        }
        linked: set[tuple[str, str]] = set()
        if link_names and query.strip():
            for kind, found in self.names.find(query).items():
                for name in found:
                    if name not in anchors[kind]:
                        anchors[kind].append(name)
                        linked.add((kind, name))
        t2 = time.perf_counter()
        n = s.candidates_per_source
        ft = fulltext_candidates(catalog, query, user, mask, n, s.fulltext_max_postings, s) if query.strip() else []
        t3 = time.perf_counter()
        timings.update(filter=(t1 - t) * 1e3, link=(t2 - t1) * 1e3, fulltext=(t3 - t2) * 1e3)
        return visible, mask, anchors, linked, ft, timings

    def rank(
        self,
        *,
        user: str,
        query: str,
        query_vector: np.ndarray | Callable[[], np.ndarray] | None,
        now: datetime,
        limit: int,
        tool: str | None = None,
        entities: Sequence[str] = (),
        topics: Sequence[str] = (),
        objective_type: str | None = None,
        link_names: bool = True,
        fusion: Mapping[str, float] | None = None,
        aside: Callable[[Callable[[], Any]], concurrent.futures.Future[Any] | None] | None = None,
    ) -> list[ScoredLearning]:
        """The best ``limit`` eligible learnings for the query and anchors, best first.

        ``query_vector`` None skips the vector signal (e.g. empty query text); a callable is
        called once, after the full-text query (see RetrievalService.rank_learnings for why). Entities and
        topics named in ``query`` are added to the anchors when ``link_names``. With no query
        text and no anchors, the top-quality eligible learnings come back. ``fusion``: learned
        multipliers per signal (:mod:`graphmem.retrieve.learned`; None: the Settings weights).
        ``aside``: when ``query_vector`` is a callable, the filters, name linking and full-text
        search (all on the in-memory mirrors, none needs the vector) are handed to it to run in
        another thread while this one embeds the query (it returns None when it cannot take
        them: they then run here first); the results are the same either way.
        """
        s = self.settings
        store = self.store
        catalog = store.learning_catalog
        if link_names and query.strip():
            self.names.refresh(store)  # may query the file: in the caller's thread
        now_ts = _ts(now)
        prepare = functools.partial(self._prepare, user, query, now_ts, tool, entities, topics, objective_type, link_names,
                                    query_vector is not None)
        future = aside(prepare) if aside is not None and callable(query_vector) else None
        if future is not None and callable(query_vector):
            t = time.perf_counter()
            try:
                query_vector = query_vector()
            except BaseException:
                concurrent.futures.wait([future])  # never leave it running past the caller's snapshot
                raise
            embedded = time.perf_counter()
            visible, mask, anchors, linked, ft, timings = future.result()
            timings["embed"] = (embedded - t) * 1000.0
            timings["aside_wait"] = (time.perf_counter() - embedded) * 1000.0
        else:
            visible, mask, anchors, linked, ft, timings = prepare()
        t = time.perf_counter()

        def lap(name: str) -> None:
            nonlocal t
            now_t = time.perf_counter()
            timings[name] = (now_t - t) * 1000.0
            t = now_t

        n = s.candidates_per_source
        if callable(query_vector):
            query_vector = query_vector()
            lap("embed")
        vec_rows, sims = vector_candidates(catalog, query_vector, mask, n, s.vector_scan_subset_below,
                                           s.vector_ann_exact_below, visible, user,
                                           (s.vector_binary_min_rows, s.vector_binary_candidates))
        lap("vector")
        hits: Mapping[int, GraphHit] = {}
        if any(anchors.values()):
            pool = np.asarray(vec_rows + [r for r, _ in ft], dtype=np.int64)  # rows the other signals found
            hits = graph_candidates(store, catalog, anchors, mask, s, frozenset(linked), (), sims, user, pool,
                                    functools.partial(self.eligible.view, catalog, user))
        graph_rows = _order_graph(hits, sims, catalog.col("score"), n)
        lap("graph")

        lists: dict[str, list[int]] = {"vector": vec_rows, "fulltext": [r for r, _ in ft], "graph": graph_rows}
        weights = {"vector": s.weight_vector, "fulltext": s.weight_fulltext, "graph": s.weight_graph, "quality": 1.0}
        if fusion:
            for name in ("vector", "fulltext", "graph"):
                weights[name] *= fusion.get(name, 1.0)
        if not any(lists.values()) and not query.strip():
            lists["quality"] = _top_quality(catalog, mask, now_ts, s, n)
        fusion_label = "rrf"  # how the reasons name the fused relevance
        if s.rank_fusion == "score" and "quality" not in lists:
            fusion_label = "score fusion"
            graph_weight = _graph_weights(hits)
            fused = score_fusion(lists, weights, {"vector": sims, "fulltext": dict(ft), "graph": graph_weight})
        else:
            fused = rrf(lists, weights, s.rrf_k)
        if sims is not None and s.vector_only_min_similarity > 0:
            # Seed 002 stage 3 (semantic filter), applied only where nothing else vouches for a
            # row: the vector list always has n rows, however unrelated the memory is.
            backed = set(lists["fulltext"]) | set(lists["graph"])
            floor = s.vector_only_min_similarity
            fused = {r: v for r, v in fused.items() if r in backed or sims[r] >= floor}
        if s.min_success_rate > 0 and fused:
            # Seed 002 stage 2: drop rows whose ratings say they mostly hurt, relaxed when that
            # would leave fewer than ``limit`` rows.
            h, b = catalog.col("helpful"), catalog.col("harmful")
            rated = {r: v for r, v in fused.items()
                     if h[r] + b[r] < s.min_success_samples or h[r] / (h[r] + b[r]) >= s.min_success_rate}
            if len(rated) >= min(limit, len(fused)):
                fused = rated
        if s.quality_prior_enabled and s.harmful_max_success > 0 and fused:
            # the quality prior drops what its ratings say clearly hurts, never relaxed: for the
            # agent, no advice beats advice that keeps failing (README "Counters that pay")
            cand = np.fromiter(fused.keys(), dtype=np.int64, count=len(fused))
            bad = clearly_harmful(catalog, cand, s)
            if bad.any():
                fused = {int(r): fused[int(r)] for r in cand[~bad]}
        if not fused:
            self.timings_ms = timings
            return []
        rows = np.fromiter(fused.keys(), dtype=np.int64, count=len(fused))
        rrf_scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
        relevance = rrf_scores / rrf_scores.max()
        other_tool = _other_tool(catalog, rows, tool) if s.tool_mismatch_penalty > 0 else None
        if other_tool is not None:
            relevance = np.where(other_tool, relevance * (1.0 - s.tool_mismatch_penalty), relevance)
        pinned = is_pinned(catalog, rows)
        quality = success = recency = draws = None
        evidence = np.zeros(len(rows))
        if s.quality_prior_enabled:
            quality, success, recency = quality_prior(catalog, rows, now_ts, s)
            explore = exploration(catalog, rows, s)
            quality = quality + explore
            if s.thompson_sampling:
                h, b = catalog.col("helpful")[rows], catalog.col("harmful")[rows]
                draws = self.rng.beta(h + 1.0, b + 1.0)
            evidence = record(catalog, rows, s)
            if fusion:
                scores = blend(relevance, quality, pinned, s, draws, quality_scale=fusion.get("quality", 1.0),
                               recency=recency, recency_scale=fusion.get("recency", 1.0)) + evidence
            else:
                scores = blend(relevance, quality, pinned, s, draws) + evidence
        else:
            scores = relevance
        lap("fuse")

        shortlist = np.argsort(-scores, kind="stable")[: max(3 * limit, 20)]
        picked, redundancy = mmr(catalog.vectors.vectors_of(rows[shortlist]), scores[shortlist], limit, s.mmr_lambda)
        chosen = [int(shortlist[i]) for i in picked]
        lap("mmr")

        ranks = {name: {row: i for i, row in enumerate(lst, start=1)} for name, lst in lists.items()}
        bm25 = dict(ft)
        ids = [catalog.ids[int(rows[i])] for i in chosen]
        learnings = {l.id: l for l in store.get_learnings(ids)}
        lap("fetch")
        out: list[ScoredLearning] = []
        for pos, (i, red) in enumerate(zip(chosen, redundancy), start=1):
            row = int(rows[i])
            learning = learnings.get(catalog.ids[row])
            if learning is None:
                continue
            reasons: list[str] = []
            signals: dict[str, float] = {"rrf": float(rrf_scores[i]), "relevance": float(relevance[i])}
            if row in ranks["vector"]:
                cos = float(sims[row]) if sims is not None else 0.0
                reasons.append(f"vector {cos:.2f} (rank {ranks['vector'][row]})")
                signals["vector"] = cos
                signals["vector_rank"] = ranks["vector"][row]
            elif sims is not None:
                signals["vector"] = float(sims[row])
            if row in ranks["fulltext"]:
                reasons.append(f"fulltext rank {ranks['fulltext'][row]} (bm25 {bm25[row]:.2f})")
                signals["fulltext_rank"] = ranks["fulltext"][row]
                signals["bm25"] = bm25[row]
            if row in hits:
                hit = hits[row]
                graph_rank = ranks["graph"].get(row)
                reasons.extend(hit.paths)
                signals["graph"] = hit.weight
                if graph_rank:
                    signals["graph_rank"] = graph_rank
            if "quality" in ranks and row in ranks["quality"]:
                reasons.append(f"top quality (no query), rank {ranks['quality'][row]}")
            reasons.append(f"{fusion_label} {rrf_scores[i]:.4f}")
            if other_tool is not None and other_tool[i]:
                reasons.append(f"bound to tool {catalog.tool[row]}, not {tool}: relevance -{s.tool_mismatch_penalty:.0%}")
                signals["other_tool"] = 1.0
            if quality is not None and success is not None and recency is not None:
                n_help, n_harm = int(catalog.col("helpful")[row]), int(catalog.col("harmful")[row])
                conf = float(catalog.col("confidence")[row])
                reasons.append(
                    f"quality {quality[i]:.2f} (success {success[i]:.2f} from {n_help} helpful/{n_harm} harmful, "
                    f"confidence {conf:.2f}, recency {recency[i]:.2f})"
                )
                signals["quality"] = float(quality[i])
                signals["recency"] = float(recency[i])
                if evidence[i] != 0:
                    reasons.append(f"record {evidence[i]:+.3f} ({n_help} helpful/{n_harm} harmful)")
                    signals["record"] = float(evidence[i])
                if explore[i] > 0:
                    reasons.append(f"exploration +{explore[i]:.2f} ({n_help + n_harm} ratings)")
                    signals["exploration"] = float(explore[i])
                if draws is not None:
                    reasons.append(f"thompson draw {draws[i]:.2f}")
                    signals["thompson"] = float(draws[i])
                if pinned[i]:
                    reasons.append(f"pinned +{s.pinned_boost:.2f}")
            if red > 0:
                reasons.append(f"diversity: {red:.2f} similar to a higher-ranked learning")
                signals["redundancy"] = red
            out.append(ScoredLearning(learning=learning, score=float(scores[i]), reasons=reasons, signals=signals, rank=pos))
        lap("explain")
        self.timings_ms = timings
        return out


def _other_tool(catalog: LearningCatalog, rows: np.ndarray, tool: str | None) -> np.ndarray | None:
    """True where the row's learning is bound to a tool other than ``tool`` (None without a tool).

    A learning written for one tool ("Dana's assistant books her meetings", create_calendar_event)
    is advice for that tool's calls: it matches a query about Dana made for send_email by its
    entity and words, yet applies there less than the send_email learnings and the tool-free ones.
    """
    if not tool:
        return None
    tools = catalog.tool
    return np.fromiter((tools[r] is not None and tools[r] != tool for r in rows.tolist()), dtype=bool, count=len(rows))


def _graph_weights(hits: Mapping[int, GraphHit]) -> dict[int, float]:
    """Each graph hit's path weight, read from the lazy hits' arrays (building every row's paths
    to read its weight cost ~15 ms per context() at 10k learnings)."""
    if isinstance(hits, GraphHits):
        return dict(zip(hits.rows.tolist(), hits.weights.tolist()))
    return {r: h.weight for r, h in hits.items()}


def _order_graph(hits: Mapping[int, GraphHit], sims: np.ndarray | None, score_col: np.ndarray, n: int) -> list[int]:
    """Graph candidates ranked by path weight, then cosine to the query, then online score."""
    if not hits:
        return []
    if isinstance(hits, GraphHits):  # weights as an array, no per-row objects
        rows, weight = hits.rows, hits.weights
    else:
        rows = np.fromiter(hits.keys(), dtype=np.int64, count=len(hits))
        weight = np.fromiter((h.weight for h in hits.values()), dtype=np.float64, count=len(hits))
    cos = sims[rows] if sims is not None else np.zeros(len(rows))
    order = np.lexsort((rows, -score_col[rows], -cos, -weight))
    return [int(r) for r in rows[order[: max(n, 1)]]]


def _top_quality(catalog: LearningCatalog, mask: np.ndarray, now_ts: float, settings: Settings, n: int) -> list[int]:
    """Eligible rows by quality prior, best first (the empty-query fallback)."""
    rows = np.flatnonzero(mask)
    if rows.size == 0:
        return []
    quality, _, _ = quality_prior(catalog, rows, now_ts, settings)
    quality = quality + np.where(is_pinned(catalog, rows), settings.pinned_boost, 0.0)
    order = np.argsort(-quality, kind="stable")[:n]
    return [int(r) for r in rows[order]]


def rank_learnings(
    retriever: Retriever,
    *,
    user: str,
    query: str,
    query_vector: np.ndarray | None,
    now: datetime,
    limit: int,
    tool: str | None = None,
    entities: Sequence[str] = (),
    topics: Sequence[str] = (),
    objective_type: str | None = None,
) -> list[ScoredLearning]:
    """Functional form of :meth:`Retriever.rank` (what ``search(over="learnings")`` calls)."""
    return retriever.rank(
        user=user, query=query, query_vector=query_vector, now=now, limit=limit, tool=tool,
        entities=entities, topics=topics, objective_type=objective_type,
    )
