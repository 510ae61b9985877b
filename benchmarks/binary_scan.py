"""Recall@10 and per-query cost of the binary (sign-bit) first pass against the exact int8 scan.

    python -m benchmarks.binary_scan [--rows 100000] [--candidates 500 1000 2000 4000] [--queries 200]

Real MiniLM vectors: the scale benchmark's embedded corpus (benchmarks/results/emb_minilm_*_0.npy).

- ``--rows 100000`` (up to the cache's size): the cached texts, minus ``--held-out`` of them,
  which are the queries together with the scale benchmark's query texts (embedded here with
  MiniLM; ``--queries``);
- ``--rows 1000000``: the vectors of the 1M scale file, rebuilt as benchmarks/scale.py builds
  them (the 100,000 real texts, the other rows reusing them with small noise, sigma 0.02,
  re-normalised), queried with the scale benchmark's query texts. Needs ~3 GB; run it under the
  machine's big-run lock on a shared machine.

The rows go into a ``ScanMatrix`` (int8 codes, as the mirror holds them from 50,000 rows on).
For each query: the exact int8 scan (``ScanMatrix.cosine``) and its top 10, the exact float32
top 10, and ``ScanMatrix.binary_top`` at each candidate count (Hamming over the sign bits,
then an exact rescore of the candidates). Reports recall@10 against the exact int8 scan and
against float32, CPU time per query (thread time) p50 and wall p50, and the time to derive the
bits. Writes benchmarks/results/local/binary_scan.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"


def _p50(values: list[float]) -> float:
    return round(float(np.median(values)), 3)


def _top10(rows: np.ndarray, values: np.ndarray) -> set[int]:
    from graphmem.retrieve.candidates import _top_rows

    return set(_top_rows(rows, values, 10))


def load_rows(rows: int) -> np.ndarray:
    """Unit float32 rows: the cached MiniLM corpus, extended as benchmarks/scale.py does."""
    from benchmarks.scale import embeddings

    cached = sorted(RESULTS.glob("emb_minilm_*_0.npy"), key=lambda p: int(p.stem.split("_")[2]))
    if not cached:
        raise SystemExit("no cached MiniLM corpus in benchmarks/results (run benchmarks.scale --embed-only)")
    real = int(cached[-1].stem.split("_")[2])
    return embeddings([{}] * rows, None, "minilm", 0, min(rows, real))


def query_vectors(count: int) -> np.ndarray:
    """The scale benchmark's query texts, embedded with MiniLM."""
    from benchmarks.scale import make_embedder, queries

    embedder = make_embedder("minilm")
    texts = [q["query"] for q in queries(count)]
    return np.asarray(embedder.embed(texts), dtype=np.float32)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the comparison from the command line."""
    import torch

    from graphmem.store.vectors import ScanMatrix, unit_rows

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--candidates", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    ap.add_argument("--queries", type=int, default=200, help="scale benchmark query texts (embedded here)")
    ap.add_argument("--held-out", type=int, default=500, help="real texts held out as queries (below 1M rows only)")
    ap.add_argument("--json-out", default=str(RESULTS / "local" / "binary_scan.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    vectors = load_rows(args.rows)
    qv = [query_vectors(args.queries)] if args.queries else []
    real_n = min(args.rows, 100_000)
    held = args.held_out if args.rows <= real_n else 0
    if held:
        rng = np.random.default_rng(7)
        out_rows = np.sort(rng.choice(real_n, size=held, replace=False))
        qv.append(vectors[out_rows].copy())
        keep = np.ones(len(vectors), dtype=bool)
        keep[out_rows] = False
        vectors = vectors[keep]
    queries_all = unit_rows(np.concatenate(qv))
    n = len(vectors)
    matrix = ScanMatrix(vectors.shape[1], storage="int8")
    t = time.perf_counter()
    matrix.bulk_load([str(i) for i in range(n)], vectors)
    load_s = time.perf_counter() - t
    ref = torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32)) if n <= 200_000 else None
    if ref is None:  # 1M rows: no float32 copy kept; float32 reference over chunks
        ref_chunks = [np.ascontiguousarray(vectors[s : s + 100_000], dtype=np.float32) for s in range(0, n, 100_000)]
    del vectors
    t, cpu = time.perf_counter(), time.process_time()
    matrix.binary_top(queries_all[0], 10)  # derives the bits
    derive = (time.perf_counter() - t, time.process_time() - cpu)
    everything = np.arange(n)
    exact_cpu, exact_wall = [], []
    rec: dict[int, list[float]] = {c: [] for c in args.candidates}
    rec_f: dict[int, list[float]] = {c: [] for c in args.candidates}
    cpu_b: dict[int, list[float]] = {c: [] for c in args.candidates}
    wall_b: dict[int, list[float]] = {c: [] for c in args.candidates}
    int8_vs_f32 = []
    for q in queries_all:
        t, c = time.perf_counter(), time.thread_time()
        exact = matrix.cosine(q)
        want = _top10(everything, exact)
        exact_cpu.append((time.thread_time() - c) * 1e3)
        exact_wall.append((time.perf_counter() - t) * 1e3)
        if ref is not None:
            f32 = torch.mv(ref, torch.from_numpy(q)).numpy()
        else:
            f32 = np.concatenate([ch @ q for ch in ref_chunks])
        want_f = _top10(everything, f32)
        int8_vs_f32.append(len(want & want_f) / 10)
        for cand in args.candidates:
            t, c = time.perf_counter(), time.thread_time()
            rows, cos = matrix.binary_top(q, cand)
            got = _top10(rows, cos)
            cpu_b[cand].append((time.thread_time() - c) * 1e3)
            wall_b[cand].append((time.perf_counter() - t) * 1e3)
            rec[cand].append(len(want & got) / 10)
            rec_f[cand].append(len(want_f & got) / 10)
    result: dict[str, Any] = {
        "rows": n, "queries": len(queries_all), "held_out_real_texts": held, "scale_query_texts": args.queries,
        "real_texts_in_rows": real_n - held, "load_load_average": os.getloadavg()[0],
        "int8_load_s": round(load_s, 2), "derive_bits_s": round(derive[0], 3), "derive_bits_cpu_s": round(derive[1], 3),
        "bits_mb": round(matrix.binary_nbytes / 1e6, 1), "int8_mb": round(matrix.nbytes / 1e6, 1),
        "exact_int8": {"cpu_p50_ms": _p50(exact_cpu), "wall_p50_ms": _p50(exact_wall),
                       "recall_at_10_vs_float32": round(float(np.mean(int8_vs_f32)), 4)},
        "binary": {
            str(c): {"recall_at_10": round(float(np.mean(rec[c])), 4), "recall_at_10_min": float(np.min(rec[c])),
                     "recall_at_10_vs_float32": round(float(np.mean(rec_f[c])), 4),
                     "cpu_p50_ms": _p50(cpu_b[c]), "wall_p50_ms": _p50(wall_b[c]),
                     "cpu_over_exact": round(_p50(cpu_b[c]) / max(_p50(exact_cpu), 1e-9), 3)}
            for c in args.candidates
        },
    }
    print(json.dumps(result, indent=1), flush=True)
    out = Path(args.json_out)
    out.parent.mkdir(parents=True, exist_ok=True)
    existing = json.loads(out.read_text()) if out.exists() else {}
    existing[str(n)] = result
    out.write_text(json.dumps(existing, indent=1))
    return result


if __name__ == "__main__":
    main()
