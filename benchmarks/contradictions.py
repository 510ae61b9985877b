"""How well does the offline supersede rule judge contradictions? Precision and recall on pairs.

    python -m benchmarks.contradictions [--json] [--save]

Reads the labelled pairs in ``benchmarks/data/contradiction_pairs.jsonl`` (new rule, older rule,
their tools and entities; label contradicting / compatible / unrelated; scope same / different /
none), asks :func:`graphmem.learn.contradiction.supersedes` (same scope and a same-aspect
conflict, or opposite polarity on the same subject, as the curator decides) whether the new rule
replaces the older one, and reports precision, recall and every pair it gets wrong. A pair should
be superseded when it contradicts on the same scope. A false supersede loses a good rule, so
precision matters more than recall. Writes ``benchmarks/results/local/contradictions.json``
(``--save``: ``benchmarks/results/contradictions.json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from graphmem.learn.contradiction import supersedes

REPO = Path(__file__).resolve().parents[1]
PAIRS = REPO / "benchmarks" / "data" / "contradiction_pairs.jsonl"


def load_pairs(path: Path = PAIRS) -> list[dict[str, Any]]:
    """The labelled pairs, one dict per line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def evaluate(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """Precision, recall, F1 of the supersede decision, the counts per label and scope, the errors."""
    tp = fp = fn = tn = 0
    errors: list[dict[str, Any]] = []
    by_group: dict[str, dict[str, int]] = {}
    for p in pairs:
        said = supersedes(p["new"], p["new_tool"], p["new_entities"], p["old"], p["old_tool"], p["old_entities"])
        want = bool(p["supersede"])
        tp, fp = tp + (said and want), fp + (said and not want)
        fn, tn = fn + (want and not said), tn + (not said and not want)
        group = by_group.setdefault(f"{p['label']}/{p['scope']}", {"pairs": 0, "superseded": 0})
        group["pairs"] += 1
        group["superseded"] += int(said)
        if said != want:
            errors.append({"id": p["id"], "kind": "false supersede" if said else "missed", "new": p["new"],
                           "old": p["old"], "label": p["label"], "scope": p["scope"]})
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"pairs": len(pairs), "should_supersede": tp + fn, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3),
            "by_group": by_group, "errors": errors}


def main(argv: list[str] | None = None) -> int:
    """Run the evaluation, print a summary (or JSON), write the results file."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print the full result as JSON")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/contradictions.json")
    args = ap.parse_args(argv)
    result = evaluate(load_pairs())
    out = REPO / "benchmarks" / "results" / ("contradictions.json" if args.save else "local/contradictions.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['pairs']} pairs, {result['should_supersede']} should supersede: precision "
          f"{result['precision']:.3f}, recall {result['recall']:.3f}, F1 {result['f1']:.3f} "
          f"(tp {result['tp']}, fp {result['fp']}, fn {result['fn']}, tn {result['tn']})")
    for group, c in sorted(result["by_group"].items()):
        print(f"  {group:28s} {c['superseded']:3d}/{c['pairs']:3d} superseded")
    for e in result["errors"]:
        print(f"  {e['kind']:15s} [{e['label']}/{e['scope']}] {e['new']!r} vs {e['old']!r}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
