"""Do the exported regression tests tell a fixed agent from the one that failed?

    python -m benchmarks.regression [--n 30] [--json] [--save]

Generated failures: ``n`` arithmetic questions ("What is 17 + 25?") that an agent answered
wrongly, each judged against its ground truth with ``Memory.trace`` (offline judges; the
reflector writes the fix). ``export_tests`` turns them into specs; the generated pytest file is run
(``pytest DIR``) with three agents: the one that failed (repeats its old answers), one that
consults the memory (``context(question, tool=node)`` and follows the top rule's quoted answer),
and one that computes the answer. Reported: specs written, export time, and tests passed per
agent. Writes ``benchmarks/results/local/regression.json`` (``--save``:
``benchmarks/results/regression.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from graphmem import HashEmbedder, Memory

REPO = Path(__file__).resolve().parents[1]

_AGENTS = '''
import json, re
from pathlib import Path
WRONG = json.loads(Path(__file__).with_name("wrong.json").read_text())

def failed(text):
    return WRONG[text]

def computed(text):
    a, op, b = re.search(r"(\\d+) ([+*-]) (\\d+)", text).groups()
    return str({"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op])

def memory_guided(text):
    from graphmem import HashEmbedder, Memory
    with Memory(Path(__file__).with_name("bench.kuzu"), user="bench", embedder=HashEmbedder(), read_only=True) as mem:
        for item in mem.context(text, tool="calculator").learnings:
            if text in item.learning.content:
                m = re.search(r'always answer "([^"]+)"', item.learning.content)
                if m:
                    return m.group(1)
    return "I do not know"
'''


def run(n: int = 30, seed: int = 0) -> dict[str, Any]:
    """Generate, export, replay; the figures."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        wrong: dict[str, str] = {}
        with Memory(work / "bench.kuzu", user="bench", embedder=HashEmbedder()) as mem:
            for _ in range(n):
                a, b, op = rng.randint(2, 99), rng.randint(2, 99), rng.choice("+-*")
                question = f"What is {a} {op} {b}?"
                truth = str({"+": a + b, "-": a - b, "*": a * b}[op])
                answer = rng.choice(["Let me run some code first.", str(int(truth) + rng.randint(1, 9))])
                wrong[question] = answer
                mem.trace(question, answer, node="calculator", ground_truth=truth)
            t0 = time.perf_counter()
            report = mem.export_tests(work / "ai_tests", agent="agents:failed")
            export_s = time.perf_counter() - t0
        (work / "agents.py").write_text(_AGENTS, encoding="utf-8")
        (work / "wrong.json").write_text(json.dumps(wrong), encoding="utf-8")
        passed: dict[str, int] = {}
        for agent in ("failed", "memory_guided", "computed"):
            env = {**os.environ, "GRAPHMEM_AGENT": f"agents:{agent}", "PYTHONPATH": os.pathsep.join([str(work), str(REPO)])}
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(work / "ai_tests")],
                                  cwd=work, env=env, capture_output=True, text=True, timeout=900)
            m = re.search(r"(\d+) passed", done.stdout)
            passed[agent] = int(m.group(1)) if m else 0
        return {"failures": n, "specs": len(report.specs), "export_seconds": round(export_s, 3), "passed": passed}


def main() -> None:
    """Print (or save) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    result = run(args.n)
    folder = REPO / "benchmarks" / "results" / ("" if args.save else "local")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "regression.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2) if args.json else
          f"{result['specs']} specs from {result['failures']} failures in {result['export_seconds']} s; passed: "
          + ", ".join(f"{k} {v}/{result['specs']}" for k, v in result["passed"].items()))


if __name__ == "__main__":
    main()
