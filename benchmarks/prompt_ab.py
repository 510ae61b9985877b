"""Does the prompt A/B test pick the better version, and how often does it promote an equal one?

    python -m benchmarks.prompt_ab [--runs 400] [--json] [--save]

Seeded simulations of :func:`graphmem.prompts.simulate_ab` (the same split, counts and decision
rule the cycle uses; a cycle every 50 sessions): per scenario (true success rates of the active
and the candidate version) and per posterior threshold, the share of runs that promote the
candidate, reject it, or stop inconclusive, and the mean sessions until the decision. Then one
end-to-end run through ``Memory`` (serve → record_outcome → run_cycle) with the default
Settings. Writes ``benchmarks/results/local/prompt_ab.json`` (``--save``:
``benchmarks/results/prompt_ab.json``).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from graphmem import HashEmbedder, Memory, Settings
from graphmem.prompts import simulate_ab

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = [(0.5, 0.5), (0.6, 0.6), (0.5, 0.6), (0.5, 0.7), (0.6, 0.75), (0.7, 0.5)]


def simulate(runs: int, thresholds: tuple[float, ...] = (0.95, 0.99)) -> list[dict[str, Any]]:
    """One row per (threshold, scenario): decision shares and mean sessions."""
    rows = []
    for threshold in thresholds:
        s = Settings(prompt_ab_confidence=threshold)
        for p_a, p_c in SCENARIOS:
            out = [simulate_ab(p_a, p_c, s, seed=seed) for seed in range(runs)]
            share = {d: sum(1 for x, _ in out if x == d) / runs for d in ("promote", "reject", "inconclusive")}
            rows.append({"confidence": threshold, "p_active": p_a, "p_candidate": p_c, **share,
                         "mean_sessions": sum(n for _, n in out) / runs})
    return rows


def end_to_end(p_active: float = 0.5, p_candidate: float = 0.7, sessions: int = 700, seed: int = 0) -> dict[str, Any]:
    """Serve, credit and cycle through a real Memory (HashEmbedder, a temporary Kùzu file)."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "ab.kuzu", user="bench", embedder=HashEmbedder()) as mem:
        mem.add_prompt("orchestrator", "Route each request to the cheapest model that can answer it.")
        cand = mem.add_prompt("orchestrator", "Route each request to the cheapest model; check tools are needed.")
        t0, decided_at = time.perf_counter(), None
        for i in range(sessions):
            serve = mem.prompt_for("orchestrator", session_id=f"s{i}")
            mem.record_outcome(serve.context_id, success=rng.random() < (p_candidate if serve.arm == "candidate" else p_active))
            if (i + 1) % 50 == 0 and mem.run_cycle().prompts:
                decided_at = i + 1
                break
        elapsed = time.perf_counter() - t0
        return {"p_active": p_active, "p_candidate": p_candidate, "decided_after_sessions": decided_at,
                "active_now": mem.active_prompt("orchestrator").label, "candidate": cand.label,
                "ms_per_session": 1000 * elapsed / (decided_at or sessions)}


def main() -> None:
    """Run the simulations and the end-to-end check; print a table or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    result = {"runs": args.runs, "simulations": simulate(args.runs), "end_to_end": end_to_end()}
    folder = REPO / "benchmarks" / "results" / ("" if args.save else "local")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prompt_ab.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'P>=':>5} {'p_active':>8} {'p_cand':>7} {'promote':>8} {'reject':>7} {'inconcl':>8} {'sessions':>9}")
    for r in result["simulations"]:
        print(f"{r['confidence']:>5} {r['p_active']:>8} {r['p_candidate']:>7} {r['promote']:>8.3f} "
              f"{r['reject']:>7.3f} {r['inconclusive']:>8.3f} {r['mean_sessions']:>9.0f}")
    print("end to end:", result["end_to_end"])


if __name__ == "__main__":
    main()
