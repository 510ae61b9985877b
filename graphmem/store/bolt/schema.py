"""graphmem's schema for an engine without typed tables: read from the same ``schema/*.cypher``
files that build a Kùzu file, kept in Python, and answered where Kùzu's catalog calls are used.

A Bolt engine (Neo4j, Memgraph, ArcadeDB) stores labelled nodes with any properties, so the Kùzu
DDL is not run there. Instead:

- every node table's primary key becomes a uniqueness constraint (which is also the index that
  makes ``MATCH (l:Learning {id: $id})`` a lookup), plus a few plain indexes;
- the column types and edge end points stay here, for the code that reads them
  (export/import, stats, health): ``CALL show_tables()``, ``CALL table_info('T')`` and
  ``CALL show_connection('R')`` are answered from this model (:func:`catalog_rows`);
- ``DEFAULT`` values are not stored on old nodes; the dialect treats a missing list as ``[]``.

A new Bolt database starts at the latest schema version. An older one (the version is kept in
``(:Meta {key: 'schema_version'})``) is migrated on open, file by file (:func:`migration_steps`):
columns added with a default are filled in, data statements run translated, and the version is
recorded after each file, in that file's transaction.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from graphmem.store import migrations

_NODE = re.compile(r"^CREATE\s+NODE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)
_REL = re.compile(r"^CREATE\s+REL\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)
_ADD_FROM = re.compile(r"^ALTER\s+TABLE\s+(\w+)\s+ADD\s+FROM\s+(\w+)\s+TO\s+(\w+)\s*$", re.IGNORECASE)
_ADD_COL = re.compile(r"^ALTER\s+TABLE\s+(\w+)\s+ADD\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s+([\w\[\]]+)(?:\s+DEFAULT\s+(.*))?$",
                      re.IGNORECASE | re.DOTALL)
_FROM_TO = re.compile(r"^FROM\s+(\w+)\s+TO\s+(\w+)$", re.IGNORECASE)

#: plain indexes beside the primary keys (properties graphmem filters or joins on)
EXTRA_INDEXES: tuple[tuple[str, str], ...] = (
    ("Learning", "user_id"), ("Event", "user_id"), ("Application", "user_id"), ("Summary", "key"),
)


@dataclass
class Schema:
    """Node tables (columns, primary key) and rel tables (columns, end point pairs)."""

    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    pks: dict[str, str] = field(default_factory=dict)
    rels: dict[str, dict[str, str]] = field(default_factory=dict)
    connections: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    version: int = 0


def _split(body: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in body:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


@functools.lru_cache(maxsize=4)
def load(dim: int) -> Schema:
    """The schema every ``schema/NNN_*.cypher`` file builds together (vectors of ``dim``)."""
    s = Schema()
    for mig in migrations.available():
        s.version = mig.version
        for stmt in mig.statements(dim):
            flat = " ".join(stmt.split())
            if m := _NODE.match(flat):
                cols: dict[str, str] = {}
                for part in _split(m.group(2)):
                    words = part.split()
                    cols[words[0]] = words[1].upper()
                    if "PRIMARY" in (w.upper() for w in words[2:]):
                        s.pks[m.group(1)] = words[0]
                s.nodes[m.group(1)] = cols
            elif m := _REL.match(flat):
                cols, pairs = {}, []
                for part in _split(m.group(2)):
                    if fm := _FROM_TO.match(part):
                        pairs.append((fm.group(1), fm.group(2)))
                    else:
                        words = part.split()
                        cols[words[0]] = words[1].upper()
                s.rels[m.group(1)] = cols
                s.connections[m.group(1)] = pairs
            elif m := _ADD_FROM.match(flat):
                s.connections[m.group(1)].append((m.group(2), m.group(3)))
            elif m := _ADD_COL.match(flat):
                table = s.nodes.get(m.group(1)) if m.group(1) in s.nodes else s.rels.get(m.group(1))
                if table is not None:
                    table[m.group(2)] = m.group(3).upper()
    return s


def ddl(schema: Schema) -> list[str]:
    """The constraints and indexes to create on a Bolt engine (idempotent statements)."""
    out = [
        f"CREATE CONSTRAINT gm_{label.lower()}_{pk} IF NOT EXISTS FOR (n:{label}) REQUIRE n.{pk} IS UNIQUE"
        for label, pk in schema.pks.items()
    ]
    out += [f"CREATE INDEX gm_{label.lower()}_{prop} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})" for label, prop in EXTRA_INDEXES]
    # the change log other processes read by key (graphmem.store.bolt.changes); Bolt only, no Kùzu table
    out.append("CREATE CONSTRAINT gm_changelog_key IF NOT EXISTS FOR (n:ChangeLog) REQUIRE n.key IS UNIQUE")
    return out


_DDL = re.compile(r"^\s*(CREATE\s+(NODE|REL)\s+TABLE|ALTER\s+TABLE|DROP\s+TABLE|CALL\s+CREATE_FTS_INDEX|CALL\s+DROP_FTS_INDEX)",
                  re.IGNORECASE)


def migration_steps(dim: int, after: int) -> list[tuple[int, list[str]]]:
    """What a Bolt database at schema version ``after`` runs to reach the latest, file by file:
    a column added with a ``DEFAULT`` is filled in on the nodes (or edges) that lack it, and a
    file's data statements run translated (:func:`graphmem.store.bolt.dialect.translate`); the
    tables themselves need nothing (labels and properties appear when written), and the
    constraints come from :func:`ddl`."""
    from graphmem.store.bolt import dialect

    schema = load(dim)
    steps: list[tuple[int, list[str]]] = []
    for mig in migrations.available():
        if mig.version <= after:
            continue
        out: list[str] = []
        for stmt in mig.statements(dim):
            flat = " ".join(stmt.split())
            if (m := _ADD_COL.match(flat)) and m.group(4):
                table, col, default = m.group(1), m.group(2), m.group(4).strip()
                pattern = f"()-[n:{table}]->()" if table in schema.rels else f"(n:{table})"
                out.append(f"MATCH {pattern} WHERE n.{col} IS NULL SET n.{col} = {default}")
            elif not _DDL.match(flat):
                out.append(dialect.translate(stmt))
        steps.append((mig.version, out))
    return steps


_SHOW_TABLES = re.compile(r"^\s*CALL\s+show_tables\(\)\s+RETURN\s+(.+?)\s*$", re.IGNORECASE)
_TABLE_INFO = re.compile(r"^\s*CALL\s+table_info\('(\w+)'\)\s+RETURN\s+(.+?)\s*$", re.IGNORECASE)
_SHOW_CONN = re.compile(r"^\s*CALL\s+show_connection\('(\w+)'\)\s+RETURN\s+(.+?)\s*$", re.IGNORECASE)


def _project(rows: list[dict[str, Any]], ret: str) -> list[dict[str, Any]]:
    if ret.strip() == "*":
        return rows
    names = [c.strip() for c in ret.split(",")]
    return [{n: r.get(n) for n in names} for r in rows]


def catalog_rows(schema: Schema, cypher: str) -> list[dict[str, Any]] | None:
    """Kùzu's catalog calls answered from ``schema``; None when ``cypher`` is not one."""
    if m := _SHOW_TABLES.match(cypher):
        rows = [{"id": i, "name": n, "type": "NODE", "database name": "local(kuzu)", "comment": ""}
                for i, n in enumerate(schema.nodes)]
        rows += [{"id": len(rows) + i, "name": n, "type": "REL", "database name": "local(kuzu)", "comment": ""}
                 for i, n in enumerate(schema.rels)]
        return _project(rows, m.group(1))
    if m := _TABLE_INFO.match(cypher):
        table = m.group(1)
        pk = schema.pks.get(table)
        cols = schema.nodes.get(table) or schema.rels.get(table) or {}
        rows = [{"property id": i, "name": c, "type": t, "default expression": "NULL", "primary key": c == pk}
                for i, (c, t) in enumerate(cols.items())]
        if table in schema.rels:
            for r in rows:
                r.pop("primary key")
                r["storage_direction"] = "both"
        return _project(rows, m.group(2))
    if m := _SHOW_CONN.match(cypher):
        rel = m.group(1)
        rows = [{"source table name": a, "destination table name": b,
                 "source table primary key": schema.pks.get(a), "destination table primary key": schema.pks.get(b)}
                for a, b in schema.connections.get(rel, [])]
        return _project(rows, m.group(2))
    return None
