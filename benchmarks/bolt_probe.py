"""Probe which Cypher ArcadeDB accepts over Bolt (the findings are in graphmem/store/bolt/__init__.py).

    PYTHONPATH=$PWD python -m benchmarks.bolt_probe
"""

from __future__ import annotations

from datetime import UTC, datetime

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


if __name__ == "__main__":
    main()
