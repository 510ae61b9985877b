"""Kùzu's own full-text indexes (``learning_fts``, ``event_fts``), built only when read.

graphmem ranks with its in-memory lexical mirror (store/lexical.py), never with Kùzu's FTS
indexes; they are there for analysts (``CALL QUERY_FTS_INDEX`` in ``Memory.cypher``) and for
anything else reading the file. Kept up to date on every write, they cost ~160 ms of commit per
100 new rows and ~7 MB of a small file, so they are kept lazily instead:

- a new file has none (the schema files' ``CALL CREATE_FTS_INDEX`` statements are deferred);
- a query that needs them (``QUERY_FTS_INDEX`` or ``show_indexes``) builds the missing ones
  first, on the whole file (~0.7 s at 10k rows, ~1.5 s at 100k);
- the first write after that drops them again (~20 ms), so writes never maintain them.

An index that exists is therefore always current: Kùzu keeps it so while it exists.
"""

from __future__ import annotations

import re
from typing import Any

from graphmem.store import migrations

_CREATE_FTS = re.compile(r"^CALL\s+CREATE_FTS_INDEX\s*\(\s*'(\w+)'\s*,\s*'(\w+)'", re.IGNORECASE)
_NEEDS = re.compile(r"\b(QUERY_FTS_INDEX|SHOW_INDEXES)\b", re.IGNORECASE)


def is_definition(statement: str) -> bool:
    """True for a schema statement that creates a full-text index (deferred until read)."""
    return _CREATE_FTS.match(statement.strip()) is not None


def definitions() -> list[tuple[str, str, str]]:
    """``(table, index, CALL statement)`` of every full-text index the schema files define.

    Built over existing rows, a Kùzu 0.11.3 index leaves out its default English stop words
    ("never", "after", ...); rows added to an existing index kept them. A custom (empty) stop-word
    table would avoid that, but Kùzu 0.11.3 cannot build such an index again after dropping it."""
    out = []
    for mig in migrations.available():
        for stmt in mig.statements(0):
            m = _CREATE_FTS.match(stmt)
            if m is not None:
                out.append((m.group(1), m.group(2), stmt))
    return out


def needed_by(cypher: str) -> bool:
    """True when ``cypher`` reads a full-text index or lists the indexes."""
    return _NEEDS.search(cypher) is not None


def present(conn: Any) -> set[tuple[str, str]]:
    """``(table, index)`` of the schema's full-text indexes that exist in the file."""
    result = conn.execute("CALL show_indexes() RETURN table_name, index_name")
    rows = result.get_all() if not isinstance(result, list) else result[-1].get_all()
    found = {(str(t), str(i)) for t, i in rows}
    return {(t, i) for t, i, _ in definitions() if (t, i) in found}


def build(conn: Any) -> int:
    """Create the schema's missing full-text indexes (auto-commit, outside any transaction);
    returns how many were created."""
    have = present(conn)
    made = 0
    for table, index, stmt in definitions():
        if (table, index) not in have:
            conn.execute(stmt)
            made += 1
    return made


def drop(conn: Any) -> int:
    """Drop the schema's full-text indexes that exist (auto-commit); returns how many."""
    gone = 0
    for table, index in sorted(present(conn)):
        conn.execute(f"CALL DROP_FTS_INDEX('{table}', '{index}')")
        gone += 1
    return gone
