"""context() on a busy machine: quiet vs two CPU-bound processes beside it, per torch thread setting.

    python -m benchmarks.contention [--size 10000] [--queries 100] [--busy 2] [--save]

Builds a file of ``--size`` generated learnings (benchmarks/scale.py's corpus; the first 2,000
texts embedded by MiniLM, the rest perturbed copies of them), then measures context() p50/p95
(query embedding included) for ``Settings.embed_query_threads`` = 1 (the default) and 0 (torch's
default, one thread per core): first quiet, then with ``--busy`` processes spinning on the CPU.
The goal: busy p50 within 2× of quiet. Results: benchmarks/results/local/contention.json
(``--save``: benchmarks/results/contention.json). Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scale import RESULTS, build, embeddings, generate, queries


def _spin(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x += i * i


def _measure(mem: Any, qs: list[dict[str, Any]]) -> dict[str, float]:
    for q in qs[:10]:
        mem.context(q["query"], tool=q["tool"], entities=q["entities"])
    times = []
    for q in qs[10:]:
        time.sleep(0.02)  # idle time between calls, as between an agent's tool calls
        t = time.perf_counter()
        mem.context(q["query"], tool=q["tool"], entities=q["entities"])
        times.append((time.perf_counter() - t) * 1e3)
    return {"p50_ms": round(float(np.percentile(times, 50)), 2), "p95_ms": round(float(np.percentile(times, 95)), 2)}


def run(size: int, n_queries: int, busy: int) -> dict[str, Any]:
    """Quiet and busy figures for each thread setting."""
    from graphmem import Memory, Settings
    from graphmem.embed import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    specs = generate(size, 0)
    vectors = embeddings(specs, embedder, "minilm", 0, limit=2000)
    qs = queries(n_queries + 10)
    out: dict[str, Any] = {"size": size, "queries": n_queries, "busy_processes": busy, "settings": {}}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "contention.kuzu"
        build(path, specs, vectors, embedder)
        for threads in (1, 0):
            settings = Settings(embed_query_threads=threads)
            emb = SentenceTransformerEmbedder(query_threads=threads)
            with Memory(path, user="alice", embedder=emb, settings=settings) as mem:
                quiet = _measure(mem, qs)
                ctx = mp.get_context("spawn")
                stop = ctx.Event()
                procs = [ctx.Process(target=_spin, args=(stop,), daemon=True) for _ in range(busy)]
                for p in procs:
                    p.start()
                try:
                    time.sleep(1.0)
                    loaded = _measure(mem, qs)
                finally:
                    stop.set()
                    for p in procs:
                        p.join(timeout=10)
            out["settings"][f"embed_query_threads={threads}"] = {
                "quiet": quiet, "busy": loaded, "busy_over_quiet_p50": round(loaded["p50_ms"] / quiet["p50_ms"], 2),
            }
            print(f"embed_query_threads={threads}: quiet p50 {quiet['p50_ms']} ms, busy p50 {loaded['p50_ms']} ms "
                  f"(×{out['settings'][f'embed_query_threads={threads}']['busy_over_quiet_p50']}), "
                  f"p95 {quiet['p95_ms']} / {loaded['p95_ms']} ms", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.contention", description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.size, args.queries, args.busy)
    folder = RESULTS if args.save else RESULTS / "local"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "contention.json").write_text(json.dumps(result, indent=2))
    print(f"-> {folder / 'contention.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
