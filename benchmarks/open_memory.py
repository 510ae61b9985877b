"""What opening a file costs: wall and CPU time, resident memory after the open and its peak.

    python -m benchmarks.open_memory --size 100000 [--repeat 2] [--buffer-pool-mb 512 0]
    python -m benchmarks.open_memory --path FILE.kuzu --embedder-name all-MiniLM-L6-v2

Each open runs in a fresh process (``KuzuGraphStore`` only, no model loaded), so the peak
(``ru_maxrss``) is the open's own. With ``--size`` the file is built once with
benchmarks/scale.py's corpus (MiniLM vectors from its cache, reused with noise past
``--corpus-embed-limit``). Several ``--buffer-pool-mb`` values alternate, ``--repeat`` times,
so they share the machine's load; the CPU time is the figure to compare on a busy machine.
Results go to benchmarks/results/local/open_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"

_CHILD = r"""
import json, resource, sys, time
from graphmem.store import KuzuGraphStore

def rss():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")

path, name, dim, pool = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
before = rss()
t, c = time.perf_counter(), time.process_time()
store = KuzuGraphStore(path, dim=dim, embedder_name=name, buffer_pool_mb=pool)
out = {"open_s": time.perf_counter() - t, "open_cpu_s": time.process_time() - c, "rss_before_mb": before,
       "rss_after_open_mb": rss(), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "learnings": len(store.learning_catalog), "buffer_pool_mb": pool}
store.close()
print(json.dumps(out))
"""


def open_once(path: Path, name: str, dim: int, pool: int) -> dict[str, Any]:
    """One open of ``path`` in a fresh Python process."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path), name, str(dim), str(pool)],
                          capture_output=True, text=True, env=env, check=True, timeout=3600)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["load_average"] = os.getloadavg()[0]
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the benchmark from the command line."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", type=Path, default=None, help="an existing graphmem file to open")
    ap.add_argument("--embedder-name", default="all-MiniLM-L6-v2")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--size", type=int, default=100_000, help="build a file of this many learnings (without --path)")
    ap.add_argument("--corpus-embed-limit", type=int, default=10_000)
    ap.add_argument("--buffer-pool-mb", type=int, nargs="+", default=[512])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    workdir = None
    path = args.path
    if path is None:
        from benchmarks.scale import build_apart

        workdir = Path(tempfile.mkdtemp(prefix="graphmem-open-"))
        path = workdir / f"open_{args.size}.kuzu"
        build_s = build_apart(path, args.size, 0, "minilm", args.corpus_embed_limit)
        print(f"built {args.size} learnings in {build_s:.1f} s", flush=True)
    results = []
    try:
        for _ in range(args.repeat):
            for pool in args.buffer_pool_mb:
                results.append(open_once(path, args.embedder_name, args.dim, pool))
                print(json.dumps(results[-1]), flush=True)
    finally:
        if workdir is not None:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    out = RESULTS / "local" / "open_memory.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cpu_count": os.cpu_count(), "results": results}, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
