"""Summary refresh cost vs memory size (issue 5): it must grow with the change, not the memory.

    python -m benchmarks.summaries [--sizes 1000 100000] [--rounds 7] \
        [--json-out benchmarks/results/summaries.json]

For each size: a fresh Kùzu file, ``size`` learnings bulk-loaded (``store.bulk_insert_learnings``,
HashEmbedder: this measures refreshing, not embedding) over 20 tools, so the benchmarked tool
summary covers size/20 learnings. Summaries run in background mode (no inline refresh). Setup:
5 learnings about the tool and a first (full) refresh, which builds the text and links every
covered learning. Then, per round: 5 new learnings about the tool (staleness 5 = threshold) and
one timed ``refresh_summaries()`` -- incremental: previous text + the 5 changed learnings. Also
timed: a refresh with nothing stale, the hook's cost per learning write, and a forced full
rebuild. The machine may be shared: figures are indicative.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import results_dir
from graphmem import Memory, Settings
from graphmem.embed import HashEmbedder
from graphmem.llm.offline import OfflineLLM
from graphmem.models import Learning

TOOLS = [f"tool_{i:02d}" for i in range(20)]
BENCH_TOOL = TOOLS[0]
KINDS = ["rule", "preference", "observation", "checklist"]
SENTIMENTS = ["neutral", "negative", "positive"]


def _learnings(n: int) -> list[Learning]:
    out = []
    for i in range(n):
        tool = TOOLS[i % len(TOOLS)]
        out.append(Learning.model_validate({
            "user_id": "alice", "kind": KINDS[i % len(KINDS)], "sentiment": SENTIMENTS[i % 3],
            "content": f"When calling {tool} for case {i}, check parameter p{i % 97} before sending",
            "tool": tool, "topics": [f"topic_{i % 50}"], "objective_type": ["research", "email", "code"][i % 3],
        }))
    return out


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1e3


def bench_size(size: int, rounds: int, workdir: Path) -> dict[str, Any]:
    """Build a memory of ``size`` learnings and time incremental tool-summary refreshes."""
    path = workdir / f"summaries_{size}.kuzu"
    embedder = HashEmbedder()
    settings = Settings(summary_refresh="background")
    mem = Memory(path, user="alice", embedder=embedder, llm=OfflineLLM(), settings=settings)
    try:
        t0 = time.perf_counter()
        learnings = _learnings(size)
        vectors = embedder.embed([l.content for l in learnings])
        mem.store.bulk_insert_learnings(learnings, vectors)
        build_s = time.perf_counter() - t0

        def add_five(tag: str) -> list[float]:
            times = []
            for j in range(5):
                t = time.perf_counter()
                mem.add_learning(f"{BENCH_TOOL} {tag} lesson {j}: retry after a timeout", kind="observation",
                                 tool=BENCH_TOOL, sentiment="negative" if j == 0 else "neutral")
                times.append(_ms(t))
            return times

        add_five("setup")
        t = time.perf_counter()
        first = mem.refresh_summaries()  # no previous text: full build of the tool summary
        first_ms = _ms(t)
        assert [s.key for s in first] == [f"learning:tool:{BENCH_TOOL}"], first
        covered = len(mem.store.summary_learning_ids("alice", f"learning:tool:{BENCH_TOOL}"))

        refresh_ms: list[float] = []
        write_ms: list[float] = []
        for r in range(rounds):
            write_ms += add_five(f"round{r}")
            t = time.perf_counter()
            done = mem.refresh_summaries()
            refresh_ms.append(_ms(t))
            assert [s.key for s in done] == [f"learning:tool:{BENCH_TOOL}"], done
        idle: list[float] = []
        for _ in range(rounds):
            t = time.perf_counter()
            assert mem.refresh_summaries() == []
            idle.append(_ms(t))
        return {
            "size": size,
            "covered_by_tool_summary": covered,
            "bulk_load_s": round(build_s, 2),
            "incremental_refresh_ms_p50": round(statistics.median(refresh_ms), 2),
            "incremental_refresh_ms_min": round(min(refresh_ms), 2),
            "incremental_refresh_ms_all": [round(x, 2) for x in refresh_ms],
            "first_full_refresh_ms": round(first_ms, 2),
            "nothing_stale_refresh_ms_p50": round(statistics.median(idle), 3),
            "add_learning_ms_p50": round(statistics.median(write_ms), 2),
        }
    finally:
        mem.close()
        shutil.rmtree(path, ignore_errors=True)
        path.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print a table, write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json-out", type=Path, default=None, help="default: benchmarks/results/local/summaries.json")
    parser.add_argument("--save", action="store_true",
                        help="write the tracked benchmarks/results/summaries.json (default: results/local/)")
    args = parser.parse_args(argv)
    args.json_out = args.json_out or results_dir(args.save) / "summaries.json"
    with tempfile.TemporaryDirectory(prefix="graphmem-summaries-") as tmp:
        rows = [bench_size(size, args.rounds, Path(tmp)) for size in args.sizes]
    base = rows[0]["incremental_refresh_ms_p50"]
    for row in rows:
        row["ratio_vs_smallest"] = round(row["incremental_refresh_ms_p50"] / base, 2) if base else None
    header = f"{'learnings':>10} {'covered':>8} {'refresh p50 ms':>15} {'ratio':>6} {'full ms':>8} {'idle ms':>8} {'add ms':>7}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row['size']:>10} {row['covered_by_tool_summary']:>8} {row['incremental_refresh_ms_p50']:>15.2f} "
              f"{row['ratio_vs_smallest']:>6.2f} {row['first_full_refresh_ms']:>8.1f} "
              f"{row['nothing_stale_refresh_ms_p50']:>8.3f} {row['add_learning_ms_p50']:>7.2f}")
    worst = max(r["ratio_vs_smallest"] or 0 for r in rows)
    result = {
        "benchmark": "summaries_incremental_refresh",
        "change": "5 new learnings about one tool, then refresh_summaries() (one stale tool summary)",
        "embedder": "hash", "llm": "offline", "rounds": args.rounds,
        "within_2x": worst <= 2.0, "max_ratio": worst, "rows": rows,
    }
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    from benchmarks.plots import named_bars

    named_bars({f"{r['size']:,} learnings": r["incremental_refresh_ms_p50"] for r in result["rows"]},
               "refresh one stale tool summary after 5 new learnings (p50)", "ms",
               args.json_out.with_suffix(".png"))
    print(f"\nmax ratio {worst:.2f} ({'within' if worst <= 2.0 else 'NOT within'} 2x); wrote {args.json_out}")
    return result


if __name__ == "__main__":
    main()
