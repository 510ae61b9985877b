"""Bulk import of learnings through Kùzu's COPY FROM a pyarrow table (benchmarks, migrations).

One COPY for the Learning nodes and one per edge type, instead of a CREATE and several MERGEs
per learning: ~20k learnings/s instead of a few hundred. No curation happens here (no duplicate
merging, no summary staleness): the caller hands over clean, new learnings.
"""

from __future__ import annotations

import importlib.util  # noqa: F401  -- Kùzu's COPY from pyarrow needs it imported first
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from graphmem.errors import InvalidInputError, StoreError
from graphmem.models import Learning, utcnow
from graphmem.store.kuzu_store import to_db_time
from graphmem.store.learnings import LEARNING_PROPS, LearningStore, learning_params

_INT_PROPS = {"helpful", "harmful", "validations", "contradictions", "times_applied", "pass_streak", "fail_streak", "version", "ttl_days"}
_FLOAT_PROPS = {"confidence", "score", "canary_allocation"}
_TIME_PROPS = {"last_applied_at", "last_validated_at", "created_at", "updated_at"}
_LIST_PROPS = {"topics", "entities"}
_BOOL_PROPS = {"shared"}


_KUZU_TYPES = {
    "STRING": pa.string(), "INT64": pa.int64(), "DOUBLE": pa.float64(), "BOOL": pa.bool_(),
    "BOOLEAN": pa.bool_(), "TIMESTAMP": pa.timestamp("us"), "STRING[]": pa.list_(pa.string()),
}


def _arrow_type(prop: str) -> pa.DataType:
    if prop in _INT_PROPS:
        return pa.int64()
    if prop in _FLOAT_PROPS:
        return pa.float64()
    if prop in _TIME_PROPS:
        return pa.timestamp("us")
    if prop in _LIST_PROPS:
        return pa.list_(pa.string())
    if prop in _BOOL_PROPS:
        return pa.bool_()
    return pa.string()


class BulkStore(LearningStore):
    """Fast import paths."""

    def bulk_insert_learnings(self, learnings: Sequence[Learning], embeddings: np.ndarray) -> None:
        """Write many new learnings and their tool/topic/entity/objective-type edges at once.

        The learnings must not exist yet. The catalog is rebuilt afterwards.
        """
        n = len(learnings)
        if n == 0:
            return
        vectors = np.asarray(embeddings, dtype=np.float32)
        if vectors.shape != (n, self.dim):
            raise InvalidInputError(f"embeddings must have shape ({n}, {self.dim}), got {vectors.shape}")
        rows = [learning_params(l) for l in learnings]
        columns = [*list(LEARNING_PROPS[:5]), "content_key", "search_text", *list(LEARNING_PROPS[5:])]
        # The COPY maps columns by position, so follow the table's property order exactly.
        info = self.read("CALL table_info('Learning') RETURN name, type")
        arrays: dict[str, pa.Array] = {}
        for col in info:
            name = col["name"]
            if name == "embedding":
                arrays[name] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), self.dim)
            elif name in columns:
                arrays[name] = pa.array([r[name] for r in rows], type=_arrow_type(name))
            else:  # a column added by a later migration: null, typed as the schema says
                arrays[name] = pa.nulls(n, type=_KUZU_TYPES.get(str(col["type"]), pa.string()))
        table = pa.table(arrays)
        now = to_db_time(utcnow())
        tools = sorted({l.tool for l in learnings if l.tool})
        topics = sorted({t for l in learnings for t in l.topics})
        entities = sorted({e for l in learnings for e in l.entities})
        otypes = sorted({l.objective_type for l in learnings if l.objective_type})
        with self.exclusive():
            conn = self._conn_main
            try:
                _copy(conn, "Learning", table)
                for name in tools:
                    conn.execute(
                        "MERGE (t:Tool {name: $n}) ON CREATE SET t.success_count = 0, t.error_count = 0, t.created_at = $ts",
                        {"n": name, "ts": now},
                    )
                for label, names in (("Topic", topics), ("ObjectiveType", otypes)):
                    for name in names:
                        conn.execute(f"MERGE (t:{label} {{name: $n}}) ON CREATE SET t.created_at = $ts", {"n": name, "ts": now})
                for name in entities:
                    conn.execute(
                        "MERGE (e:Entity {name: $n}) ON CREATE SET e.kind = 'thing', e.created_at = $ts",
                        {"n": name, "ts": now},
                    )
                edges = {
                    "ABOUT_TOOL": [(l.id, l.tool) for l in learnings if l.tool],
                    "ABOUT_TOPIC": [(l.id, t) for l in learnings for t in l.topics],
                    "MENTIONS": [(l.id, e) for l in learnings for e in l.entities],
                    "FOR_OBJECTIVE_TYPE": [(l.id, l.objective_type) for l in learnings if l.objective_type],
                }
                targets = {"ABOUT_TOOL": "Tool", "ABOUT_TOPIC": "Topic", "MENTIONS": "Entity", "FOR_OBJECTIVE_TYPE": "ObjectiveType"}
                for rel, pairs in edges.items():
                    if pairs:
                        edge_table = pa.table({"from": [a for a, _ in pairs], "to": [b for _, b in pairs]})
                        _copy(conn, rel, edge_table, f"(from='Learning', to='{targets[rel]}')")
            except RuntimeError as e:
                raise StoreError(f"bulk import failed: {e}") from e
        self.load_learning_catalog()


def _copy(conn: object, table_name: str, table: pa.Table, options: str = "") -> None:
    """COPY a pyarrow table into a node or rel table (Kùzu scans the Python variable by name)."""
    bulk_table = table  # noqa: F841 -- referenced by name inside the COPY statement
    conn.execute(f"COPY {table_name} FROM bulk_table {options}")  # type: ignore[attr-defined]
