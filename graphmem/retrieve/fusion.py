"""Fusion and re-ranking: weighted reciprocal-rank or score fusion, the quality prior, MMR diversity.

All functions are pure numpy over catalog rows; the weights come from :class:`Settings`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from graphmem.config import Settings
from graphmem.store.catalog import TIER_CODE, LearningCatalog

_PINNED = TIER_CODE["pinned"]


def rrf(lists: Mapping[str, Sequence[int]], weights: Mapping[str, float], k: int) -> dict[int, float]:
    """Weighted reciprocal-rank fusion: score(row) = Σ_list weight / (k + rank), rank from 1."""
    fused: dict[int, float] = {}
    for name, rows in lists.items():
        w = weights.get(name, 1.0)
        if w == 0:
            continue
        for rank, row in enumerate(rows, start=1):
            fused[row] = fused.get(row, 0.0) + w / (k + rank)
    return fused


def score_fusion(
    lists: Mapping[str, Sequence[int]],
    weights: Mapping[str, float],
    scores: Mapping[str, Mapping[int, float] | np.ndarray | Any | None],
) -> dict[int, float]:
    """Weighted fusion of the signals' own scores, each min-max scaled over the candidates.

    The candidates are the rows of every list with a non-zero weight; a signal's raw score of a
    candidate (cosine for ``vector``, BM25 for ``fulltext``, path weight for ``graph``: an array
    indexed by row or a row → score mapping, a row it lacks scoring 0) is scaled to [0, 1] between
    the lowest and the highest over the candidates, then score(row) = Σ weight · scaled. Unlike
    reciprocal ranks, the scale keeps how far apart rows are: graph ties stay ties (the cosine
    breaks them), and a row that two text signals rank mid-way no longer outscores one the graph
    links directly to the query's anchors.
    """
    active = {name: w for name, w in weights.items() if w and name in lists}
    rows = np.fromiter(dict.fromkeys(r for name in active for r in lists[name]), dtype=np.int64)
    if rows.size == 0:
        return {}
    fused = np.zeros(rows.size, dtype=np.float64)
    for name, w in active.items():
        raw = scores.get(name)
        if raw is None:
            continue
        if isinstance(raw, Mapping):
            values = np.fromiter((raw.get(int(r), 0.0) for r in rows), dtype=np.float64, count=rows.size)
        else:  # an array, or the lazy cosines of an approximate vector search (``sims[rows]``)
            values = np.asarray(raw[rows], dtype=np.float64)
        low, high = float(values.min()), float(values.max())
        if high > low:
            fused += w * (values - low) / (high - low)
        elif high > 0:
            fused += w
    return {int(r): float(v) for r, v in zip(rows, fused)}


def quality_prior(
    catalog: LearningCatalog,
    rows: np.ndarray,
    now_ts: float,
    settings: Settings,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-row quality in [0, 1], its success estimate, and the recency factor.

    success: the Beta(helpful+1, harmful+1) posterior mean, or a draw from it when ``rng`` is
    given (Thompson sampling, seed 002). quality = ½·success + ¼·confidence + ¼·recency, where
    recency = 0.5 ** (days since last update / recency_half_life_days).
    """
    helpful = catalog.col("helpful")[rows]
    harmful = catalog.col("harmful")[rows]
    success = rng.beta(helpful + 1.0, harmful + 1.0) if rng is not None else (helpful + 1.0) / (helpful + harmful + 2.0)
    confidence = catalog.col("confidence")[rows]
    age_days = np.maximum(0.0, (now_ts - catalog.col("updated_at")[rows]) / 86400.0)
    half_life = max(settings.recency_half_life_days, 1e-9)
    recency = np.power(0.5, np.nan_to_num(age_days, nan=0.0) / half_life)
    quality = 0.5 * success + 0.25 * confidence + 0.25 * recency
    return quality, success, recency


def exploration(catalog: LearningCatalog, rows: np.ndarray, settings: Settings) -> np.ndarray:
    """Per-row exploration bonus on the quality: ``exploration_bonus`` for a learning never rated,
    fading linearly to 0 at ``exploration_ratings`` helpful+harmful ratings (all 0 when off)."""
    k = settings.exploration_ratings
    if settings.exploration_bonus <= 0 or k <= 0:
        return np.zeros(len(rows))
    ratings = catalog.col("helpful")[rows] + catalog.col("harmful")[rows]
    return settings.exploration_bonus * np.clip(1.0 - ratings / k, 0.0, 1.0)


