"""Fit the event-search weights on some LoCoMo conversations and measure them on others.

    python -m benchmarks.locomo_tune --tune 0-4 --report 5-9 [--rounds 2] [--objective overall|macro]
        [--only search_weight_length,search_weight_question_turn]

The fit: every question of the ``--tune`` conversations is turned once into graphmem's per-event
signals (:meth:`EventSearch.signals`: cosine, BM25, entity links and text mentions, time words,
session dates, the cosine of the query without its anchored names, the turn priors), then coordinate ascent over
a small grid of each ``search_*`` weight re-ranks those signals with :meth:`EventSearch.rank` (the
same code ``Memory.search`` runs) and keeps a value only when it raises the objective: mean
evidence R@10 over the questions (``overall``) or the mean of the per-category R@10 (``macro``).
The ``--report`` conversations are never seen by the fit; the script prints R@10 per category on
both halves with graphmem's default settings and with the fitted ones, and the fitted values.

Data and ingest as in :mod:`benchmarks.locomo` (``--data``, ``--embed-cache``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.locomo import (
    CATEGORIES,
    DEFAULT_DATA,
    REPO,
    CachingEmbedder,
    parse_evidence,
    parse_indices,
    recall,
    turn_items,
)

#: the weights the fit may change, each with the values it tries
GRID: dict[str, tuple[float, ...]] = {
    "search_weight_fulltext": (0.5, 0.75, 1.0, 1.25, 1.5, 2.0),
    "search_weight_entity": (0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 0.8),
    "search_weight_mention": (0.0, 0.05, 0.1, 0.2, 0.3),
    "search_weight_neighbour": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
    "search_neighbour_decay": (0.3, 0.5, 0.7),
    "search_weight_time": (0.0, 0.1, 0.2, 0.3, 0.4),
    "search_weight_date": (0.0, 0.1, 0.2, 0.3),
    "search_weight_hop": (0.0, 0.2, 0.4, 0.6, 0.8),
    "search_hop_seeds": (3, 5, 8, 12),
    "search_weight_stripped": (0.0, 0.25, 0.5, 0.75, 1.0),
    "search_weight_session": (0.0, 0.1, 0.2, 0.4, 0.6),
    "search_weight_prf": (0.0, 0.1, 0.2, 0.3, 0.5),
    "search_prf_terms": (4, 8, 12, 16),
    "search_prf_docs": (1, 2, 3, 5),
    "search_session_decay": (0.8, 0.9, 0.95, 1.0),
    "search_weight_address": (0.0, 0.05, 0.1, 0.15, 0.2),
    "search_weight_rocchio": (0.0, 0.05, 0.1, 0.15, 0.2),
    "search_rocchio_docs": (3, 5, 8, 12),
    "search_weight_length": (0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2),
    "search_weight_question_turn": (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4),
    "search_weight_continuation": (0.0, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6),
    "search_continuation_seeds": (1, 2, 3, 4, 5, 8),
    "search_weight_terms": (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3),
}
#: settings that change the signals themselves (fixed while the signals are computed)
_SIGNAL_TIME = {"search_weight_stripped": 0.5, "search_weight_session": 0.1, "search_weight_length": 0.1,
                "search_weight_question_turn": 0.1, "search_weight_terms": 0.1}


class Question:
    """One question's precomputed signals and gold evidence."""

    def __init__(self, ci: int, category: int, gold: list[str], state: tuple[Any, ...], dia: list[str],
                 query: str = "") -> None:
        self.ci, self.category, self.gold, self.state, self.dia = ci, category, gold, state, dia
        self.query = query


def load(data_dir: Path, convs: Sequence[int], embed_cache: Path | None,
         embedder: Any = None) -> tuple[list[Question], list[Any]]:
    """Ingest the conversations and precompute every question's signals (MiniLM unless
    ``embedder`` is given)."""
    from graphmem import Memory
    from graphmem.config import Settings
    from graphmem.embed import SentenceTransformerEmbedder
    from graphmem.retrieve.event_arrays import entity_index, query_entities
    from graphmem.retrieve.search import EventSearch

    data = json.loads((data_dir / "locomo10.json").read_text())
    embedder = CachingEmbedder(embedder or SentenceTransformerEmbedder(), embed_cache)
    questions: list[Question] = []
    mems = []
    for ci in convs:
        sample = data[ci]
        mem = Memory(None, user=str(sample.get("sample_id", ci)), embedder=embedder)
        mem.record_events(turn_items(sample, captions=True))
        store = mem.store
        layout = store.event_layout(mem.user)
        events = store.events_by_ids(layout.order)
        dia = [str(events[i].metadata.get("dia_id")) for i in layout.order]
        searcher = EventSearch(store, embedder, Settings(**_SIGNAL_TIME), mem.user)
        index = entity_index(store, mem.user, layout)
        for qa in sample["qa"]:
            gold = parse_evidence(qa.get("evidence", []))
            if not qa.get("question") or not gold:
                continue
            query = str(qa["question"]).strip()[: searcher.settings.max_query_chars]
            wanted = query_entities(query, (), index)
            sig = searcher.signals(query, layout, index, wanted)
            questions.append(Question(ci, int(qa.get("category", 0)), gold, (searcher, sig, layout, index, wanted), dia, query))
        mems.append(mem)
    embedder.save()
    return questions, mems


