"""Kùzu → openCypher rewriting and the schema model of the Bolt store (no server needed)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphmem.store.bolt import dialect
from graphmem.store.bolt import schema as bolt_schema


@pytest.mark.parametrize(("kuzu", "portable"), [
    ("WHERE list_contains($pool, l.id)", "WHERE (l.id IN coalesce($pool, []))"),
    ("RETURN list_slice(ids, 1, $cap + 1) AS ids",
     "RETURN ids[(1) - 1..CASE WHEN ($cap + 1) - 1 > 2147483647 THEN 2147483647 ELSE ($cap + 1) - 1 END] AS ids"),
    ("SET s.pending = list_append(s.pending, $lid)", "SET s.pending = (coalesce(s.pending, []) + [$lid])"),
    ("SET s.pending = CAST([] AS STRING[])", "SET s.pending = []"),
    ("SET s.pending = CAST($pending AS STRING[])", "SET s.pending = $pending"),
    ("RETURN label(n) AS label, labels(n) AS all", "RETURN labels(n)[0] AS label, labels(n) AS all"),
    ("WHERE contains(t.reason, $id)", "WHERE (t.reason CONTAINS $id)"),
    ("WHERE n.name CONTAINS ($x) AND list_contains($a, n.id)", "WHERE n.name CONTAINS ($x) AND (n.id IN coalesce($a, []))"),
    ("WHERE size(list_intersect(l.topics, $t)) > 0", "WHERE size([_x IN coalesce(l.topics, []) WHERE _x IN coalesce($t, [])]) > 0"),
    ("MATCH (l:Learning {id: $id}) RETURN l.content AS c", "MATCH (l:Learning {id: $id}) RETURN l.content AS c"),
    ("WHERE list_contains(x, 'a, (b)')", "WHERE ('a, (b)' IN coalesce(x, []))"),
])
def test_translate(kuzu: str, portable: str) -> None:
    assert dialect.translate(kuzu) == portable


def test_values_cross_the_wire_as_kuzu_gives_them() -> None:
    naive = datetime(2026, 1, 2, 3, 4, 5)
    sent = dialect.to_wire({"at": naive, "rows": [{"embedding": [0.5, 1.0], "xs": ("a",)}]})
    assert sent["at"] == naive.replace(tzinfo=UTC)
    assert isinstance(sent["rows"][0]["embedding"], bytes) and sent["rows"][0]["xs"] == ["a"]
    assert dialect.from_wire(sent["rows"][0]["embedding"]) == [0.5, 1.0]
    assert dialect.from_wire([sent["at"]]) == [sent["at"]]  # a plain datetime stays one


def test_schema_model_answers_kuzus_catalog_calls() -> None:
    s = bolt_schema.load(8)
    assert s.pks["Learning"] == "id" and s.nodes["Learning"]["embedding"] == "FLOAT[8]"
    assert "pending" in s.nodes["Summary"] and ("Learning", "Learning") in s.connections["DERIVED_FROM"]
    tables = bolt_schema.catalog_rows(s, "CALL show_tables() RETURN name, type")
    assert tables is not None and {"name": "APPLIED_IN", "type": "REL"} in tables
    info = bolt_schema.catalog_rows(s, "CALL table_info('Learning') RETURN *")
    assert info is not None and [r["name"] for r in info if r["primary key"]] == ["id"]
    assert bolt_schema.catalog_rows(s, "MATCH (n) RETURN n") is None
    assert all("IF NOT EXISTS" in stmt for stmt in bolt_schema.ddl(s))
