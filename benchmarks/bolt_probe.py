"""Probe which Cypher ArcadeDB accepts over Bolt (the findings are in graphmem/store/bolt/__init__.py).

    PYTHONPATH=$PWD python -m benchmarks.bolt_probe

    PYTHONPATH=$PWD python -m benchmarks.bolt_probe --indexes 10000 [--queries 50]

The second form measures ArcadeDB's own vector (LSM_VECTOR) and full-text (FULL_TEXT) indexes,
created with SQL through the HTTP API (Cypher cannot create them) and queried over Bolt with
``db.index.vector.queryNodes`` / ``db.index.fulltext.queryNodes``, against the same rows loaded
without those indexes and against exact cosine in numpy (what graphmem's vector mirror computes),
all in one run. benchmarks.scale's generated learnings, HashEmbedder. Results go to
benchmarks/results/local/bolt_indexes.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import neo4j

from graphmem.store.bolt.testing import ArcadeServer

PROBES: list[tuple[str, str, dict]] = [
    ("create", "CREATE (n:P {id: 'a', xs: ['x', 'y'], f: 1.5, i: 3, b: true}) RETURN n.id AS id", {}),
    ("merge", "MERGE (n:P {id: 'b'}) SET n.v = 1 RETURN n.id AS id", {}),
    ("merge again", "MERGE (n:P {id: 'b'}) ON MATCH SET n.v = n.v + 1 RETURN n.v AS v", {}),
    ("unwind rows", "UNWIND $rows AS r MERGE (n:P {id: r.id}) SET n.v = r.v RETURN count(*) AS n", {"rows": [{"id": "c", "v": 2}, {"id": "d", "v": 3}]}),
    ("param list", "MATCH (n:P) WHERE n.id IN $ids RETURN n.id AS id ORDER BY id", {"ids": ["a", "c"]}),
    ("param map", "CREATE (n:P {id: $m.id, v: $m.v}) RETURN n.v AS v", {"m": {"id": "e", "v": 7}}),
    ("set map", "MATCH (n:P {id: 'e'}) SET n += $m RETURN n.w AS w", {"m": {"w": 9}}),
    ("aware datetime param", "CREATE (n:T {id: 't1', at: $at}) RETURN n.at AS at", {"at": datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)}),
    ("naive datetime param", "CREATE (n:T {id: 't2', at: $at}) RETURN n.at AS at", {"at": datetime(2026, 1, 2, 3, 4, 5, 123456)}),
    ("datetime compare", "MATCH (n:T) WHERE n.at > $at RETURN count(n) AS n", {"at": datetime(2025, 1, 1, tzinfo=UTC)}),
    ("datetime order", "MATCH (n:T) RETURN n.id AS id ORDER BY n.at DESC", {}),
    ("float list", "CREATE (n:V {id: 'v', emb: $e}) RETURN size(n.emb) AS d", {"e": [0.25] * 8}),
    ("float list back", "MATCH (n:V) RETURN n.emb AS e", {}),
    ("optional match", "MATCH (n:P {id: 'a'}) OPTIONAL MATCH (n)-[:R]->(m) RETURN n.id AS id, m.id AS m", {}),
    ("rel create", "MATCH (a:P {id: 'a'}), (b:P {id: 'b'}) MERGE (a)-[r:R]->(b) SET r.w = 1 RETURN count(r) AS n", {}),
    ("rel props", "MATCH (a:P)-[r:R]->(b:P) RETURN a.id AS a, b.id AS b, r.w AS w", {}),
    ("count collect", "MATCH (n:P) RETURN count(n) AS n, collect(n.id) AS ids", {}),
    ("with collect slice", "MATCH (n:P) WITH collect(n.id) AS ids RETURN ids[0..2] AS s", {}),
    ("case in", "MATCH (n:P) RETURN CASE WHEN n.id IN $l THEN 1 ELSE 0 END AS x", {"l": ["a"]}),
    ("list comprehension", "RETURN [x IN $l WHERE x IN $m] AS i", {"l": ["a", "b"], "m": ["b"]}),
    ("list concat", "MATCH (n:P {id: 'a'}) SET n.xs = n.xs + ['z'] RETURN n.xs AS xs", {}),
    ("coalesce", "MATCH (n:P {id: 'a'}) RETURN coalesce(n.missing, 0) AS c", {}),
    ("missing prop null", "MATCH (n:P {id: 'a'}) RETURN n.nothing AS x", {}),
    ("detach delete", "MATCH (n:P {id: 'e'}) DETACH DELETE n", {}),
    ("labels", "MATCH (n) RETURN DISTINCT labels(n) AS l", {}),
    ("type(r)", "MATCH ()-[r]->() RETURN type(r) AS t", {}),
    ("exists subquery", "MATCH (n:P) WHERE EXISTS { MATCH (n)-[:R]->() } RETURN n.id AS id", {}),
    ("pattern predicate", "MATCH (n:P) WHERE (n)-[:R]->() RETURN n.id AS id", {}),
    ("multi-label rel", "MATCH (n:P)-[r:R|S]->(m) RETURN count(r) AS n", {}),
    ("order skip limit", "MATCH (n:P) RETURN n.id AS id ORDER BY id SKIP 1 LIMIT 2", {}),
    ("create constraint", "CREATE CONSTRAINT p_id IF NOT EXISTS FOR (n:P) REQUIRE n.id IS UNIQUE", {}),
    ("create index", "CREATE INDEX p_v IF NOT EXISTS FOR (n:P) ON (n.v)", {}),
    ("show indexes", "SHOW INDEXES", {}),
    ("toLower/contains", "MATCH (n:P) WHERE toLower(n.id) CONTAINS 'a' RETURN count(n) AS n", {}),
    ("unwind empty", "UNWIND $rows AS r CREATE (:P {id: r}) RETURN count(*) AS n", {"rows": []}),
    ("foreach", "MATCH (n:P {id: 'a'}) FOREACH (x IN ['q'] | SET n.fe = x) RETURN n.fe AS fe", {}),
    ("call subquery", "CALL { MATCH (n:P) RETURN count(n) AS c } RETURN c", {}),
    ("vector fn", "MATCH (n:V) RETURN vector.similarity.cosine(n.emb, $q) AS s", {"q": [0.25] * 8}),
    ("fulltext", "CALL db.index.fulltext.queryNodes('p_ft', 'x') YIELD node RETURN node", {}),
    ("datetime()", "RETURN datetime() AS now", {}),
    ("null param", "CREATE (n:P {id: 'n', v: $v}) RETURN n.v AS v", {"v": None}),
    ("big int", "RETURN $i AS i", {"i": 2**62}),
    ("unicode", "RETURN $s AS s", {"s": "Kùzu → ✓"}),
]


def main() -> None:
    with ArcadeServer() as srv:
        print(f"server started in {srv.start_seconds:.1f} s")
        srv.create_database("probe")
        driver = neo4j.GraphDatabase.driver(srv.url(), auth=srv.auth)
        try:
            with driver.session(database="probe") as s:
                for name, q, params in PROBES:
                    try:
                        rows = s.run(q, params).data()
                        print(f"OK   {name}: {rows!r}"[:300])
                    except Exception as e:
                        print(f"FAIL {name}: {type(e).__name__}: {str(e)[:250]}")
            # explicit transactions: rollback really rolls back?
            with driver.session(database="probe") as s:
                tx = s.begin_transaction()
                tx.run("CREATE (:RB {id: 'x'})")
                print("in tx sees own write:", tx.run("MATCH (n:RB) RETURN count(n) AS n").single()["n"])
                tx.rollback()
                print("after rollback:", s.run("MATCH (n:RB) RETURN count(n) AS n").single()["n"])
        finally:
            driver.close()


def _timed(fn: Any, n: int) -> tuple[list[Any], dict[str, float]]:
    import numpy as np

    out, times = [], []
    for i in range(n):
        t = time.perf_counter()
        out.append(fn(i))
        times.append(time.perf_counter() - t)
    return out, {"p50_ms": round(1000 * float(np.median(times)), 2), "mean_ms": round(1000 * float(np.mean(times)), 2)}


def indexes(n: int, queries: int) -> dict[str, Any]:
    """The engine's vector and full-text indexes at ``n`` rows (see the module docstring)."""
    import numpy as np

    from benchmarks import scale
    from graphmem import HashEmbedder

    emb = HashEmbedder()
    specs = scale.generate(n)
    texts = [s["content"] for s in specs]
    vecs = emb.embed(texts).astype(np.float32)
    qs = scale.queries(queries)
    qv = emb.embed([q["query"] for q in qs]).astype(np.float32)
    out: dict[str, Any] = {"rows": n, "queries": queries, "loadavg_start": os.getloadavg()[0]}
    rows = [{"id": f"l{i}", "u": specs[i]["user"], "text": texts[i], "emb": [float(x) for x in vecs[i]]} for i in range(n)]
    with ArcadeServer(start_timeout=600) as srv:
        srv.create_database("p")
        pid = srv._proc.pid if srv._proc is not None else 0
        for cmd in ("CREATE VERTEX TYPE V IF NOT EXISTS", "CREATE PROPERTY V.emb IF NOT EXISTS ARRAY_OF_FLOATS",
                    "CREATE PROPERTY V.text IF NOT EXISTS STRING",
                    f'CREATE INDEX IF NOT EXISTS ON V (emb) LSM_VECTOR METADATA {{"dimensions": {emb.dim}, "similarity": "COSINE"}}',
                    "CREATE INDEX IF NOT EXISTS ON V (text) FULL_TEXT"):
            srv.sql("p", cmd)
        driver = neo4j.GraphDatabase.driver(srv.url(), auth=srv.auth)
        try:
            with driver.session(database="p") as s:
                for label in ("W", "V"):  # W: the same rows without the two indexes
                    t, cpu, server = time.perf_counter(), time.process_time(), _cpu(pid)
                    for i in range(0, n, 1000):
                        s.run(f"UNWIND $rows AS r CREATE (x:{label} {{id: r.id, u: r.u, text: r.text, emb: r.emb}})",
                              rows=rows[i:i + 1000]).consume()
                    out[f"load_{'with' if label == 'V' else 'without'}_indexes"] = {
                        "s": round(time.perf_counter() - t, 1), "client_cpu_s": round(time.process_time() - cpu, 1),
                        "server_cpu_s": round(_cpu(pid) - server, 1)}
                _, out["round_trip_return_1"] = _timed(lambda i: s.run("RETURN 1 AS x").data(), queries)
                # the first vector query after the load (ArcadeDB may build the index graph then), and
                # recall right after it; then the same queries again once it has settled
                t = time.perf_counter()
                s.run("CALL db.index.vector.queryNodes('V[emb]', 10, $q) YIELD node RETURN node.id AS id",
                      q=[float(x) for x in qv[0]]).data()
                out["vector_index_first_query_s"] = round(time.perf_counter() - t, 2)
                for k, label in ((10, "k10"), (50, "k50"), (10, "k10_again")):
                    got, timing = _timed(lambda i, k=k: s.run(
                        "CALL db.index.vector.queryNodes('V[emb]', $k, $q) YIELD node, score RETURN node.id AS id",
                        k=k, q=[float(x) for x in qv[i]]).data(), queries)
                    recall = [len({f"l{j}" for j in np.argsort(-(vecs @ qv[i]))[:k]} & {r["id"] for r in got[i]}) / k
                              for i in range(queries)]
                    out[f"vector_index_{label}"] = {**timing, "recall_vs_exact": round(float(np.mean(recall)), 3)}
                user = specs[0]["user"]
                got, timing = _timed(lambda i: s.run(
                    "CALL db.index.vector.queryNodes('V[emb]', 50, $q) YIELD node, score WHERE node.u = $u RETURN node.id AS id",
                    q=[float(x) for x in qv[i]], u=user).data(), queries)
                out["vector_index_k50_one_user"] = {**timing, "user_share": round(sum(x["user"] == user for x in specs) / n, 3),
                                                    "rows_left_of_50": round(float(np.mean([len(g) for g in got])), 1)}
                got, timing = _timed(lambda i: s.run(
                    "CALL db.index.fulltext.queryNodes('V[text]', $q) YIELD node, score RETURN node.id AS id LIMIT 50",
                    q=qs[i]["query"]).data(), queries)
                out["fulltext_index_50"] = {**timing, "queries_with_hits": sum(bool(g) for g in got)}
            _, out["numpy_exact_cosine_top50"] = _timed(lambda i: np.argpartition(-(vecs @ qv[i]), 50)[:50], queries)
        finally:
            driver.close()
    out["loadavg_end"] = os.getloadavg()[0]
    return out


def _cpu(pid: int) -> float:
    from benchmarks.bolt import _cpu_seconds

    return _cpu_seconds(pid) if pid else float("nan")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--indexes", type=int, default=0, help="measure the engine's vector and full-text indexes at this many rows")
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    if args.indexes:
        result = indexes(args.indexes, args.queries)
        print(json.dumps(result, indent=1))
        out = Path(__file__).resolve().parent / "results" / "local"
        out.mkdir(parents=True, exist_ok=True)
        (out / "bolt_indexes.json").write_text(json.dumps(result, indent=1))
    else:
        main()
