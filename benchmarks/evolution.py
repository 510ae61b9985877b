"""Bullet evolution on vs off: does rewriting failing learnings raise an agent's success rate?

    python -m benchmarks.evolution [--episodes 240] [--seeds 3] [--cycle 20] [--json] [--save]

A small closed loop with judges. Each of the ``FAMILIES`` is a tool with a judge whose criteria
say what a right answer must contain, a *specific but wrong* learning (it names the task's words,
so retrieval ranks it first) and a *general but right* one. Each episode is a task on one tool:
the agent takes the first learning ``context(task, tool=...)`` ranks (what an agent sees),
answers with its text, the offline judge (``judge_output``, the judge's criteria) decides, and
``record_outcome(success=..., used=[that learning])`` rates it. ``run_cycle()`` runs every
``--cycle`` episodes, with ``Settings.evolve_in_cycle`` on or off; everything else (ranking's
quality prior, the lifecycle's demotions) is the same in both arms. Reported: success rate per
arm (mean over the seeds), learnings evolved, and the share of the last third of episodes that
succeeded. Writes ``benchmarks/results/local/evolution.json`` (``--save``: ``benchmarks/results/``).

What this measures: the mechanism end to end with the OfflineLLM, whose crossover joins the
failing bullet with its sibling's text and whose judge checks the criteria's words, so a rewrite
that carries the sibling's advice passes. It says nothing about how well a real model rewrites.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graphmem import HashEmbedder, Memory, Settings
from graphmem.llm.offline import judge_output

REPO = Path(__file__).resolve().parents[1]
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)

# tool, judge criteria, task template ({n}: a varying number), wrong specific learning, right general learning
FAMILIES: tuple[tuple[str, str, str, str, str], ...] = (
    ("billing", "The answer must show cents and the currency code",
     "Report the invoice total for order {n}", "Round invoice totals for orders to whole dollars",
     "Always show cents and the currency code in amounts"),
    ("send_email", "The answer must include a greeting and a signature",
     "Email the customer about ticket {n}", "Email customers about tickets in one terse line",
     "Start with a greeting and end with a signature"),
    ("run_sql", "The answer must use a LIMIT clause and name the columns",
     "Query the orders table for batch {n}", "Query the orders table with SELECT star for each batch",
     "Name the columns and add a LIMIT clause to every query"),
    ("http_request", "The answer must set a timeout and retry with backoff",
     "Call the partner API for shipment {n}", "Call the partner API for shipments once and wait forever",
     "Set a timeout and retry with exponential backoff"),
    ("write_file", "The answer must use metric units and ISO dates",
     "Write the site report for visit {n}", "Write site reports for visits in miles and US dates",
     "Use metric units and ISO dates in documents"),
    ("git_commit", "The answer must use imperative mood and reference the ticket",
     "Commit the fix for bug {n}", "Commit bug fixes with a past-tense summary only",
     "Use imperative mood and reference the ticket in commit messages"),
)


def run_arm(episodes: int, seed: int, cycle: int, evolve: bool) -> dict[str, Any]:
    """One arm: a fresh in-memory Memory, the same task stream for the same seed."""
    now = [START]
    mem = Memory(None, user="agent", embedder=HashEmbedder(),
                 settings=Settings(evolve_in_cycle=evolve, random_seed=seed), clock=lambda: now[0])
    for tool, criteria, _, wrong, right in FAMILIES:
        mem.add_judge(f"{tool}_judge", criteria, node=tool)
        mem.add_learning(wrong, tool=tool)
        mem.add_learning(right, tool=tool)
    rng = random.Random(f"tasks-{seed}")
    successes: list[bool] = []
    evolved = 0
    t0 = time.perf_counter()
    try:
        for n in range(1, episodes + 1):
            now[0] += timedelta(hours=1)
            tool, criteria, task, _, _ = FAMILIES[rng.randrange(len(FAMILIES))]
            ctx = mem.context(task.format(n=rng.randrange(1000)), tool=tool, limit=3)
            chosen = ctx.learnings[0].learning if ctx.learnings else None
            answer = chosen.content if chosen is not None else "Done."
            ok = judge_output(answer, f"{tool}_judge", criteria).passed
            mem.record_outcome(ctx.id, success=ok, used=[chosen.id] if chosen is not None else [])
            successes.append(ok)
            if cycle and n % cycle == 0:
                evolved += len(mem.run_cycle().evolved)
    finally:
        mem.close()
    tail = successes[-(episodes // 3):]
    return {"evolve": evolve, "seed": seed, "success": sum(successes) / len(successes),
            "last_third": sum(tail) / len(tail), "evolved": evolved, "seconds": round(time.perf_counter() - t0, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=240)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cycle", type=int, default=20, help="run_cycle() every N episodes")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/ (default: results/local/)")
    args = ap.parse_args()
    runs = [run_arm(args.episodes, seed, args.cycle, evolve) for seed in range(args.seeds) for evolve in (False, True)]
    summary = {}
    for evolve in (False, True):
        arm = [r for r in runs if r["evolve"] is evolve]
        summary["on" if evolve else "off"] = {
            "success": statistics.fmean(r["success"] for r in arm),
            "last_third": statistics.fmean(r["last_third"] for r in arm),
            "evolved": statistics.fmean(r["evolved"] for r in arm)}
    result = {"benchmark": "evolution", "episodes": args.episodes, "seeds": args.seeds, "cycle": args.cycle,
              "families": len(FAMILIES), "summary": summary, "runs": runs}
    folder = REPO / "benchmarks" / "results" / ("" if args.save else "local")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evolution.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name, s in summary.items():
        print(f"evolution {name:3}: success {100 * s['success']:.1f} %, last third {100 * s['last_third']:.1f} %, "
              f"{s['evolved']:.1f} learnings evolved per run")


if __name__ == "__main__":
    main()
