"""Analyst Cypher over a user's view: the first query copies the view, repeats reuse it.

    python -m benchmarks.cypher_view [--size 2000] [--repeats 5]

Builds ``--size`` learnings for one user (hash embedder), then times ``Memory.cypher`` in the
default user scope: the first query (the copy is made), ``--repeats`` repeats with nothing written
(the copy is reused), and the same after each of ``--repeats`` writes (the copy is made again).
Printed only; nothing is written to the repository.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

QUERY = "MATCH (l:Learning) RETURN count(l) AS n"


def _ms(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Command-line entry point; returns the timings (ms)."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cypher_view", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)

    from graphmem import HashEmbedder, Memory

    with tempfile.TemporaryDirectory() as d, Memory(Path(d) / "m.kuzu", user="alice", embedder=HashEmbedder()) as mem:
        mem.add_learnings([{"content": f"rule {i} about tool {i % 9}", "tool": f"t{i % 9}"} for i in range(args.size)])
        first = _ms(lambda: mem.cypher(QUERY))
        reused = [_ms(lambda: mem.cypher(QUERY)) for _ in range(args.repeats)]
        after_write = []
        for i in range(args.repeats):
            mem.add_learning(f"one more rule {i}")
            after_write.append(_ms(lambda: mem.cypher(QUERY)))
    res = {"size": args.size, "first_ms": first, "reused_ms": sorted(reused)[len(reused) // 2],
           "after_write_ms": sorted(after_write)[len(after_write) // 2]}
    print(f"{args.size} learnings: first query {first:.1f} ms; repeated, nothing written: "
          f"{res['reused_ms']:.1f} ms (median); after a write: {res['after_write_ms']:.1f} ms (median)")
    return res


if __name__ == "__main__":
    main()
