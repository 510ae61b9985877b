"""Batch writes from pyarrow tables (inside a write transaction): ``LOAD FROM`` and ``COPY``.

A batch of new Learning or Event nodes is written with one ``LOAD FROM <arrow> CREATE`` statement
(:func:`load_nodes`: the rows go to Kùzu as Arrow columns, ~0.1 ms per row with a 384-float
embedding, where an ``UNWIND $rows CREATE`` converts every value from Python: ~0.6 ms per row),
and each edge table's new edges with one ``LOAD FROM <arrow> MATCH ... CREATE`` statement
(:func:`load_edges`). Both are ordinary inserts: the transaction commits into the write-ahead log.

``COPY`` (:func:`copy_into`) is kept for the first edges an edge table ever gets (and bulk
imports): in Kùzu 0.11.3 every transaction that runs a COPY ends with a forced checkpoint
(86-245 ms per batch of 100 at 10k-100k learnings), but a table whose first edges came from
CREATE statements gets four full-size offset columns (~4.2 MB). Kùzu 0.11 joins
``UNWIND $rows ... MATCH (l:Learning {id: r.id})`` by scanning the whole node table, and filters
on ``offset(id(l))`` only after the scan has read the properties the statement names, so
:func:`load_edges` finds the new nodes by the offsets :func:`load_nodes` returned for them (a
join on the offset alone reads no property column): its cost does not grow with the file.
"""

from __future__ import annotations

import importlib.util  # noqa: F401  -- Kùzu's COPY from pyarrow needs it imported first
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
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


def _arrow_columns(names: Sequence[str], types: dict[str, str], rows: Sequence[dict[str, Any]]) -> pa.Table:
    """The rows' values of ``names`` as Arrow columns ``c0, c1, ...`` of the table's types (the
    positional names keep property names such as ``key`` or ``id`` out of the Cypher)."""
    return pa.table({f"c{i}": _column([r.get(n) for r in rows], arrow_type(types[n])) for i, n in enumerate(names)})


def _column(values: list[Any], kind: pa.DataType) -> pa.Array:
    """One Arrow column; vectors (a fixed-size float list) go in from numpy without a Python
    float per element (~10x faster for a batch of 384-float embeddings)."""
    if pa.types.is_fixed_size_list(kind) and values and all(v is not None for v in values):
        flat = np.asarray(values, dtype=np.float32).reshape(-1)
        return pa.FixedSizeListArray.from_arrays(pa.array(flat, type=pa.float32()), kind.list_size)
    return pa.array(values, type=kind)


def load_nodes(conn: Any, label: str, columns: Sequence[tuple[str, str]], rows: Sequence[dict[str, Any]],
               key: str = "id") -> dict[Any, int]:
    """CREATE one ``label`` node per row with a single ``LOAD FROM`` an Arrow table; returns the
    internal offset of each new node by its ``key`` property (the edge writes of the same
    transaction find the nodes by offset: :func:`load_edges`). Only the properties the rows hold
    are set (others keep their column defaults). ``columns``: (name, Kùzu type) of the table."""
    names = list(rows[0])
    load_rows = _arrow_columns(names, dict(columns), rows)  # noqa: F841 -- read by name in the statement
    props = ", ".join(f"{n}: c{i}" for i, n in enumerate(names))
    result = conn.execute(f"LOAD FROM load_rows CREATE (n:{label} {{{props}}}) RETURN c{names.index(key)}, offset(id(n))")
    offsets = {k: int(o) for k, o in result.get_all()}
    if len(offsets) != len(rows):
        raise RuntimeError(f"{label}: {len(offsets)} of {len(rows)} rows written")
    return offsets


def load_edges(conn: Any, rel: str, source: tuple[str, Mapping[Any, int]], target: tuple[str, str],
               pairs: Sequence[tuple[str, str]]) -> int:
    """CREATE ``rel`` edges from new ``source`` nodes (label, and the offsets by key that
    :func:`load_nodes` returned) to existing ``target`` nodes (label, key property), one per
    distinct (source key, target key) pair, in one statement. Raises RuntimeError (the caller's
    transaction rolls back) unless every pair found both ends.

    The new nodes are matched by internal offset, within the span of the batch: a match on their
    key property would read that column for the whole table (Kùzu 0.11 filters the offsets after
    the scan), ~5 ms per statement at 100k nodes, growing with the file."""
    unique = list(dict.fromkeys(pairs))
    if not unique:
        return 0
    (slabel, offsets), (tlabel, tkey) = source, target
    try:
        at = [offsets[a] for a, _ in unique]
    except KeyError as e:
        raise RuntimeError(f"{rel}: source {e.args[0]!r} is not a node of this batch") from e
    edge_rows = pa.table({"o": pa.array(at, type=pa.int64()), "d": [b for _, b in unique]})  # noqa: F841 -- read by name
    # the bounds are written into the statement: with parameters Kùzu prepares it and then plans
    # it again to execute (~1.5 ms more; a LOAD FROM a local variable cannot be cached prepared)
    result = conn.execute(
        f"LOAD FROM edge_rows MATCH (a:{slabel}) WHERE offset(id(a)) >= {int(min(at))} AND offset(id(a)) <= {int(max(at))} "
        f"AND offset(id(a)) = o MATCH (b:{tlabel} {{{tkey}: d}}) CREATE (a)-[:{rel}]->(b) RETURN count(*)"
    )
    count = int(result.get_all()[0][0])
    if count != len(unique):
        raise RuntimeError(f"{rel}: {count} of {len(unique)} edges found both ends")
    return count