def evaluate(questions: Sequence[Question], settings: Any, k: int = 10) -> dict[str, float]:
    """R@k (%) overall, per category and their mean ("macro") under ``settings``."""
    per: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        searcher, sig, layout, index, wanted = q.state
        searcher.settings = settings
        top, _, _ = searcher.rank(sig, layout, index, wanted, k)
        per[CATEGORIES.get(q.category, str(q.category))].append(recall([q.dia[i] for i in top], q.gold, k))
    out = {c: 100 * float(np.mean(v)) for c, v in per.items()}
    out["overall"] = 100 * float(np.mean([x for v in per.values() for x in v])) if per else 0.0
    out["macro"] = float(np.mean([out[c] for c in per])) if per else 0.0
    return out


def fit(questions: Sequence[Question], base: Any, rounds: int, objective: str,
        only: Sequence[str] = ()) -> tuple[dict[str, Any], float]:
    """Coordinate ascent over :data:`GRID` (only the weights in ``only`` when given); returns
    the changed settings and the objective."""
    best: dict[str, Any] = {}
    score = evaluate(questions, base)[objective]
    grid = {name: values for name, values in GRID.items() if not only or name in only}
    for r in range(rounds):
        changed = False
        for name, values in grid.items():
            for value in values:
                if best.get(name, getattr(base, name)) == value:
                    continue
                trial = {**best, name: value}
                got = evaluate(questions, base.model_copy(update=trial))[objective]
                if got > score + 1e-9:
                    best, score, changed = trial, got, True
            print(f"round {r + 1} {name}: {best.get(name, getattr(base, name))} -> {objective} {score:.2f}", flush=True)
        if not changed:
            break
    return best, score


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    from graphmem.config import Settings

    ap = argparse.ArgumentParser(prog="python -m benchmarks.locomo_tune", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("GRAPHMEM_LOCOMO_DATA") or DEFAULT_DATA))
    ap.add_argument("--tune", default="0-4", help="conversations the weights are fitted on")
    ap.add_argument("--report", default="5-9", help="held-out conversations, measured only")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--objective", choices=["overall", "macro"], default="overall")
    ap.add_argument("--embed-cache", type=Path, default=None)
    ap.add_argument("--only", default="", help="comma-separated search_* weights to fit (default: all of the grid)")
    ap.add_argument("--json-out", type=Path, default=REPO / "benchmarks" / "results" / "locomo_tune.json")
    args = ap.parse_args(argv)
    if not (args.data / "locomo10.json").exists():
        print(f"locomo_tune: skipped, {args.data / 'locomo10.json'} is absent (see benchmarks/locomo.py)")
        return 0
    tune, held = parse_indices(args.tune) or [], parse_indices(args.report) or []
    if set(tune) & set(held):
        print("--tune and --report must not share conversations")
        return 2
    t0 = time.perf_counter()
    tq, _ = load(args.data, tune, args.embed_cache)
    hq, _ = load(args.data, held, args.embed_cache) if held else ([], [])
    print(f"signals of {len(tq)} + {len(hq)} questions in {time.perf_counter() - t0:.0f} s", flush=True)
    base = Settings()
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = [x for x in only if x not in GRID]
    if unknown:
        print(f"--only: not in the grid: {', '.join(unknown)}")
        return 2
    fitted, _ = fit(tq, base, args.rounds, args.objective, only)
    rows = {}
    for label, qs in (("tuning", tq), ("held-out", hq)):
        if qs:
            rows[label] = {"defaults": evaluate(qs, base), "fitted": evaluate(qs, base.model_copy(update=fitted))}
    cols = ["overall", *CATEGORIES.values()]
    print("R@10 (%)        " + " ".join(f"{c[:11]:>11}" for c in cols))
    for label, by in rows.items():
        for which, vals in by.items():
            print(f"{label:9s} {which:9s}" + " ".join(f"{vals.get(c, float('nan')):11.1f}" for c in cols))
    print("fitted:", json.dumps(fitted))
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps({"tune": tune, "report": held, "objective": args.objective,
                                         "fitted": fitted, "r_at_10": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
