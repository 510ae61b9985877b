"""The auto-tuner's retrieval guard: P@5, noise and context latency on the labelled learnings set.

    python -m benchmarks.tuning [--embedder minilm|hash] [--json]

:class:`LabelledSetEvaluator` is what :func:`graphmem.tuning.labelled_set_evaluator` calls: it loads
``benchmarks/data/learnings.json`` once into a temporary Kùzu file (as ``benchmarks.learnings``
does) and, for each ``Settings``, asks every labelled query and returns a
:class:`graphmem.tuning.GuardScore` (mean P@5 over the queries with relevant learnings, noise@10
summed over all queries, the median ``context()`` time). The command prints that score for the
defaults and for every one-step move of every tunable (:data:`graphmem.tuning.TUNABLES`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.dataset import BenchDataset, load_dataset, noise_keys
from benchmarks.learnings import LIMIT, NOW, TOKEN_BUDGET, load_into, make_embedder
from benchmarks.metrics import noise_count, precision_at_k
from graphmem.config import Settings
from graphmem.embed import Embedder
from graphmem.memory import Memory
from graphmem.tuning import TUNABLES, GuardScore, apply_values


class LabelledSetEvaluator:
    """``evaluator(settings) -> GuardScore`` on the labelled set (loaded on the first call)."""

    def __init__(self, embedder: Embedder, dataset: BenchDataset | None = None) -> None:
        self.embedder = embedder
        self.dataset = dataset
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._keys: dict[str, str] = {}
        self._lock = threading.Lock()

    def _path(self) -> Path:
        if self._tmp is None:
            self.dataset = self.dataset or load_dataset()
            self._tmp = tempfile.TemporaryDirectory(prefix="graphmem-tune-guard-")
            self._keys = load_into(self.dataset, Path(self._tmp.name) / "guard.kuzu", self.embedder)
        return Path(self._tmp.name) / "guard.kuzu"

    def __call__(self, settings: Settings) -> GuardScore:
        with self._lock:
            path = self._path()
            dataset = self.dataset
            assert dataset is not None
            base = Memory(path, user=dataset.users[0], embedder=self.embedder, settings=settings, clock=lambda: NOW)
            mems = {u: base.for_user(u) for u in dataset.users}
            noise_by_user = {u: noise_keys(dataset, u) for u in dataset.users}
            p5s: list[float] = []
            noise, latencies = 0, []
            try:
                for q in dataset.queries:
                    ctx = mems[q.user].context(
                        q.text, tool=q.tool, entities=q.entities, topics=q.topics, objective_type=q.objective_type,
                        limit=LIMIT, token_budget=TOKEN_BUDGET,
                    )
                    latencies.append(float(ctx.timings_ms.get("total", 0.0)))
                    ranked = [self._keys.get(i.learning.id, f"?{i.learning.id}") for i in ctx.learnings]
                    p5 = precision_at_k(ranked, q.relevant, 5)
                    if p5 is not None:
                        p5s.append(p5)
                    noise += noise_count(ranked, noise_by_user[q.user], k=LIMIT)
            finally:
                for m in mems.values():
                    m.close()
                base.close()
            return GuardScore(p5=sum(p5s) / len(p5s) if p5s else 0.0, noise=noise,
                              latency_ms=statistics.median(latencies) if latencies else 0.0,
                              queries=len(dataset.queries))

    def close(self) -> None:
        """Delete the temporary file."""
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def sensitivity(embedder_name: str) -> dict[str, Any]:
    """The guard for the defaults and for one step up and down of every tunable."""
    evaluator = LabelledSetEvaluator(make_embedder(embedder_name))
    try:
        base = Settings()
        out: dict[str, Any] = {"embedder": embedder_name, "defaults": evaluator(base).model_dump(), "moves": []}
        for t in TUNABLES:
            old = float(getattr(base, t.name))
            for direction in (-1, +1):
                new = t.move(old, direction)
                if new == old:
                    continue
                score = evaluator(apply_values(base, {t.name: new}))
                out["moves"].append({"name": t.name, "old": old, "new": new, **score.model_dump()})
        return out
    finally:
        evaluator.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Print the guard for the defaults and every one-step move."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.tuning", description=__doc__.split("\n\n")[0])
    ap.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result = sensitivity(args.embedder)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    d = result["defaults"]
    print(f"defaults ({args.embedder}): P@5 {d['p5']:.3f}, noise {d['noise']}, median latency {d['latency_ms']:.1f} ms")
    for m in result["moves"]:
        print(f"  {m['name']:28s} {m['old']:>7g} -> {m['new']:<7g} P@5 {m['p5']:.3f} "
              f"({m['p5'] - d['p5']:+.3f}), noise {m['noise']}, latency {m['latency_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
