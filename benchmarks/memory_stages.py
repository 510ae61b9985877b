"""Where a serving process's resident memory goes, stage by stage.

    python -m benchmarks.memory_stages --path FILE.kuzu [--queries 150] [--tracemalloc] [--pool-mb 0]

Opens a kept file of benchmarks/scale.py (MiniLM vectors) in this process and reports, after
each stage (Python and graphmem imported, MiniLM loaded, the file opened, the first context(),
``--queries`` more context() calls with the scale benchmark's queries):

- VmRSS and its parts from /proc/self/status: anonymous memory (``RssAnon``: the heap, numpy
  arrays, torch, Kùzu's buffer pool) and file pages (``RssFile``: shared libraries and the mapped
  mirrors' snapshot, which the kernel can drop and read again);
- the largest mappings by resident size (/proc/self/smaps, grouped by file; anonymous ones
  together), so the snapshot's pages, the libraries and the heap show apart;
- glibc's heap (``mallinfo2``): bytes in use and free bytes kept in its arenas;
- the mirrors' numpy arrays (vector codes, sign bits, gathered blocks) by their ``nbytes``;
- with ``--tracemalloc``, the Python allocations (slower; the top growth over the calls too).

The file is opened as is: copy a kept file first when its snapshot must stay untouched (a
writable open re-stamps it on close). Results go to benchmarks/results/local/memory_stages.json.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def status() -> dict[str, float]:
    """VmRSS, RssAnon, RssFile, RssShmem and VmHWM of this process, in MB."""
    out: dict[str, float] = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"):
                out[key] = round(int(line.split()[1]) / 1024, 1)
    return out


def mappings(top: int = 8) -> list[tuple[str, float]]:
    """The ``top`` mappings (grouped by file; anonymous and heap ones apart) by resident MB."""
    sizes: dict[str, int] = {}
    name = "?"
    with open("/proc/self/smaps") as fh:
        for line in fh:
            parts = line.split()
            if not parts:
                continue
            if "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
                name = parts[5] if len(parts) > 5 else "[anon]"
                if "/torch/" in name or "/site-packages/" in name:
                    name = "libs: " + name.split("/site-packages/")[-1].split("/")[0]
            elif parts[0] == "Rss:":
                sizes[name] = sizes.get(name, 0) + int(parts[1])
    ranked = sorted(sizes.items(), key=lambda kv: -kv[1])[:top]
    return [(k, round(v / 1024, 1)) for k, v in ranked]


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def heap() -> dict[str, float]:
    """glibc's heap: bytes in use (arenas + mmapped chunks) and free bytes kept in arenas, MB."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        m = libc.mallinfo2()
    except (OSError, AttributeError):
        return {}
    return {"in_use": round((m.uordblks + m.hblkhd) / 2**20, 1), "free_in_arenas": round(m.fordblks / 2**20, 1),
            "mmapped": round(m.hblkhd / 2**20, 1)}


def mirrors(mem: Any) -> dict[str, float]:
    """The learning mirror's numpy arrays by nbytes, MB."""
    cat = mem.store.learning_catalog
    v = cat.vectors
    blocks = sum(b[1].nbytes + b[2].nbytes + b[3].nbytes for b in v._blocks.values())
    return {"vector_rows": round(v.nbytes / 1e6, 1), "binary_bits": round(v.binary_nbytes / 1e6, 1),
            "gathered_blocks": round(blocks / 1e6, 1)}


def snap(label: str, mem: Any = None, traced: bool = False) -> dict[str, Any]:
    """Everything above at one stage, printed and returned."""
    out: dict[str, Any] = {"stage": label, **status(), "heap": heap(), "top_mappings": mappings()}
    if mem is not None:
        out["mirrors"] = mirrors(mem)
    if traced:
        out["python_mb"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
    print(json.dumps(out), flush=True)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the stages (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--path", required=True, help="a kept benchmarks/scale.py file (MiniLM vectors)")
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--pool-mb", type=int, default=None, help="Settings.kuzu_buffer_pool_mb (default: the Settings default)")
    ap.add_argument("--tracemalloc", action="store_true")
    ap.add_argument("--json-out", default=str(RESULTS / "local" / "memory_stages.json"))
    args = ap.parse_args(argv)
    if args.tracemalloc:
        tracemalloc.start()
    from benchmarks.scale import make_embedder, queries
    from graphmem import Memory, Settings

    stages = [snap("imported", traced=args.tracemalloc)]
    embedder = make_embedder("minilm")
    embedder.embed(["warm the model"])
    stages.append(snap("model loaded", traced=args.tracemalloc))
    overrides = {} if args.pool_mb is None else {"kuzu_buffer_pool_mb": args.pool_mb}
    t = time.perf_counter()
    mem = Memory(args.path, user="alice", embedder=embedder, settings=Settings(**overrides))
    open_s = time.perf_counter() - t
    stages.append(snap("opened", mem, args.tracemalloc))
    qs = queries(args.queries + 1)
    mem.context(qs[0]["query"], tool=qs[0]["tool"], entities=qs[0]["entities"])
    stages.append(snap("first context()", mem, args.tracemalloc))
    before = tracemalloc.take_snapshot() if args.tracemalloc else None
    times = []
    for q in qs[1:]:
        t = time.perf_counter()
        mem.context(q["query"], tool=q["tool"], entities=q["entities"])
        times.append((time.perf_counter() - t) * 1e3)
    stages.append(snap(f"after {args.queries} more context()", mem, args.tracemalloc))
    growth: list[str] = []
    if before is not None:
        growth = [str(s) for s in tracemalloc.take_snapshot().compare_to(before, "lineno")[:15]]
        print("\n".join(growth))
    mem.close()
    times.sort()
    result = {"path": str(args.path), "open_s": round(open_s, 3), "pid": os.getpid(),
              "context_p50_ms": round(times[len(times) // 2], 2) if times else None,
              "stages": stages, "python_growth": growth}
    Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json_out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
