"""What opening a file costs: wall and CPU time, resident memory after the open and its peak.

    python -m benchmarks.open_memory --size 100000 [--repeat 2] [--buffer-pool-mb 512 0] [--snapshot on off]
    python -m benchmarks.open_memory --path FILE.kuzu --embedder-name all-MiniLM-L6-v2 [--context]

Each open runs in a fresh process (``KuzuGraphStore`` only, no model loaded), so the peak
(``ru_maxrss``) is the open's own. With ``--size`` the file is built once with
benchmarks/scale.py's corpus (MiniLM vectors from its cache, reused with noise past
``--corpus-embed-limit``). Several ``--buffer-pool-mb`` values alternate, ``--repeat`` times,
so they share the machine's load; the CPU time is the figure to compare on a busy machine.

``--snapshot on off`` alternates opens that map the mirrors' snapshot (``<file>.mirrors``,
graphmem/store/snapshot.py) with opens that read the file. A first writable open and close with
the snapshot on writes it when it is missing (its open and close times are reported as
"build"). An "off" open runs with the snapshot moved aside; afterwards it is put back and
re-stamped (that open wrote nothing: its close only checkpointed, as a no-write session's does).
``--context`` also runs one ``Memory.context()`` (default embedder) on the opened store.
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
from graphmem.store import open_store, release_store

def rss():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")

path, name, dim, pool = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
snap, context = sys.argv[5] == "on", sys.argv[6] == "1"
before = rss()
t, c = time.perf_counter(), time.process_time()
store = open_store(path, dim=dim, embedder_name=name, buffer_pool_mb=pool, mirror_snapshot=snap)
out = {"open_s": time.perf_counter() - t, "open_cpu_s": time.process_time() - c, "rss_before_mb": before,
       "rss_after_open_mb": rss(), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
       "learnings": len(store.learning_catalog), "buffer_pool_mb": pool, "snapshot": sys.argv[5],
       "snapshot_used": bool(getattr(store, "_snapshot_loaded", False))}
if context:
    from graphmem import Memory, Settings
    mem = Memory(path, settings=Settings(mirror_snapshot=snap, kuzu_buffer_pool_mb=pool))  # shares the store
    mem.context("send a follow-up email about the invoice")
    t, c = time.perf_counter(), time.process_time()
    ctx = mem.context("schedule a meeting with the customer about pricing")
    out.update({"context_ms": (time.perf_counter() - t) * 1e3, "context_cpu_ms": (time.process_time() - c) * 1e3,
                "context_learnings": len(ctx.learnings), "rss_after_context_mb": rss()})
    mem.close()
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
release_store(store)
out["close_s"] = time.perf_counter() - t
print(json.dumps(out))
"""


def open_once(path: Path, name: str, dim: int, pool: int, snap: str = "on", context: bool = False) -> dict[str, Any]:
    """One open of ``path`` in a fresh Python process (``snap``: "on" or "off", see the module doc)."""
    from graphmem.store import snapshot

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    saved = snapshot.path_of(path)
    aside = saved.with_name(saved.name + ".aside")
    if snap == "off" and saved.exists():
        os.replace(saved, aside)
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(path), name, str(dim), str(pool), snap,
                               "1" if context else "0"], capture_output=True, text=True, env=env, check=True, timeout=3600)
    finally:
        if snap == "off" and aside.exists():
            os.replace(aside, saved)
            snapshot.restamp(path)
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
    ap.add_argument("--snapshot", nargs="+", default=["on"], choices=["on", "off"],
                    help="open with the mirrors' snapshot (on) or reading the file (off); several alternate")
    ap.add_argument("--context", action="store_true", help="also run one context() with the default embedder")
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
        from graphmem.store import snapshot

        if "on" in args.snapshot and not snapshot.path_of(path).exists():
            results.append(dict(open_once(path, args.embedder_name, args.dim, args.buffer_pool_mb[0]), run="build"))
            print(json.dumps(results[-1]), flush=True)
        for _ in range(args.repeat):
            for snap in args.snapshot:
                for pool in args.buffer_pool_mb:
                    results.append(open_once(path, args.embedder_name, args.dim, pool, snap, args.context))
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
