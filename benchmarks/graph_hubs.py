"""The filter and graph stages of ranking at a million learnings, in memory (no Kùzu file).

    flock /work/big/big.lock nice -n 10 python -m benchmarks.graph_hubs --size 1000000 --queries 60

Builds a learning catalog with the scale benchmark's anchor mix (20 tools on 80 % of the
learnings, people drawn by a Zipf law so that one of them is linked to ~44 % of all learnings,
20 organisations, 30 topics by a Zipf law, 5 users, 2 % shared, canaries, archived rows) and
random int8 vectors, then times per query (thread CPU time) the eligibility mask and the graph
stage (``graph_candidates`` on the user's visible rows of each anchor + the graph list's order)
with ``graph_max_reached`` at its default and at 0 (no cap), on the cosines an HNSW search would leave: the query's exact top 1,024 rows
known, the rest computed on demand (:class:`~graphmem.store.vectors.LazyCosine`). It reports
how many of the graph list's 50 rows the capped stage shares with the uncapped one.
``--exact``: the cosines of every row at hand instead (what the exact scan leaves).
``--old DIR``: also time the graph and filter functions of another checkout (e.g. the code
before the cap) on the same catalog and queries.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def build(n: int, seed: int = 0) -> Any:
    """A LearningCatalog of ``n`` synthetic learnings (vectorised; ~1 min at 1M)."""
    from benchmarks.scale import ORGS, TOOLS, TOPICS, USERS, entities
    from graphmem.store.catalog import STATUS_CODE, TIER_CODE, LearningCatalog

    rng = np.random.default_rng(seed)
    people = [e for e in entities() if e not in ORGS]
    tool = rng.integers(len(TOOLS), size=n)
    has_tool = rng.random(n) < 0.8
    person = (rng.zipf(1.6, size=n) - 1) % len(people)
    org = rng.integers(len(ORGS), size=n)
    has_org = rng.random(n) < 0.7
    topic = (rng.zipf(1.4, size=n) - 1) % len(TOPICS)
    user = rng.integers(len(USERS), size=n)
    shared = rng.random(n) < 0.02
    r = rng.random(n)
    status = np.where(r < 0.85, STATUS_CODE["active"], np.where(r < 0.9, STATUS_CODE["canary"],
                      np.where(r < 0.95, STATUS_CODE["candidate"], STATUS_CODE["disabled"])))
    tier = np.where(rng.random(n) < 0.03, TIER_CODE["archive"], TIER_CODE["active"])
    tool_a = [("tool", t) for t in TOOLS]
    person_a = [("entity", p) for p in people]
    org_a = [("entity", o) for o in ORGS]
    topic_a = [("topic", t) for t in TOPICS]
    anchors = []
    for i in range(n):
        row = [tool_a[tool[i]]] if has_tool[i] else []
        row.append(person_a[person[i]])
        if has_org[i]:
            row.append(org_a[org[i]])
        row.append(topic_a[topic[i]])
        anchors.append(tuple(row))
    catalog = LearningCatalog(384)
    catalog.vectors.configure("int8", 0)
    catalog.vectors.start_load(n)
    ids = [f"l{i}" for i in range(n)]
    step = 100_000
    for start in range(0, n, step):
        block = rng.standard_normal((min(step, n - start), 384)).astype(np.float32)
        catalog.vectors.append_loaded(ids[start : start + len(block)], block)
    catalog.vectors.finish_load()
    columns = {c: np.zeros(n) for c in LearningCatalog.COLUMNS}
    columns.update(status=status.astype(float), tier=tier.astype(float), shared=shared.astype(float),
                   score=rng.random(n), canary_allocation=np.where(status == STATUS_CODE["canary"], 0.2, 1.0),
                   expires_at=np.full(n, np.inf), helpful=rng.poisson(2, n).astype(float))
    users = [USERS[u] for u in user]
    catalog.load_rows(ids, users, [TOOLS[t] if h else None for t, h in zip(tool, has_tool)], ids, columns, anchors)
    return catalog


def _load_old(path: Path) -> Any:
    """The candidates module of another checkout, imported under another name."""
    spec = importlib.util.spec_from_file_location("old_candidates", path / "graphmem" / "retrieve" / "candidates.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_candidates"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark from the command line."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--known", type=int, default=1024, help="rows whose cosine the vector search leaves known")
    ap.add_argument("--exact", action="store_true", help="cosines of every row at hand (the exact scan's array)")
    ap.add_argument("--old", type=Path, default=None, help="another checkout to time beside (its graph/filter code)")
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args(argv)
    from benchmarks.scale import ORGS, TOOLS, TOPICS, entities
    from graphmem import Settings
    from graphmem.retrieve.candidates import Eligibility, graph_candidates
    from graphmem.retrieve.rank import _order_graph
    from graphmem.store.vectors import LazyCosine

    t = time.perf_counter()
    catalog = build(args.size)
    print(f"built {args.size} rows in {time.perf_counter() - t:.0f} s; load {os.getloadavg()}", flush=True)
    old = _load_old(args.old) if args.old else None
    rng = np.random.default_rng(1)
    people = [e for e in entities() if e not in ORGS][:60]
    base = Settings()
    variants = {"capped": base, "uncapped": base.model_copy(update={"graph_max_reached": 0})}
    times: dict[str, list[float]] = {}
    overlap: list[float] = []
    eligibility = Eligibility()
    now = time.time()
    eligibility.mask(catalog, "alice", now, np.random.default_rng(0))  # the per-user rows, once
    user_col = old.UserColumn() if old else None
    if user_col is not None:
        user_col.mask(catalog, "alice")
    for i in range(args.queries):
        anchors = {"tool": [TOOLS[int(rng.integers(len(TOOLS)))]] if rng.random() < 0.5 else [],
                   "entity": [people[int(rng.integers(len(people)))], ORGS[int(rng.integers(len(ORGS)))]],
                   "topic": [TOPICS[int(rng.integers(len(TOPICS)))]], "objective_type": []}
        query = rng.standard_normal(384).astype(np.float32)
        th = time.thread_time()
        mask = eligibility.mask(catalog, "alice", now, np.random.default_rng(i))
        times.setdefault("filter_new", []).append((time.thread_time() - th) * 1e3)
        if old is not None and user_col is not None:
            th = time.thread_time()
            old_mask = old.eligible_mask(catalog, user_col.mask(catalog, "alice"), now, np.random.default_rng(i))
            times.setdefault("filter_old", []).append((time.thread_time() - th) * 1e3)
            assert old_mask.tolist() == mask.tolist() if i < 3 else True
        cos = catalog.vectors.cosine(query)  # untimed: what the HNSW search would find
        top = np.argpartition(-cos, args.known)[: args.known]
        found = top[mask[top]]
        pool = found[np.argsort(-cos[found])][:50]
        lists = {}
        runs = [(name, graph_candidates, s) for name, s in variants.items()]
        if old is not None:
            runs.append(("old", old.graph_candidates, base))
        for name, fn, s in runs:
            sims = np.where(mask, cos, 0.0).astype(np.float32) if args.exact else LazyCosine(
                catalog.vectors, query, found, cos[found])
            th = time.thread_time()
            kwargs = {"pool_rows": pool, "rows_of": functools.partial(eligibility.view, catalog, "alice")} if name != "old" else {}
            hits = fn(None, catalog, anchors, mask, s, frozenset(), [catalog.ids[r] for r in pool] if name == "old" else (),
                      sims, "alice", **kwargs)
            ranked = _order_graph(hits, sims, catalog.col("score"), 50)
            times.setdefault(f"graph_{name}", []).append((time.thread_time() - th) * 1e3)
            lists[name] = ranked
        overlap.append(len(set(lists["capped"]) & set(lists["uncapped"])) / max(1, len(lists["uncapped"])))
    out = {"size": args.size, "queries": args.queries, "exact": args.exact, "load_average": os.getloadavg(),
           "p50_ms_cpu": {k: round(statistics.median(v), 3) for k, v in times.items()},
           "p95_ms_cpu": {k: round(float(np.percentile(v, 95)), 3) for k, v in times.items()},
           "graph_list_overlap_capped_vs_uncapped": round(float(np.mean(overlap)), 4)}
    text = json.dumps(out, indent=1)
    print(text)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    return out


if __name__ == "__main__":
    main()
