"""Re-ranking experiments over graphmem's event-search candidates on LoCoMo (measured, not shipped).

    python -m benchmarks.locomo_rerank --tune 0-4 --report 5-9 --embed-cache FILE [--data DIR]

Every question of both halves is ranked once by ``Memory.search``'s ranking (the default
settings, :meth:`EventSearch.rank`), and its best ``--candidates`` turns are kept with their
signals. Three re-rankings of those candidates are then measured, R@10 per category on each half:

* **learned ranker**: a linear score over the candidates' features (the ranking's signals and
  final score, log rank, turn length, image caption, question mark, the count of better-ranked
  candidates from the same session, cosines to the best 3 hits and to the query plus each of
  them), fitted by a listwise softmax loss with L2 (``--l2``) on the tuning half; the tuning half
  is also scored leave-one-conversation-out; ``--interactions`` multiplies every feature by
  question-form indicators (list question, *when*, *how many*, two speakers named, *would/might*);
* **query expansion by hit**: each candidate's best cosine to the query vector plus one of the
  best 3 hits' vectors, z-scored, added with ``--weight-chain``;
* **per-speaker diversity for list questions**: for a *what/which* + plural question naming a
  speaker, the top 10 are picked from the best 40 with each further turn of a session already
  chosen counting ``--decay`` times less.

Data and ingest as in :mod:`benchmarks.locomo`.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.locomo import CATEGORIES, DEFAULT_DATA, parse_indices

LIST_QUESTION = re.compile(r"^\s*(?:what|which)\s+(?:[a-z]+\s+){0,2}?[a-z]{2,}[^s\W]s\s+"
                           r"(?:do|does|did|has|have|had|are|were|is|was|can|would|might)\b", re.I)
_HYPOTHETICAL = re.compile(r"^\s*(?:would|might|could)\b|\blikely\b|\bmight\b", re.I)
_HOW_MANY = re.compile(r"^\s*how many\b", re.I)
FEATURES = ("final", "dense", "vector", "fulltext", "base", "entity", "mention", "address", "temporal", "date",
            "near", "hop", "prf", "rocchio", "log_rank", "chain_max", "chain_first", "query_chain_max",
            "same_session_above", "log_length", "image", "asks")


def candidates(data: Path, convs: Sequence[int], embed_cache: Path | None, c: int,
               update: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each question's best ``c`` turns under the default ranking (with the settings in
    ``update`` changed), with their features."""
    from benchmarks.locomo_tune import load
    from graphmem.config import Settings
    from graphmem.retrieve.event_arrays import asks_when

    questions, _mems = load(data, convs, embed_cache)
    base = Settings().model_copy(update=update or {})
    out = []
    for q in questions:
        searcher, sig, layout, index, wanted = q.state
        searcher.settings = base
        top, final, parts = searcher.rank(sig, layout, index, wanted, c)
        m = len(top)
        dense = np.asarray(sig.dense) if sig.stripped is None else (
            (1 - base.search_weight_stripped) * np.asarray(sig.dense)
            + base.search_weight_stripped * np.asarray(sig.stripped))
        vecs = searcher.store.event_catalog.vectors.matrix[layout.rows[top]].astype(np.float32)
        seeds = vecs[:3]
        chain = vecs @ seeds.T
        chain[np.arange(len(seeds)), np.arange(len(seeds))] = 0.0
        plus = np.stack([(sig.qvec + s) / (np.linalg.norm(sig.qvec + s) or 1.0) for s in seeds])
        session = [layout.session[i] for i in top]
        seen: dict[str, int] = {}
        above = []
        for x in session:
            above.append(seen.get(x, 0))
            seen[x] = seen.get(x, 0) + 1
        text = [layout.content[i] for i in top]
        gold = set(q.gold)
        feats = {
            "final": final[top], "dense": dense[top], "vector": parts["vector"][top], "fulltext": parts["fulltext"][top],
            "base": parts["base"][top], "entity": sig.entity[top], "mention": sig.mention[top],
            "address": sig.address[top] if sig.address is not None else np.zeros(m), "temporal": sig.temporal[top],
            "date": sig.date[top], "near": parts["near"][top], "hop": parts["hop"][top], "prf": parts["prf"][top],
            "rocchio": parts["rocchio"][top], "log_rank": np.log1p(np.arange(m, dtype=float)),
            "chain_max": chain.max(1), "chain_first": chain[:, 0], "query_chain_max": (vecs @ plus.T).max(1),
            "same_session_above": np.array(above, float), "log_length": np.log1p([len(t) for t in text]),
            "image": np.array(["[shares an image" in t for t in text], float), "asks": np.array(["?" in t for t in text], float),
        }
        form = np.array([1.0, bool(LIST_QUESTION.search(q.query)), asks_when(q.query), bool(_HOW_MANY.search(q.query)),
                         len(wanted) >= 2, bool(_HYPOTHETICAL.search(q.query))], float)
        out.append({"ci": q.ci, "cat": q.category, "n_gold": len(q.gold), "session": session, "form": form,
                    "speaker": float(sig.entity.max(initial=0.0)) > 0,
                    "label": np.array([q.dia[i] in gold for i in top], float),
                    "X": np.stack([feats[f] for f in FEATURES], 1)})
    return out


def recall_table(recs: Sequence[dict[str, Any]], score: Callable[[dict[str, Any]], np.ndarray]) -> list[float]:
    """R@10 (%) overall, multi-hop, open-domain, adversarial, temporal, single-hop."""
    per: dict[int, list[float]] = {}
    for r in recs:
        order = np.argsort(-score(r), kind="stable")
        per.setdefault(r["cat"], []).append(float(r["label"][order[:10]].sum()) / r["n_gold"])
    every = [x for v in per.values() for x in v]
    return [100 * float(np.mean(every))] + [100 * float(np.mean(per.get(c, [np.nan]))) for c in (1, 3, 5, 2, 4)]


