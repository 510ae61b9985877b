"""Fusion weights that learn from outcomes (online learning to rank, off by default).

``Settings.fusion_learning`` turns it on. Each user then has a ``FusionWeights`` node holding one
multiplier per signal of the learnings ranking (:data:`SIGNALS`): ``vector``, ``fulltext`` and
``graph`` multiply ``weight_vector`` / ``weight_fulltext`` / ``weight_graph`` in the rank fusion,
``quality`` multiplies ``quality_weight``, and ``recency`` scales the recency share inside the
quality prior (1.0 everywhere = the defaults).

**Features.** When ``context()`` shows learnings, each one's features are kept in memory (a
bounded map from context id): for the three candidate lists ``(k + 1) / (k + rank)`` (0 when
the list did not find it; ``k`` = ``rrf_k``), and its quality and recency in [0, 1].

**Labels.** From ``record_outcome``: ``helpful`` ids and the ``used`` ids of an accepted outcome
are positive; ``harmful`` ids, the ``used`` ids of a rejected outcome, and (when ``used`` is
given) the shown learnings the agent did not use are negative. An outcome with no positive or
no negative teaches nothing.

**Step.** Each multiplier moves multiplicatively towards the signals that ranked the positives
above the negatives: ``m ← clip(m · exp(fusion_learn_rate · (mean feature of the positives −
mean feature of the negatives)), fusion_weight_min, fusion_weight_max)``.

**Ratchet.** The last ``fusion_learn_examples`` labelled outcomes are kept; after a step, the
replay accuracy (share of positive/negative pairs ordered right by the fused score, averaged over
the kept outcomes) of the new multipliers is compared with that of the best multipliers so far on
the same outcomes. A step that lowers it by more than ``fusion_ratchet_tolerance`` is rolled back
to the best multipliers (counted in ``rollbacks``); otherwise it stays, and becomes the best when
it is at least as good.

Outcomes for contexts served by another process (or before a reopen) teach nothing: their
features are not known there.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from graphmem.config import Settings

#: the signals with a learned multiplier, in feature order
SIGNALS: tuple[str, ...] = ("vector", "fulltext", "graph", "quality", "recency")
_LISTS = ("vector", "fulltext", "graph")
#: the share of recency inside the quality prior (quality = ½ success + ¼ confidence + ¼ recency)
RECENCY_SHARE = 0.25
#: contexts whose features are kept for their outcome
FEATURE_CACHE = 512


def default_weights() -> dict[str, float]:
    """Every multiplier at 1.0 (the Settings weights unchanged)."""
    return dict.fromkeys(SIGNALS, 1.0)


def bounds(settings: Settings) -> tuple[float, float]:
    """The multipliers' bounds, always including 1.0."""
    return min(settings.fusion_weight_min, 1.0), max(settings.fusion_weight_max, 1.0)


def features(signals: Mapping[str, float], rrf_k: float) -> list[float]:
    """One shown learning's features from its ``ScoredLearning.signals`` (see module docstring)."""
    out = []
    for name in _LISTS:
        rank = signals.get(f"{name}_rank")
        out.append((rrf_k + 1.0) / (rrf_k + float(rank)) if rank else 0.0)
    out.append(float(signals.get("quality", 0.0)))
    out.append(float(signals.get("recency", 0.0)))
    return out


def labels(
    shown: Sequence[str], verdict: str, used: Sequence[str] | None, helpful: Iterable[str], harmful: Iterable[str]
) -> dict[str, int]:
    """learning id → +1 (positive) or -1 (negative) for the shown learnings an outcome judged."""
    out: dict[str, int] = {}
    shown_set = set(shown)
    if used is not None:
        for ident in shown:
            if ident not in used:
                out[ident] = -1
        if verdict in ("accepted", "rejected"):
            for ident in used:
                if ident in shown_set:
                    out[ident] = 1 if verdict == "accepted" else -1
    for ident in helpful:
        if ident in shown_set:
            out[ident] = 1
    for ident in harmful:
        if ident in shown_set:
            out[ident] = -1
    return out


