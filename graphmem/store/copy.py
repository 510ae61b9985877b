"""Batch edge writes through Kùzu's ``COPY ... FROM`` a pyarrow table (inside a write transaction).

The edges of a batch of new Learning or Event nodes go in with one COPY per relationship table
instead of one statement per edge. Kùzu 0.11 joins
``UNWIND $rows ... MATCH (l:Learning {id: r.id})`` by scanning the whole node table (~100 ms at
100k learnings), so per-row edge statements were the only cheap form before; a rel-table COPY
looks both ends up by primary key instead, and rolls back with the transaction it runs in.

Nodes are not COPYed: in Kùzu 0.11.3 a COPY into a node table with a full-text index (Learning,
Event) fails with "duplicated primary key value" after an update of an indexed column, and
corrupts memory after an update of any other column.
"""

from __future__ import annotations

import importlib.util  # noqa: F401  -- Kùzu's COPY from pyarrow needs it imported first
from collections.abc import Sequence
from typing import Any

import pyarrow as pa


def edge_table(pairs: Sequence[tuple[str, str]]) -> pa.Table:
    """A two-column (from, to) Arrow table of primary keys, duplicates dropped (order kept)."""
    unique = list(dict.fromkeys(pairs))
    return pa.table({"from": [a for a, _ in unique], "to": [b for _, b in unique]})


def copy_into(conn: Any, table_name: str, table: pa.Table, options: str = "") -> None:
    """COPY an Arrow table into a rel table (Kùzu reads the local variable by name)."""
    copy_table = table  # noqa: F841 -- referenced by name inside the COPY statement
    conn.execute(f"COPY {table_name} FROM copy_table {options}")


_ARROW = {
    "STRING": pa.string(), "INT64": pa.int64(), "DOUBLE": pa.float64(), "BOOL": pa.bool_(),
    "BOOLEAN": pa.bool_(), "TIMESTAMP": pa.timestamp("us"), "STRING[]": pa.list_(pa.string()),
}


def arrow_type(kuzu_type: str) -> pa.DataType:
    """The Arrow type a COPY needs for a column of this Kùzu type (``FLOAT[n]``: fixed-size list)."""
    t = kuzu_type.upper()
    if t.startswith("FLOAT[") and t.endswith("]"):
        return pa.list_(pa.float32(), int(t[6:-1]))
    return _ARROW.get(t, pa.string())


def node_table(columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]]) -> pa.Table:
    """An Arrow table of new nodes in the table's own column order (``columns``: (name, Kùzu type)
    as ``table_info`` lists them; a COPY maps columns by position). Missing values are null."""
    arrays = {}
    for name, kuzu_type in columns:
        arrays[name] = pa.array([r.get(name) for r in rows], type=arrow_type(kuzu_type))
    return pa.table(arrays)
