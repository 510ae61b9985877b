"""context() latency on a Bolt graph server (ArcadeDB from the arcadedb-embedded wheel) vs Kùzu.

    python -m benchmarks.bolt [--sizes 1000 10000] [--queries 100] [--freshness 0 1]

For each size the same generated learnings (benchmarks/scale.py's generator, HashEmbedder) are
bulk-loaded into a fresh Kùzu file and into a fresh ArcadeDB database (one server, started in a
child process, on 127.0.0.1), then the same queries run through ``Memory.context()`` for one user
on each. Reported per store: open (mirror load) time, context() p50/p95/mean, and on Bolt the
share of context() time the calling thread spent inside driver calls (network round trips plus
the server's work), with the number of round trips per context. ``--freshness`` runs Bolt with
each ``store.freshness_seconds`` value (0: the shared write counter is read before every ranking
and top-level read; larger: at most that often).

Results go to benchmarks/results/local/bolt.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import scale

OUT = Path(__file__).resolve().parent / "results" / "local"


class RoundTrips:
    """Counts and times the driver calls made by one thread (patched into BoltConnection)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.calls = 0
        self.seconds = 0.0
        self.active = False

    def install(self) -> None:
        from graphmem.store.bolt import base

        me = self
        for name in ("execute",):
            orig = getattr(base.BoltConnection, name)

            def wrapped(self: Any, *a: Any, _orig: Any = orig, **k: Any) -> Any:
                if not me.active or threading.get_ident() != me.thread:
                    return _orig(self, *a, **k)
                t = time.perf_counter()
                try:
                    return _orig(self, *a, **k)
                finally:
                    me.calls += 1
                    me.seconds += time.perf_counter() - t

            setattr(base.BoltConnection, name, wrapped)


def learnings(specs: list[dict[str, Any]]) -> list[Any]:
    from graphmem.models import Learning

    base = time.time() - 200 * 86400
    out = []
    for i, s in enumerate(specs):
        when = datetime.fromtimestamp(base + i * (180 * 86400 / max(1, len(specs))), tz=UTC)
        out.append(Learning(
            user_id=s["user"], shared=s["shared"], content=s["content"], tool=s["tool"],
            entities=s["entities"], topics=s["topics"], status=s["status"], tier=s["tier"],
            canary_allocation=0.2 if s["status"] == "canary" else 1.0, helpful=s["helpful"],
            harmful=s["harmful"], confidence=s["confidence"], created_at=when, updated_at=when,
        ))
    return out


def related(items: list[Any]) -> dict[str, list[tuple[str, str, str, str, int]]]:
    pairs: dict[str, dict[tuple[str, str, str, str], int]] = {}
    for l in items:
        names = [("Topic", x) for x in l.topics] + [("Entity", x) for x in l.entities]
        mine = pairs.setdefault(l.user_id, {})
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                key = (names[a][0], names[a][1], names[b][0], names[b][1])
                mine[key] = mine.get(key, 0) + 1
    return {u: [(*k, w) for k, w in c.items()] for u, c in pairs.items()}


def fill(store: Any, items: list[Any], vectors: np.ndarray) -> float:
    t = time.perf_counter()
    store.bulk_insert_learnings(items, vectors)
    for user, edges in related(items).items():
        store.bulk_insert_related(edges, user_id=user)
    return time.perf_counter() - t


