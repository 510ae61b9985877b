"""Ways of scoring one query against a user's block of rows, one thread, CPU time per scan.

    python -m benchmarks.vector_scans [--rows 100000] [--block 21800] [--dim 384] [--reps 200]

Random int8 codes stand in for the mirror (the time does not depend on the values): ``--rows``
rows in all, of which ``--block`` are one user's. Measures ``torch._int_mm`` over the whole
matrix, over the block gathered per call and over a kept contiguous block
(``ScanMatrix.cosine_block``), usearch's exact search (``usearch.index.search(exact=True)``),
float16 / bfloat16 / float32 mat-vecs over the block, and the two-column int8 dot products the
event search takes (the question and its variant): numpy's ``einsum`` against numkong's SIMD
kernel as ``graphmem.store.vector_math.int8_dots`` calls it, over all rows and over the block
gathered per call. Prints the CPU p50 of each (thread
time, so other processes on a busy machine count less).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _cpu_p50(fn: Callable[[], Any], reps: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start = time.thread_time()
        fn()
        times.append((time.thread_time() - start) * 1e3)
    return float(np.median(times))


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run the comparison from the command line."""
    import torch

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--block", type=int, default=21_800)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    codes = rng.integers(-127, 128, size=(args.rows, args.dim), dtype=np.int8)
    rows = np.sort(rng.choice(args.rows, size=args.block, replace=False))
    block = np.ascontiguousarray(codes[rows])
    q = rng.integers(-127, 128, size=args.dim, dtype=np.int8)
    col = torch.from_numpy(q.copy()).reshape(-1, 1)  # strides (1, 1): a numpy q[:, None] view has stride 0, which _int_mm misreads
    qf = q.astype(np.float32)
    blockf = block.astype(np.float32)
    block16 = torch.from_numpy(block.astype(np.float16))
    blockbf = torch.from_numpy(blockf).to(torch.bfloat16)
    cases: dict[str, Callable[[], Any]] = {
        "int_mm, all rows": lambda: torch._int_mm(torch.from_numpy(codes), col),
        "int_mm, block gathered per call": lambda: torch._int_mm(torch.from_numpy(codes[rows]), col),
        "int_mm, kept block": lambda: torch._int_mm(torch.from_numpy(block), col),
        "float16 mv, block": lambda: torch.mv(block16, torch.from_numpy(qf.astype(np.float16))),
        "bfloat16 mv, block": lambda: torch.mv(blockbf, torch.from_numpy(qf).to(torch.bfloat16)),
        "float32 einsum, block": lambda: np.einsum("ij,j->i", blockf, qf),
    }
    from graphmem.store.vector_math import _numkong, int8_dots

    q2 = rng.integers(-127, 128, size=(2, args.dim), dtype=np.int8)
    cases["einsum int8 2 columns, all rows"] = lambda: np.einsum("ij,kj->ik", codes, q2, dtype=np.int32)
    cases["einsum int8 2 columns, block gathered"] = lambda: np.einsum("ij,kj->ik", codes[rows], q2, dtype=np.int32)
    if _numkong() is not None:
        cases["int8_dots 2 columns, all rows"] = lambda: int8_dots(codes, q2)
        cases["int8_dots 2 columns, block gathered"] = lambda: int8_dots(codes, q2, rows)
        if not np.array_equal(int8_dots(codes, q2, rows[:50]), codes[rows[:50]].astype(np.int32) @ q2.T.astype(np.int32)):
            raise SystemExit("numkong returned wrong dot products")
    try:
        from usearch.index import search

        cases["usearch exact int8 k=50, block"] = lambda: search(block, q, 50, "ip", exact=True, threads=1)
        cases["usearch exact int8 k=50, all rows"] = lambda: search(codes, q, 50, "ip", exact=True, threads=1)
    except ImportError:
        pass
    want = codes[rows[:5]].astype(np.int32) @ q.astype(np.int32)
    if not np.array_equal(torch._int_mm(torch.from_numpy(block[:5]), col)[:, 0].numpy(), want):
        raise SystemExit("torch._int_mm returned wrong dot products")
    out = {}
    for name, fn in cases.items():
        reps = args.reps if "usearch" not in name and "16" not in name else max(10, args.reps // 4)
        out[name] = round(_cpu_p50(fn, reps), 3)
        print(f"{name:36s} CPU p50 {out[name]:7.3f} ms", flush=True)
    return out


if __name__ == "__main__":
    main()
