"""Stage timings of ``Memory.context()`` on a kept scale file, with Settings variants alternated
in one process (so the machine's load hits every variant alike).

    nice -n 10 python -m benchmarks.graph_stage --path /tmp/g1m_scale/scale_100000_minilm_10000_0.kuzu \\
        --queries 150 --variant base= --variant uncapped=graph_max_reached=0

Opens the file once (read-write; copy a shared file first), warms up on 20 queries, then runs
every query under each variant in turn (variant order rotates per query) and prints, per
variant, the p50 / p95 of context()'s wall time, of its process CPU time and thread CPU time,
the p50 of each stage (``ctx.timings_ms``), and how many of the learnings shown agree with the
first variant's (the same query, the same rank positions ignored: overlap of the id sets).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np


def _variant(text: str) -> tuple[str, dict[str, Any]]:
    name, _, rest = text.partition("=")
    overrides: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        overrides[key] = json.loads(value) if value not in ("true", "false") else value == "true"
    return name, overrides


_CPU: dict[str, float] = {}


def _timed(name: str, fn: Any) -> Any:
    """``fn`` adding its thread CPU time (ms) to ``_CPU[name]`` per call."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _CPU[name] = _CPU.get(name, 0.0) + (time.thread_time() - t) * 1e3

    return wrapper


def _instrument() -> None:
    """Time the filter, vector and graph functions of the ranking by thread CPU time (old and new
    code alike: whichever of them exist)."""
    from graphmem.retrieve import candidates, rank

    for name, stage in (("eligible_mask", "cpu_filter"), ("vector_candidates", "cpu_vector"),
                        ("graph_candidates", "cpu_graph"), ("_order_graph", "cpu_graph")):
        if hasattr(rank, name):
            setattr(rank, name, _timed(stage, getattr(rank, name)))
    if hasattr(candidates, "Eligibility"):
        candidates.Eligibility.mask = _timed("cpu_filter", candidates.Eligibility.mask)  # type: ignore[method-assign]


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark from the command line."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", type=Path, required=True)
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    ap.add_argument("--variant", action="append", default=[], help="name=key=value,key=value (Settings overrides)")
    ap.add_argument("--ann-min-rows", type=int, default=None)
    ap.add_argument("--read-only", action="store_true")
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args(argv)
    from benchmarks.scale import make_embedder, queries
    from graphmem import Memory, Settings

    _instrument()
    embedder = make_embedder(args.embedder)
    base: dict[str, Any] = {}
    if args.ann_min_rows is not None:
        base["vector_ann_min_rows"] = args.ann_min_rows
    variants = [_variant(v) for v in (args.variant or ["base="])]
    t, cpu = time.perf_counter(), time.process_time()
    kwargs: dict[str, Any] = {"read_only": True} if args.read_only else {}
    mem = Memory(args.path, user="alice", embedder=embedder, settings=Settings(**base), **kwargs)
    open_s, open_cpu = time.perf_counter() - t, time.process_time() - cpu
    print(f"opened in {open_s:.1f} s wall / {open_cpu:.1f} s CPU; load {os.getloadavg()}", flush=True)
    vectors = mem.store.learning_catalog.vectors
    if getattr(vectors, "_builder", None) is not None:
        print("waiting for the HNSW index", flush=True)
        vectors.wait_ann(3600.0)
    settings = {name: mem.settings.model_copy(update=over) for name, over in variants}
    qs = queries(args.queries + 20)
    retrievers: dict[str, Any] = {}  # one Retriever per variant (a new Settings object would make a new one per call)

    def use(name: str) -> None:
        mem.settings = settings[name]
        if name in retrievers:
            mem._retrieval._state = retrievers[name]

    for q in qs[:20]:
        for name in settings:
            use(name)
            mem.context(q["query"], tool=q["tool"], entities=q["entities"])
            retrievers[name] = mem._retrieval._state
    rows: dict[str, dict[str, list[float]]] = {name: {} for name in settings}
    shown: dict[str, list[set[str]]] = {name: [] for name in settings}
    names = list(settings)
    load = [os.getloadavg()[0]]
    for i, q in enumerate(qs[20:]):
        for name in names[i % len(names):] + names[: i % len(names)]:
            use(name)
            _CPU.clear()
            t, cpu, th = time.perf_counter(), time.process_time(), time.thread_time()
            ctx = mem.context(q["query"], tool=q["tool"], entities=q["entities"])
            rec = rows[name]
            for k, v in _CPU.items():
                rec.setdefault(k, []).append(v)
            rec.setdefault("wall", []).append((time.perf_counter() - t) * 1e3)
            rec.setdefault("cpu", []).append((time.process_time() - cpu) * 1e3)
            rec.setdefault("thread_cpu", []).append((time.thread_time() - th) * 1e3)
            for k, v in ctx.timings_ms.items():
                rec.setdefault(k, []).append(v)
            shown[name].append({item.id for item in ctx.learnings})
        if i % 25 == 0:
            load.append(os.getloadavg()[0])
    out: dict[str, Any] = {"path": str(args.path), "queries": args.queries, "open_s": open_s, "open_cpu_s": open_cpu,
                           "load_average": [min(load), max(load)], "variants": {}}
    first = names[0]
    for name in names:
        rec = rows[name]
        agree = [len(a & b) / max(1, len(a | b)) for a, b in zip(shown[name], shown[first])]
        same = sum(a == b for a, b in zip(shown[name], shown[first]))
        out["variants"][name] = {
            "overrides": dict(variants)[name],
            "p50": {k: round(statistics.median(v), 3) for k, v in rec.items()},
            "p95": {k: round(_pct(v, 95), 3) for k in ("wall", "cpu", "thread_cpu") for v in [rec[k]]},
            "jaccard_vs_first": round(float(np.mean(agree)), 4), "identical_vs_first": f"{same}/{len(agree)}",
        }
    text = json.dumps(out, indent=1)
    print(text)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    mem.close()
    return out


if __name__ == "__main__":
    main()
