"""Ingest and open speed: learnings/s for add_learning and add_learnings, time to open 100k.

    python -m benchmarks.ingest [--n 300] [--batch 100] [--open-size 100000] [--embedder minilm|hash]

Writes benchmarks/results/ingest.json. Data are generated deterministically.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from graphmem import HashEmbedder, Learning, Memory, SentenceTransformerEmbedder
from graphmem.embed import Embedder
from graphmem.llm import OfflineLLM

RESULTS = Path(__file__).resolve().parent / "results"
TOOLS = ["send_email", "web_search", "run_sql", "git_commit", "slack_message", "write_file", "http_request"]
PEOPLE = ["Dana", "Omar", "Priya", "Lena", "Marcus", "Yuki", "Acme", "Globex", "Initech"]
TOPICS = ["email style", "deploys", "sql performance", "meeting notes", "security", "testing", "billing"]
VERBS = ["Keep", "Always", "Never", "Prefer", "Avoid", "Check", "Use"]
OBJECTS = ["bullet points", "short paragraphs", "UTC timestamps", "the staging database", "a dry run first",
           "explicit column lists", "the release checklist", "a polite closing line", "retries with backoff"]


def synthetic_item(i: int) -> dict[str, Any]:
    """The i-th generated learning as add_learning arguments (deterministic)."""
    rng = np.random.default_rng(i)
    tool = TOOLS[i % len(TOOLS)]
    who = PEOPLE[int(rng.integers(len(PEOPLE)))]
    obj = OBJECTS[int(rng.integers(len(OBJECTS)))]
    verb = VERBS[int(rng.integers(len(VERBS)))]
    return {
        "content": f"{verb} {obj} when using {tool} for {who} (case {i})",
        "tool": tool,
        "entities": [who],
        "topics": [TOPICS[int(rng.integers(len(TOPICS)))]],
        "kind": "rule",
    }


def _embedder(name: str) -> Embedder:
    return HashEmbedder() if name == "hash" else SentenceTransformerEmbedder()


def measure_add(embedder: Embedder, n: int, batch: int) -> dict[str, float]:
    """learnings/s for n single add_learning calls and for add_learnings in batches."""
    items = [synthetic_item(i) for i in range(2 * n)]
    embedder.embed(["warm up"])
    with tempfile.TemporaryDirectory() as tmp:
        with Memory(Path(tmp) / "single.kuzu", user="bench", embedder=embedder, llm=OfflineLLM()) as mem:
            start = time.perf_counter()
            for item in items[:n]:
                mem.add_learning(**item)
            single = n / (time.perf_counter() - start)
        with Memory(Path(tmp) / "batch.kuzu", user="bench", embedder=embedder, llm=OfflineLLM()) as mem:
            start = time.perf_counter()
            for k in range(n, 2 * n, batch):
                mem.add_learnings(items[k : k + batch])
            batched = n / (time.perf_counter() - start)
    return {"add_learning_per_s": single, "add_learnings_per_s": batched}


def measure_open(size: int, dim: int = 384) -> dict[str, float]:
    """Seconds to open a file holding ``size`` learnings (catalog rebuild included)."""
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.kuzu"
        embedder = HashEmbedder(dim)
        mem = Memory(path, user="bench", embedder=embedder, llm=OfflineLLM())
        learnings = []
        for i in range(size):
            item = synthetic_item(i)
            learnings.append(Learning(user_id="bench", content=item["content"], tool=item["tool"],
                                      entities=item["entities"], topics=item["topics"]))
        vectors = rng.standard_normal((size, dim)).astype(np.float32)
        start = time.perf_counter()
        mem.store.bulk_insert_learnings(learnings, vectors)
        bulk_s = time.perf_counter() - start
        mem.close()
        start = time.perf_counter()
        mem = Memory(path, user="bench", embedder=embedder, llm=OfflineLLM())
        open_s = time.perf_counter() - start
        assert len(mem.store.learning_catalog) == size
        mem.close()
    return {"open_s": open_s, "bulk_import_s": bulk_s, "bulk_import_per_s": size / bulk_s, "size": size}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print a table, write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300, help="learnings per ingest measurement")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--open-size", type=int, default=100_000)
    parser.add_argument("--embedder", choices=["minilm", "hash", "both"], default="both")
    parser.add_argument("--json-out", type=Path, default=RESULTS / "ingest.json")
    args = parser.parse_args(argv)
    names = ["minilm", "hash"] if args.embedder == "both" else [args.embedder]
    result: dict[str, Any] = {"n": args.n, "batch": args.batch, "ingest": {}}
    for name in names:
        result["ingest"][name] = measure_add(_embedder(name), args.n, args.batch)
    result["open"] = measure_open(args.open_size)
    table = Table(title="graphmem ingest and open (python -m benchmarks.ingest)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, figures in result["ingest"].items():
        table.add_row(f"add_learning, {name} embedder", f"{figures['add_learning_per_s']:.0f} learnings/s")
        table.add_row(f"add_learnings (batches of {args.batch}), {name}", f"{figures['add_learnings_per_s']:.0f} learnings/s")
    table.add_row(f"open a {args.open_size:,}-learning file", f"{result['open']['open_s']:.2f} s")
    table.add_row(f"bulk import {args.open_size:,} (COPY)", f"{result['open']['bulk_import_per_s']:.0f} learnings/s")
    Console().print(table)
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(result, indent=2))
    from benchmarks.plots import named_bars

    rates = {f"{kind}, {name}": figures[f"{kind}_per_s"]
             for name, figures in result["ingest"].items() for kind in ("add_learning", "add_learnings")}
    named_bars(rates, "graphmem ingest rate", "learnings per second", args.json_out.with_suffix(".png"))
    return result


if __name__ == "__main__":
    main()