def fused_scores(weights: Mapping[str, float], rows: Sequence[Sequence[float]], settings: Settings) -> list[float]:
    """The ranking's final score (before the pinned boost and MMR) of feature rows under the
    multipliers: relevance (weighted list sum, scaled to max 1) blended with the quality prior."""
    base = {"vector": settings.weight_vector, "fulltext": settings.weight_fulltext, "graph": settings.weight_graph}
    rel = [sum(weights.get(n, 1.0) * base[n] * r[i] for i, n in enumerate(_LISTS)) for r in rows]
    top = max(rel) if rel else 0.0
    rel = [x / top for x in rel] if top > 0 else rel
    ws = settings.semantic_weight
    wq = settings.quality_weight * weights.get("quality", 1.0) if settings.quality_prior_enabled else 0.0
    extra = settings.quality_weight * RECENCY_SHARE * (weights.get("recency", 1.0) - 1.0)
    total = ws + wq or 1.0
    return [(ws * x + wq * r[3] + (extra * r[4] if wq else 0.0)) / total for x, r in zip(rel, rows)]


def replay_accuracy(weights: Mapping[str, float], examples: Sequence[Mapping[str, Any]], settings: Settings) -> float:
    """Share of positive/negative pairs the multipliers order right (ties count half), averaged
    over the examples that have both; 1.0 when none has."""
    accs = []
    for ex in examples:
        scores = fused_scores(weights, ex["x"], settings)
        pos = [s for s, y in zip(scores, ex["y"]) if y > 0]
        neg = [s for s, y in zip(scores, ex["y"]) if y < 0]
        if not pos or not neg:
            continue
        good = sum(1.0 if p > q + 1e-12 else 0.5 if abs(p - q) <= 1e-12 else 0.0 for p in pos for q in neg)
        accs.append(good / (len(pos) * len(neg)))
    return sum(accs) / len(accs) if accs else 1.0


def step(weights: Mapping[str, float], rows: Sequence[Sequence[float]], ys: Sequence[int],
         settings: Settings) -> dict[str, float] | None:
    """The multipliers after one outcome's step, or None when it teaches nothing."""
    pos = [r for r, y in zip(rows, ys) if y > 0]
    neg = [r for r, y in zip(rows, ys) if y < 0]
    if not pos or not neg:
        return None
    lo, hi = bounds(settings)
    out = {}
    for i, name in enumerate(SIGNALS):
        gap = sum(r[i] for r in pos) / len(pos) - sum(r[i] for r in neg) / len(neg)
        value = weights.get(name, 1.0) * math.exp(settings.fusion_learn_rate * gap)
        out[name] = min(hi, max(lo, value))
    return out


def new_state() -> dict[str, Any]:
    """The state of a user no outcome has moved yet."""
    return {"weights": default_weights(), "best": default_weights(), "examples": [], "updates": 0, "rollbacks": 0}


def learn(state: Mapping[str, Any], rows: Sequence[Sequence[float]], ys: Sequence[int],
          settings: Settings) -> tuple[dict[str, Any], str]:
    """One outcome applied to a state: (new state, "kept" | "rolled_back" | "no_signal")."""
    out = {**new_state(), **{k: v for k, v in state.items()}}
    weights = {**default_weights(), **out["weights"]}
    best = {**default_weights(), **(out["best"] or weights)}
    moved = step(weights, rows, ys, settings)
    if moved is None:
        return out, "no_signal"
    examples = [*out["examples"], {"x": [list(map(float, r)) for r in rows], "y": [int(y) for y in ys]}]
    examples = examples[-max(int(settings.fusion_learn_examples), 1):]
    out["examples"] = examples
    new_acc = replay_accuracy(moved, examples, settings)
    best_acc = replay_accuracy(best, examples, settings)
    if new_acc < best_acc - settings.fusion_ratchet_tolerance:
        out["weights"], out["best"] = dict(best), dict(best)
        out["rollbacks"] = int(out["rollbacks"]) + 1
        return out, "rolled_back"
    out["weights"] = moved
    out["best"] = moved if new_acc >= best_acc else best
    out["updates"] = int(out["updates"]) + 1
    return out, "kept"


class FeatureCache:
    """context id → {learning id: features} for the contexts this process served (bounded)."""

    def __init__(self, size: int = FEATURE_CACHE) -> None:
        self.size = size
        self._items: OrderedDict[str, dict[str, list[float]]] = OrderedDict()

    def put(self, context_id: str, shown: Mapping[str, list[float]]) -> None:
        """Remember one context's shown learnings' features."""
        self._items[context_id] = dict(shown)
        self._items.move_to_end(context_id)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def pop(self, context_id: str) -> dict[str, list[float]] | None:
        """The features of one context (forgotten afterwards: one outcome per context)."""
        return self._items.pop(context_id, None)
