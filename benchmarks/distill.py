"""Distillation on a generated set with known clusters: purity and coverage.

    python -m benchmarks.distill [--embedder hash|minilm] [--similarity X] [--per-theme N] [--json] [--save]

A generated set of episodic observations: ``CLUSTERS`` themes, each written in several
paraphrases with varying details (people, tools, objects), plus unrelated singletons. Observations
are added in two waves (60 % then 40 %, shuffled) with ``distill()`` after each, so the second run
is incremental. Reported: *purity* (share of distilled members whose rule's majority theme is
their own), *coverage* (share of themed observations distilled into some rule), rules per theme,
singletons wrongly distilled, and the time per run. Writes ``benchmarks/results/local/distill.json``
(``--save``: ``benchmarks/results/distill.json``).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from graphmem import HashEmbedder, Memory, Settings

REPO = Path(__file__).resolve().parents[1]

THEMES: dict[str, list[str]] = {
    "decorators": ["The user asked how Python decorators work with {x}",
                   "Question about writing a Python decorator for {x}",
                   "User wanted an example of a Python decorator that handles {x}"],
    "email_length": ["The user complained that the email to {p} was too long",
                     "Email draft for {p} was too long according to the user",
                     "User said the email to {p} should have been shorter"],
    "arithmetic_routing": ["Simple arithmetic like {n} plus {n} was routed to the expensive cloud model",
                           "Routed the sum {n} + {n} to the costly cloud model instead of the local one",
                           "The cloud model was used for trivial arithmetic ({n} times {n})"],
    "timezone": ["Meeting with {p} was booked in the wrong timezone",
                 "Calendar invite for {p} used the wrong timezone",
                 "User corrected the timezone of the meeting with {p}"],
    "csv_parsing": ["Parsing the CSV export from {x} failed on quoted commas",
                    "CSV file from {x} broke the parser because of quoted commas",
                    "Quoted commas in the {x} CSV made parsing fail"],
}
SINGLETONS = [
    "The user likes green tea in the morning", "Deployment of the website finished without errors",
    "A new printer was installed in the office", "The weekly report was shared with the finance team",
    "User mentioned they are travelling to Lisbon next month", "The build cache was cleared on Friday",
]
PEOPLE = ["Dana", "Omar", "Priya", "Lena", "Marco", "Yuki"]
THINGS = ["logging", "retries", "caching", "timing", "auth checks", "rate limits", "Salesforce", "Stripe", "Jira"]


def generate(per_theme: int = 6, seed: int = 0) -> list[tuple[str, str | None]]:
    """(text, theme or None) pairs, shuffled."""
    rng = random.Random(seed)
    items: list[tuple[str, str | None]] = []
    for theme, templates in THEMES.items():
        for i in range(per_theme):
            text = templates[i % len(templates)].format(
                x=rng.choice(THINGS), p=rng.choice(PEOPLE), n=rng.randint(2, 99))
            items.append((text, theme))
    items += [(t, None) for t in SINGLETONS]
    rng.shuffle(items)
    return items


def evaluate(mem: Memory, labels: dict[str, str | None]) -> dict[str, Any]:
    """Purity and coverage of the rules distilled so far."""
    rows = mem.cypher("MATCH (r:Learning)-[:DERIVED_FROM]->(m:Learning) WHERE r.source_type = 'distillation' "
                      "RETURN r.id AS rule, m.id AS member")
    members: dict[str, list[str]] = {}
    for r in rows:
        members.setdefault(r["rule"], []).append(r["member"])
    distilled = {m for ms in members.values() for m in ms}
    pure = 0
    rules_per_theme: Counter[str] = Counter()
    for ms in members.values():
        themes = Counter(labels.get(m) for m in ms)
        top, count = themes.most_common(1)[0]
        pure += count if top is not None else 0
        if top is not None:
            rules_per_theme[top] += 1
    themed = [i for i, t in labels.items() if t is not None]
    return {
        "rules": len(members),
        "purity": pure / len(distilled) if distilled else 0.0,
        "coverage": sum(1 for i in themed if i in distilled) / len(themed),
        "rules_per_theme": dict(sorted(rules_per_theme.items())),
        "singletons_distilled": sum(1 for i, t in labels.items() if t is None and i in distilled),
    }


def run(embedder_name: str = "hash", per_theme: int = 6, seed: int = 0, settings: Settings | None = None) -> dict[str, Any]:
    """Two waves of observations, distill() after each; figures after each wave."""
    if embedder_name == "minilm":
        from graphmem.embed import SentenceTransformerEmbedder

        embedder: Any = SentenceTransformerEmbedder()
    else:
        embedder = HashEmbedder()
    items = generate(per_theme, seed)
    cut = int(len(items) * 0.6)
    out: dict[str, Any] = {"embedder": embedder.name, "observations": len(items), "waves": []}
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "d.kuzu", user="bench", embedder=embedder,
                                                      settings=settings) as mem:
        labels: dict[str, str | None] = {}
        for wave in (items[:cut], items[cut:]):
            for text, theme in wave:
                labels[mem.add_learning(text, kind="observation").id] = theme
            t0 = time.perf_counter()
            report = mem.distill()
            figures = evaluate(mem, labels)
            figures.update(candidates=report.candidates, created=len(report.created),
                           extended=len(report.rules) - len(report.created), pending=report.pending,
                           seconds=round(time.perf_counter() - t0, 3))
            out["waves"].append(figures)
    return out


def main() -> None:
    """Print (or save) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    parser.add_argument("--similarity", type=float, default=None, help="Settings.distill_similarity to use.")
    parser.add_argument("--per-theme", type=int, default=6, help="Observations per theme.")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    settings = Settings(distill_similarity=args.similarity) if args.similarity is not None else None
    result = run(args.embedder, per_theme=args.per_theme, settings=settings)
    folder = REPO / "benchmarks" / "results" / ("" if args.save else "local")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"distill_{args.embedder}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2) if args.json else "\n".join(
        f"wave {i + 1}: {w['rules']} rules, purity {w['purity']:.3f}, coverage {w['coverage']:.3f}, "
        f"singletons distilled {w['singletons_distilled']}, created {w['created']}, extended {w['extended']}, "
        f"pending {w['pending']}, {w['seconds']} s" for i, w in enumerate(result["waves"])))


if __name__ == "__main__":
    main()
