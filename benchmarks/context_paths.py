"""Same-run comparison of context() code paths on a scale benchmark file.

    python -m benchmarks.context_paths PATH [--queries 150] [--rounds 1]

PATH is a file kept by ``python -m benchmarks.scale --keep-dir DIR`` (e.g.
DIR/scale_10000_minilm_10000_0.kuzu). One process opens it once per variant of the Settings
below (the Memories share the store), and runs each query on every variant in turn, then the
bare query embedding, so machine load hits all of them alike (each context()'s Application is
written between the timed calls, not by the background writer during the next one):

- ``old``: neither of the two below (the code path before them);
- ``blocks``: ``vector_scan_blocks`` (the user's rows kept gathered for the vector scan);
- ``overlap``: ``context_overlap_embedding`` (filters and full-text search in a helper thread
  while the query is embedded);
- ``both``: the defaults.

Reports wall and CPU (the whole process: helper and writer threads included) p50/p95 per
variant, each p50 over the bare embedding's p50 of the same run, the median of the paired
per-query differences to ``old`` (the same query, moments apart), and whether every variant
ranked the same learnings with the same scores as ``old`` (``rank_learnings``, no Application
recorded, fresh Memories on one fixed clock so the seeded draws and the recency match). Results: benchmarks/results/local/context_paths.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.scale import RESULTS, make_embedder, pct, queries

VARIANTS: dict[str, dict[str, bool]] = {
    "old": {"vector_scan_blocks": False, "context_overlap_embedding": False},
    "blocks": {"vector_scan_blocks": True, "context_overlap_embedding": False},
    "overlap": {"vector_scan_blocks": False, "context_overlap_embedding": True},
    "both": {"vector_scan_blocks": True, "context_overlap_embedding": True},
}


def same_ranking(path: Path, embedder: Any, qs: list[dict[str, Any]]) -> dict[str, int]:
    """Per variant, how many queries ranked other ids or scores than ``old`` (0: identical)."""
    from graphmem import Memory, Settings

    fixed = datetime.now(UTC)  # recency depends on the clock: all variants rank at one instant
    mems = {name: Memory(path, user="alice", embedder=embedder, settings=Settings(**flags), clock=lambda: fixed)
            for name, flags in VARIANTS.items()}
    differ = {name: 0 for name in VARIANTS}
    try:
        for q in qs:
            got = {}
            for name, mem in mems.items():
                ranked = mem._retrieval.rank_learnings(q["query"], tool=q["tool"], entities=q["entities"], limit=8)
                got[name] = [(r.id, round(r.score, 12), tuple(r.reasons)) for r in ranked]
            for name in VARIANTS:
                differ[name] += got[name] != got["old"]
    finally:
        for mem in mems.values():
            mem.close()
    return differ


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the comparison from the command line."""
    from graphmem import Memory, Settings

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", type=Path)
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=1, help="passes over the queries")
    ap.add_argument("--json-out", type=Path, default=RESULTS / "local" / "context_paths.json")
    args = ap.parse_args(argv)
    embedder = make_embedder("minilm")
    qs = queries(args.queries + 20)
    mems = {name: Memory(args.path, user="alice", embedder=embedder, settings=Settings(**flags))
            for name, flags in VARIANTS.items()}
    wall: dict[str, list[float]] = {name: [] for name in [*VARIANTS, "embed"]}
    cpu: dict[str, list[float]] = {name: [] for name in [*VARIANTS, "embed"]}
    stages: dict[str, dict[str, list[float]]] = {name: {} for name in VARIANTS}
    store = next(iter(mems.values())).store
    load = os.getloadavg()
    try:
        for q in qs[:20]:  # warm-up
            for mem in mems.values():
                mem.context(q["query"], tool=q["tool"], entities=q["entities"])
        for r in range(args.rounds):
            for i, q in enumerate(qs[20:]):
                order = list(VARIANTS) if (i + r) % 2 == 0 else list(reversed(VARIANTS))
                for name in order:
                    t, c = time.perf_counter(), time.process_time()
                    ctx = mems[name].context(q["query"], tool=q["tool"], entities=q["entities"])
                    wall[name].append((time.perf_counter() - t) * 1e3)
                    cpu[name].append((time.process_time() - c) * 1e3)
                    for k, v in ctx.timings_ms.items():
                        stages[name].setdefault(k, []).append(v)
                    store.flush_deferred()  # the Application is written now, outside every timed call
                t, c = time.perf_counter(), time.process_time()
                embedder.embed([q["query"]])
                wall["embed"].append((time.perf_counter() - t) * 1e3)
                cpu["embed"].append((time.process_time() - c) * 1e3)
    finally:
        for mem in mems.values():
            mem.close()
    emb = pct(wall["embed"], 50)
    out: dict[str, Any] = {"path": str(args.path), "queries": args.queries, "rounds": args.rounds,
                           "load_average_before": load, "load_average_after": os.getloadavg(), "variants": {}}
    for name in wall:
        row = {"wall_p50_ms": round(pct(wall[name], 50), 2), "wall_p95_ms": round(pct(wall[name], 95), 2),
               "cpu_p50_ms": round(pct(cpu[name], 50), 2), "cpu_p95_ms": round(pct(cpu[name], 95), 2),
               "p50_over_embed": round(pct(wall[name], 50) / emb, 3)}
        if name in VARIANTS and name != "old":  # paired: the same query, moments apart
            diff = [a - b for a, b in zip(wall[name], wall["old"])]
            cdiff = [a - b for a, b in zip(cpu[name], cpu["old"])]
            row["minus_old_wall_p50_ms"] = round(pct(diff, 50), 3)
            row["minus_old_cpu_p50_ms"] = round(pct(cdiff, 50), 3)
            row["faster_than_old_share"] = round(sum(d < 0 for d in diff) / max(1, len(diff)), 3)
        if name in stages:
            row["stage_p50_ms"] = {k: round(pct(v, 50), 3) for k, v in stages[name].items()}
        out["variants"][name] = row
        print(f"{name:8s} wall p50 {row['wall_p50_ms']:7.2f} p95 {row['wall_p95_ms']:7.2f}  "
              f"cpu p50 {row['cpu_p50_ms']:7.2f} p95 {row['cpu_p95_ms']:7.2f}  p50/embed {row['p50_over_embed']:.3f}"
              + (f"  paired vs old: wall {row['minus_old_wall_p50_ms']:+.2f} cpu {row['minus_old_cpu_p50_ms']:+.2f} ms,"
                 f" faster in {row['faster_than_old_share']:.0%}" if "minus_old_wall_p50_ms" in row else ""),
              flush=True)
    out["differs_from_old"] = same_ranking(args.path, embedder, qs[20:])
    print("queries ranked differently from old:", out["differs_from_old"], flush=True)
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