def _design(r: dict[str, Any], interactions: bool) -> np.ndarray:
    X = r["X"]
    return np.einsum("ce,q->ceq", X, r["form"]).reshape(X.shape[0], -1) if interactions else X


def fit_ranker(recs: Sequence[dict[str, Any]], l2: float, interactions: bool) -> Callable[[dict[str, Any]], np.ndarray]:
    """A linear scorer fitted by listwise softmax cross-entropy (gold turns as the target)."""
    from scipy.optimize import minimize

    data = [(_design(r, interactions), r["label"]) for r in recs if r["label"].sum() > 0]
    allx = np.concatenate([x for x, _ in data])
    mu, sd = allx.mean(0), allx.std(0) + 1e-6

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = 0.0, np.zeros_like(w)
        for x, y in data:
            z = (x - mu) / sd
            s = z @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            t = y / y.sum()
            total -= float((t * np.log(p + 1e-12)).sum())
            grad -= z.T @ (t - p)
        return total / len(data) + l2 * float(w @ w), grad / len(data) + 2 * l2 * w

    w0 = np.zeros(allx.shape[1])
    w0[0] = 3.0  # start from the default ranking (the final score is the first feature)
    w = minimize(loss, w0, jac=True, method="L-BFGS-B", options={"maxiter": 300}).x
    return lambda r: ((_design(r, interactions) - mu) / sd) @ w


def _diverse(r: dict[str, Any], decay: float, pool: int = 40) -> np.ndarray:
    final = r["X"][:, 0]
    n = final.shape[0]
    if not (r["form"][1] and r["speaker"]):
        return -np.arange(n, dtype=float)
    seen: dict[str, int] = {}
    chosen: list[int] = []
    left = list(range(min(pool, n)))
    while left and len(chosen) < 10:
        best = max(left, key=lambda p: final[p] * decay ** seen.get(r["session"][p], 0))
        left.remove(best)
        chosen.append(best)
        seen[r["session"][best]] = seen.get(r["session"][best], 0) + 1
    order = chosen + [i for i in range(n) if i not in chosen]
    score = np.zeros(n)
    score[order] = -np.arange(n, dtype=float)
    return score


def _zpos(x: np.ndarray) -> np.ndarray:
    return np.clip((x - x.mean()) / (x.std() or 1.0), 0.0, None) / 4.0  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.locomo_rerank", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("GRAPHMEM_LOCOMO_DATA") or DEFAULT_DATA))
    ap.add_argument("--tune", default="0-4")
    ap.add_argument("--report", default="5-9")
    ap.add_argument("--embed-cache", type=Path, default=None)
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--l2", type=float, default=0.003)
    ap.add_argument("--interactions", action="store_true")
    ap.add_argument("--weight-chain", type=float, default=0.05)
    ap.add_argument("--decay", type=float, default=0.9)
    ap.add_argument("--without-priors", action="store_true", help="rank the candidates with the turn priors off")
    args = ap.parse_args(argv)
    if not (args.data / "locomo10.json").exists():
        print(f"locomo_rerank: skipped, {args.data / 'locomo10.json'} is absent (see benchmarks/locomo.py)")
        return 0
    update = {"search_weight_length": 0.0, "search_weight_question_turn": 0.0} if args.without_priors else {}
    tune = candidates(args.data, parse_indices(args.tune) or [], args.embed_cache, args.candidates, update)
    held = candidates(args.data, parse_indices(args.report) or [], args.embed_cache, args.candidates, update)
    chain = FEATURES.index("query_chain_max")
    rows: dict[str, tuple[list[float], list[float]]] = {}
    default = lambda r: -np.arange(r["X"].shape[0], dtype=float)  # noqa: E731
    rows["default ranking"] = (recall_table(tune, default), recall_table(held, default))
    ranker = fit_ranker(tune, args.l2, args.interactions)
    pooled: list[tuple[dict[str, Any], np.ndarray]] = []
    for ci in sorted({r["ci"] for r in tune}):
        fold = fit_ranker([r for r in tune if r["ci"] != ci], args.l2, args.interactions)
        pooled += [(r, fold(r)) for r in tune if r["ci"] == ci]
    cv = {id(r): s for r, s in pooled}
    rows["learned ranker (tuning: leave one conversation out)"] = (
        recall_table(tune, lambda r: cv[id(r)]), recall_table(held, ranker))
    rows[f"query expansion by hit {args.weight_chain}"] = tuple(  # type: ignore[assignment]
        recall_table(qs, lambda r: r["X"][:, 0] + args.weight_chain * _zpos(r["X"][:, chain])) for qs in (tune, held))
    rows[f"list questions: per-session decay {args.decay}"] = tuple(  # type: ignore[assignment]
        recall_table(qs, lambda r: _diverse(r, args.decay)) for qs in (tune, held))
    cols = ["overall", "multi-hop", "open-domain", "adversarial", "temporal", "single-hop"]
    print(f"R@10 (%) over each question's best {args.candidates} turns; columns: " + ", ".join(cols))
    for name, (t, h) in rows.items():
        print(f"{name:55s} tuning " + " ".join(f"{x:5.1f}" for x in t) + " | held-out " + " ".join(f"{x:5.1f}" for x in h))
    print("categories:", {k: v for k, v in CATEGORIES.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