def record(catalog: LearningCatalog, rows: np.ndarray, settings: Settings) -> np.ndarray:
    """Per-row evidence-weighted record, added to the blended score (part of the quality prior).

    ``record_weight · (mean − ½) · n / (n + record_ratings)`` with n = helpful + harmful and mean
    the Beta(helpful+1, harmful+1) posterior mean: 0 for a learning never rated, a small nudge
    after a few ratings, and up to ±½·record_weight for a long record, so a learning that keeps
    failing falls under a same-scope one that helps (or is new) even when it matches the query a
    little better. All 0 when ``record_weight`` is 0.
    """
    if settings.record_weight <= 0:
        return np.zeros(len(rows))
    helpful = catalog.col("helpful")[rows].astype(np.float64)
    harmful = catalog.col("harmful")[rows].astype(np.float64)
    n = helpful + harmful
    mean = (helpful + 1.0) / (n + 2.0)
    return settings.record_weight * (mean - 0.5) * n / (n + settings.record_ratings)


def wilson_upper(helpful: np.ndarray, n: np.ndarray, z: float) -> np.ndarray:
    """Upper Wilson score bound of the success share helpful / n (1 where n is 0)."""
    n = np.asarray(n, dtype=np.float64)
    safe = np.maximum(n, 1.0)
    p = np.asarray(helpful, dtype=np.float64) / safe
    z2 = z * z
    centre = p + z2 / (2.0 * safe)
    margin = z * np.sqrt(p * (1.0 - p) / safe + z2 / (4.0 * safe * safe))
    return np.where(n > 0, (centre + margin) / (1.0 + z2 / safe), 1.0)


def clearly_harmful(catalog: LearningCatalog, rows: np.ndarray, settings: Settings) -> np.ndarray:
    """True where the ratings say with confidence that the learning fails more than it helps: the
    Wilson upper bound (z = ``harmful_z``) of helpful / (helpful + harmful) is below
    ``harmful_max_success`` (all False when that is 0). With z = 1.96 and the default 0.5: 0 of 4
    (``evolve_min_ratings``: run_cycle can still rewrite it), 1 of 8, 2 of 11 or 3 of 14 helpful. Pinned learnings are never dropped."""
    if settings.harmful_max_success <= 0 or len(rows) == 0:
        return np.zeros(len(rows), dtype=bool)
    helpful = catalog.col("helpful")[rows].astype(np.float64)
    n = helpful + catalog.col("harmful")[rows]
    upper = wilson_upper(helpful, n, settings.harmful_z)
    return np.asarray((upper < settings.harmful_max_success) & ~is_pinned(catalog, rows))


def blend(
    relevance: np.ndarray,
    quality: np.ndarray,
    pinned: np.ndarray,
    settings: Settings,
    thompson: np.ndarray | None = None,
    *,
    quality_scale: float = 1.0,
    recency: np.ndarray | None = None,
    recency_scale: float = 1.0,
) -> np.ndarray:
    """Final scores from normalised relevance (max 1) and quality (seed 002 stage 4).

    Without Thompson sampling: (semantic_weight·relevance + quality_weight·quality) divided by
    the two weights' sum; with it, thompson_weight·draw is added and the three weights share the
    divisor. Pinned learnings get ``pinned_boost`` on top. Learned fusion
    (:mod:`graphmem.retrieve.learned`) scales ``quality_weight`` by ``quality_scale`` and the
    recency share of the quality by ``recency_scale`` (both 1.0: unchanged).
    """
    ws, wq = settings.semantic_weight, settings.quality_weight * quality_scale
    score = ws * relevance + wq * quality
    if recency is not None and recency_scale != 1.0:
        score = score + settings.quality_weight * 0.25 * (recency_scale - 1.0) * recency
    total = ws + wq
    if thompson is not None:
        score = score + settings.thompson_weight * thompson
        total += settings.thompson_weight
    score = score / total if total > 0 else relevance
    return score + np.where(pinned, settings.pinned_boost, 0.0)


def mmr(
    vectors: np.ndarray, scores: np.ndarray, k: int, lam: float
) -> tuple[list[int], list[float]]:
    """Maximal marginal relevance over unit vectors (seed 002 stage 5).

    Greedily picks ``k`` indices maximising lam·score − (1−lam)·max cosine to those already
    picked; returns the picked indices and each one's redundancy (that max cosine, 0 for the
    first). lam = 1 keeps the score order.
    """
    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return [], []
    if lam >= 1.0 or n == 1:
        order = list(np.argsort(-scores, kind="stable")[:k])
        return [int(i) for i in order], [0.0] * len(order)
    sims = vectors @ vectors.T
    max_sim = np.zeros(n)
    picked: list[int] = []
    redundancy: list[float] = []
    available = np.ones(n, dtype=bool)
    for _ in range(k):
        value = lam * scores - (1.0 - lam) * max_sim
        value[~available] = -np.inf
        i = int(np.argmax(value))
        picked.append(i)
        redundancy.append(float(max_sim[i]))
        available[i] = False
        max_sim = np.maximum(max_sim, sims[i])
    return picked, redundancy


def is_pinned(catalog: LearningCatalog, rows: np.ndarray) -> np.ndarray:
    """True where the row's tier is pinned."""
    return np.asarray(catalog.col("tier")[rows] == _PINNED)
