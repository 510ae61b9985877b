"""Where add_learning's time goes at scale: each Kùzu statement of a single add, and their parts.

    python -m benchmarks.write_path [--at 100000] [--singles 150] [--embedder hash|minilm|minilm-int8]
                                    [--save | --json-out PATH]

Bulk-imports ``--at`` generated learnings (as ``benchmarks.ingest --at`` does), then times
``--singles`` add_learning calls, recording every statement the store runs (grouped by its first
words) and the transaction's BEGIN and COMMIT. Then, on the same file, inside transactions that
are rolled back, it times the parts of the statement that creates one learning: the node alone,
the node with its tool, topic and entity edges (without the co-occurrence count, RELATED, which
the add merges into the same statement), reading that RELATED edge, and reading one learning's
tool edge (relationship scans). (The RELATED merge is not timed alone: after a few rolled-back
updates of the same RELATED edge, Kùzu 0.11.3 refused the next one with "Write-write conflict of
updating the same row".)
Each part is the median of ``--parts-rounds`` rounds. The hash embedder (default) leaves only the
writes; MiniLM shows how the embedding overlaps them: the run also times each add's embedding
(computed on a worker beside the writes), how long the add then waited for it, and the same texts
embedded alone afterwards.

Writes benchmarks/results/local/write_path.json (ignored); ``--save`` writes the tracked
benchmarks/results/write_path.json instead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
import warnings
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

import graphmem.learnings as learnings_module
from benchmarks.common import results_dir
from benchmarks.ingest import _checkpoint, _embedder, _prefill, synthetic_item
from graphmem import Memory
from graphmem.embed import Embedder
from graphmem.llm import OfflineLLM

_PROPS = ("id: $id, user_id: 'bench', shared: false, kind: 'rule', content: $id, status: 'active', tier: 'active', "
          "score: 0.5, confidence: 0.5, created_at: timestamp('2026-01-01'), updated_at: timestamp('2026-01-01'), "
          "content_key: $id, search_text: $id")
_LINKED = (f"CREATE (l:Learning {{{_PROPS}}}) WITH l MERGE (a1:Tool {{name: $tool}}) CREATE (l)-[:ABOUT_TOOL]->(a1) "
           "WITH l, a1 MERGE (a2:Topic {name: $topic}) CREATE (l)-[:ABOUT_TOPIC]->(a2) "
           "WITH l, a1, a2 MERGE (a3:Entity {name: $entity}) CREATE (l)-[:MENTIONS]->(a3)")
PARTS = {
    "CREATE the node alone": (f"CREATE (l:Learning {{{_PROPS}}})", ("id",)),
    "CREATE the node, MERGE its 3 anchors, CREATE 3 edges": (_LINKED, ("id", "tool", "topic", "entity")),
    "read the RELATED edge of its topic and entity": (
        "MATCH (a:Topic {name: $topic})-[r:RELATED]->(b:Entity {name: $entity}) RETURN r.weight", ("topic", "entity")),
    "read one learning by its key": ("MATCH (l:Learning {id: $lid}) RETURN l.id", ("lid",)),
    "read one learning's tool edge": ("MATCH (l:Learning {id: $lid})-[:ABOUT_TOOL]->(t) RETURN t.name", ("lid",)),
}


def _group(cypher: str) -> str:
    words = " ".join(cypher.split())
    if words.startswith("CREATE (l:Learning"):
        return "CREATE the learning with its edges" + (" and RELATED" if "RELATED" in words else "")
    return words[:60]


def time_singles(mem: Memory, items: list[dict[str, Any]]) -> dict[str, Any]:
    """add_learning of each item; the latency, and every statement's time grouped by its start."""
    store: Any = mem.store
    spent: dict[str, list[float]] = defaultdict(list)
    run = store._run

    def timed_run(conn: Any, cypher: str, params: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return run(conn, cypher, params, **kw)
        finally:
            spent[_group(cypher)].append(time.perf_counter() - t)

    conn = store._conn_main
    execute = conn.execute

    def timed_execute(query: Any, *a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return execute(query, *a, **k)
        finally:
            if isinstance(query, str) and query in ("BEGIN TRANSACTION", "COMMIT"):
                spent[query].append(time.perf_counter() - t)

    for item in items[:10]:  # warm: prepared statements, caches
        mem.add_learning(**item)
    embedding: dict[str, list[float]] = defaultdict(list)
    embedder: Any = mem.deps.embedder
    embed, beside = embedder.embed, learnings_module.embed_one_beside

    def timed_embed(texts: Any) -> Any:  # on the worker beside the writes (or the caller's thread)
        t = time.perf_counter()
        try:
            return embed(texts)
        finally:
            embedding["computing"].append(time.perf_counter() - t)

    def timed_beside(embedder: Embedder, text: str) -> Callable[[], np.ndarray]:
        vector = beside(embedder, text)

        def wait() -> np.ndarray:  # what the add then waits for the vector, after its other writes
            t = time.perf_counter()
            try:
                return vector()
            finally:
                embedding["waited"].append(time.perf_counter() - t)
        return wait

    store._run, conn.execute = timed_run, timed_execute
    embedder.embed, learnings_module.embed_one_beside = timed_embed, timed_beside
    lat = []
    try:
        for item in items[10:]:
            t = time.perf_counter()
            mem.add_learning(**item)
            lat.append(time.perf_counter() - t)
    finally:
        del store._run, embedder.embed
        conn.execute = execute
        learnings_module.embed_one_beside = beside
    for item in items[10:]:  # the same texts embedded alone, nothing else running
        t = time.perf_counter()
        embedder.embed([item["content"]])
        embedding["alone"].append(time.perf_counter() - t)
    n = len(lat)
    return {
        "calls": n,
        "p50_ms": round(1000 * statistics.median(lat), 2),
        "mean_ms": round(1000 * statistics.fmean(lat), 2),
        "p95_ms": round(1000 * sorted(lat)[int(0.95 * (n - 1))], 2),
        "statements": {k: {"per_call": round(len(v) / n, 2), "p50_ms": round(1000 * statistics.median(v), 2),
                           "ms_per_call": round(1000 * sum(v) / n, 2)}
                       for k, v in sorted(spent.items(), key=lambda kv: -sum(kv[1]))},
        "embedding_p50_ms": {k: round(1000 * statistics.median(v), 2) for k, v in embedding.items()},
    }


def time_parts(mem: Memory, item: dict[str, Any], rounds: int) -> dict[str, float]:
    """Median ms of each of :data:`PARTS` for the anchors of ``item`` (one already added, so its
    RELATED edge exists), each in a transaction of its own, rolled back."""
    store: Any = mem.store
    lid = mem.learnings(limit=1)[0].id
    out: dict[str, list[float]] = defaultdict(list)
    with store.exclusive(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        conn = store._conn_main
        for _ in range(rounds + 3):
            for name, (cypher, keys) in PARTS.items():
                values = {"id": str(uuid.uuid4()), "tool": item["tool"], "topic": item["topics"][0],
                          "entity": item["entities"][0], "lid": lid}
                conn.execute("BEGIN TRANSACTION")  # each part in a transaction of its own, rolled back
                try:
                    prepared = conn.prepare(cypher)
                    t = time.perf_counter()
                    result = conn.execute(prepared, {k: values[k] for k in keys})
                    while result.has_next():
                        result.get_next()
                    out[name].append(time.perf_counter() - t)
                finally:
                    conn.execute("ROLLBACK")
    return {name: round(1000 * statistics.median(v[3:]), 2) for name, v in out.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print two tables, write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", type=int, default=100_000, help="learnings bulk-imported into the file first")
    parser.add_argument("--singles", type=int, default=150, help="add_learning calls timed")
    parser.add_argument("--parts-rounds", type=int, default=30)
    parser.add_argument("--embedder", choices=["hash", "minilm", "minilm-int8"], default="hash")
    parser.add_argument("--json-out", type=Path, default=None)
    parser.add_argument("--save", action="store_true", help="write the tracked benchmarks/results/write_path.json")
    args = parser.parse_args(argv)
    args.json_out = args.json_out or results_dir(args.save) / "write_path.json"
    embedder = _embedder(args.embedder)
    embedder.embed(["warm up"])
    items = [synthetic_item(30_000_000 + i) for i in range(args.singles + 10)]
    with tempfile.TemporaryDirectory() as tmp, \
            Memory(Path(tmp) / "write_path.kuzu", user="bench", embedder=embedder, llm=OfflineLLM()) as mem:
        _prefill(mem, args.at, embedder.dim)
        mem.add_learnings([synthetic_item(20_000_000 + i) for i in range(100)])  # the summaries' first refresh
        _checkpoint(mem)
        singles = time_singles(mem, items)
        parts = time_parts(mem, items[-1], args.parts_rounds)
    result = {"at": args.at, "embedder": args.embedder, "add_learning": singles, "parts_ms": parts}
    console = Console()
    table = Table(title=f"add_learning at {args.at:,} learnings ({args.embedder}): p50 {singles['p50_ms']} ms, "
                        f"p95 {singles['p95_ms']} ms")
    for col in ("statement", "per call", "p50 ms", "ms per call"):
        table.add_column(col, justify="left" if col == "statement" else "right")
    for name, s in singles["statements"].items():
        table.add_row(name, f"{s['per_call']:.2f}", f"{s['p50_ms']:.2f}", f"{s['ms_per_call']:.2f}")
    console.print(table)
    e = singles["embedding_p50_ms"]
    console.print(f"the embedding (p50): {e['computing']:.2f} ms beside the writes, the add then waited "
                  f"{e['waited']:.2f} ms for it; the same texts alone: {e['alone']:.2f} ms")
    table = Table(title="parts of the statement that creates a learning (rolled back)")
    table.add_column("statement")
    table.add_column("p50 ms", justify="right")
    for name, ms in parts.items():
        table.add_row(name, f"{ms:.2f}")
    console.print(table)
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    console.print(f"wrote {args.json_out}")
    return result


if __name__ == "__main__":
    main()