def run_contexts(mem: Any, qs: list[dict[str, Any]], trips: RoundTrips | None) -> dict[str, Any]:
    for q in qs[:5]:  # warm-up
        mem.context(q["query"], tool=q["tool"], entities=q["entities"])
    times, shown = [], []
    if trips is not None:
        trips.calls, trips.seconds, trips.active = 0, 0.0, True
    for q in qs:
        t = time.perf_counter()
        ctx = mem.context(q["query"], tool=q["tool"], entities=q["entities"])
        times.append(time.perf_counter() - t)
        shown.append([(s.learning.id, round(float(s.score), 6)) for s in ctx.learnings])
    out: dict[str, Any] = {
        "p50_ms": round(1000 * statistics.median(times), 2),
        "p95_ms": round(1000 * scale.pct(times, 95), 2),
        "mean_ms": round(1000 * statistics.mean(times), 2),
    }
    if trips is not None:
        trips.active = False
        out["round_trips_per_context"] = round(trips.calls / len(qs), 2)
        out["driver_share"] = round(trips.seconds / sum(times), 3)
        out["driver_ms_per_context"] = round(1000 * trips.seconds / len(qs), 2)
    out["_shown"] = shown
    return out


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--freshness", type=float, nargs="+", default=[0.0])
    parser.add_argument("--user", default="alice")
    parser.add_argument("--no-application-writes", action="store_true",
                        help="diagnostic: drop the Application record each context() writes in the background, "
                             "on both stores, to see what the writes cost the readers")
    parser.add_argument("--uncapped", action="store_true",
                        help="lift the graph expansion caps (they keep the first N learnings per anchor in the "
                             "engine's order, which differs between engines)")
    args = parser.parse_args(argv)

    from graphmem import HashEmbedder, Memory, Settings
    from graphmem.llm import OfflineLLM
    from graphmem.store import KuzuGraphStore
    from graphmem.store.bolt import open_bolt_store
    from graphmem.store.bolt.testing import ArcadeServer

    settings = Settings(graph_fanout_cap=10**6, graph_anchor_cap=10**6) if args.uncapped else Settings()
    embedder = HashEmbedder()
    now = datetime.now(UTC)  # one fixed clock for both stores: recency scores compare exactly
    trips = RoundTrips()
    trips.install()
    results: list[dict[str, Any]] = []
    with ArcadeServer() as srv, tempfile.TemporaryDirectory() as tmp:
        print(f"ArcadeDB server started in {srv.start_seconds:.1f} s")
        for size in args.sizes:
            specs = scale.generate(size)
            items = learnings(specs)
            vectors = embedder.embed([s["content"] for s in specs]).astype(np.float32)
            qs = scale.queries(args.queries)
            row: dict[str, Any] = {"size": size, "queries": len(qs), "server_start_s": round(srv.start_seconds, 2),
                                   "uncapped": args.uncapped}

            path = Path(tmp) / f"m{size}.kuzu"
            store = KuzuGraphStore(path, dim=embedder.dim, embedder_name=embedder.name)
            row["kuzu_load_s"] = round(fill(store, items, vectors), 2)
            store.close()
            t = time.perf_counter()
            mem = Memory(path, user=args.user, embedder=embedder, llm=OfflineLLM(), settings=settings,
                         clock=lambda: now)
            row["kuzu_open_s"] = round(time.perf_counter() - t, 3)
            if args.no_application_writes:
                mem.store.defer_write = lambda fn: None
            kuzu = run_contexts(mem, qs, None)
            kuzu_order = list(mem.store.learning_catalog.ids)
            mem.close()

            url = srv.create_database(f"b{size}")
            store = open_bolt_store(url, dim=embedder.dim, embedder_name=embedder.name, auth=srv.auth)
            row["bolt_load_s"] = round(fill(store, items, vectors), 2)
            store.close()
            t = time.perf_counter()
            mem = Memory(url, user=args.user, embedder=embedder, llm=OfflineLLM(), bolt_auth=srv.auth, settings=settings,
                         clock=lambda: now)
            row["bolt_open_s"] = round(time.perf_counter() - t, 3)
            if args.no_application_writes:
                mem.store.defer_write = lambda fn: None
                row["no_application_writes"] = True
            # the mirrors' row order is each engine's scan order; ties in ranking keep it
            row["same_mirror_row_order"] = list(mem.store.learning_catalog.ids) == kuzu_order
            row["kuzu"] = {k: v for k, v in kuzu.items() if not k.startswith("_")}
            row["bolt"] = {}
            for fresh in args.freshness:
                mem.store.freshness_seconds = fresh
                bolt = run_contexts(mem, qs, trips)
                row["bolt"][f"freshness_{fresh:g}s"] = {k: v for k, v in bolt.items() if not k.startswith("_")}
                if "same_learnings_share" not in row:  # first Bolt run: the same contexts came before it
                    pairs = list(zip(kuzu["_shown"], bolt["_shown"]))
                    row["same_learnings_share"] = round(sum([i for i, _ in a] == [i for i, _ in b] for a, b in pairs) / len(qs), 3)
                    # differing only by which of equally scored learnings made it (ties keep mirror order)
                    row["same_scores_share"] = round(sum([x for _, x in a] == [x for _, x in b] for a, b in pairs) / len(qs), 3)
            mem.close()
            print(json.dumps(row, indent=1))
            results.append(row)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / ("bolt_uncapped.json" if args.uncapped else "bolt.json")).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
