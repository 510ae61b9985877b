"""Rebuilding the in-memory catalogs from the file, in bounded chunks (on open).

The catalogs (embeddings, filter columns, lexical and anchor mirrors) are rebuilt from Kùzu each
time a file is opened. Reading every learning in one query held Kùzu's whole result, its Arrow
copy and the Python lists built from it at the same time (3.1 GB peak at 100k learnings); here
the rows come in ranges of ``store.scan_chunk_rows`` (:meth:`KuzuBase.scan_chunks`), each range's
embeddings go straight into the vector mirror (quantised to int8 there when the mirror is int8,
so no full float32 copy of the matrix exists), and the per-row columns are kept as numpy arrays
or as lists whose repeated strings (users, tools, anchors) share one object each.

The result is the same catalog a one-shot load builds (tests/test_catalog_chunked_load.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphmem.store import health
from graphmem.store.anchors import Anchor, anchors_of
from graphmem.store.catalog import STATUS_CODE, TIER_CODE
from graphmem.store.embed_queue import embed_queue

_DROP = ["embedding", "content_key", "search_text"]  # not kept in the loaded rows


def _strings(column: Any, shared: dict[Any, Any]) -> list[Any]:
    """A column as a Python list in which equal values are one object (``shared`` memoises them
    across chunks): a user id repeated 100k times costs one string, not 100k."""
    column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if column.null_count == len(column) or not pa.types.is_string(column.type):
        values = column.to_pylist()
        return [shared.setdefault(v, v) if isinstance(v, str) else v for v in values]
    encoded = column.dictionary_encode()
    names = [shared.setdefault(v, v) for v in encoded.dictionary.to_pylist()]
    names.append(None)
    idx = pc.fill_null(encoded.indices, len(names) - 1).to_numpy(zero_copy_only=False)
    return [names[i] for i in idx.tolist()]


def _numbers(table: pa.Table, name: str, default: float = 0.0) -> np.ndarray:
    arr = table.column(name).to_numpy(zero_copy_only=False)
    return np.nan_to_num(np.asarray(arr, dtype=np.float64), nan=default)


def _seconds(table: pa.Table, name: str) -> np.ndarray:
    arr = table.column(name).cast("timestamp[us]").to_numpy(zero_copy_only=False)
    return arr.astype("datetime64[us]").astype(np.int64) / 1e6


def _codes(table: pa.Table, name: str, codes: dict[str, int]) -> np.ndarray:
    """Enum strings as their float codes (rows with unknown values were split off already)."""
    encoded = table.column(name).combine_chunks().dictionary_encode()
    lookup = np.asarray([codes[v] for v in encoded.dictionary.to_pylist()], dtype=np.float64)
    return lookup[encoded.indices.to_numpy(zero_copy_only=False)] if len(lookup) else np.zeros(len(encoded))


def _flags(table: pa.Table, name: str) -> np.ndarray:
    """1.0 where the value is truthy (a non-empty string, true), else 0.0."""
    col = table.column(name)
    if pa.types.is_string(col.type):
        truthy = pc.and_(pc.is_valid(col), pc.not_equal(pc.fill_null(col, ""), ""))
    else:
        truthy = pc.fill_null(pc.cast(col, pa.bool_()), False)
    return np.asarray(truthy.to_numpy(zero_copy_only=False), dtype=np.float64)


def _embeddings(table: pa.Table, dim: int) -> np.ndarray:
    emb = table.column("embedding").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.asarray(emb, dtype=np.float32).reshape(table.num_rows, dim)


def _set_bad_rows(store: Any, table: str, bad: list[dict[str, Any]]) -> None:
    previous: list[dict[str, Any]] = getattr(store, "bad_rows", [])
    store.bad_rows = [b for b in previous if b["table"] != table] + bad


def _count(store: Any, label: str, var: str) -> int:
    result = store.execute_read(f"MATCH ({var}:{label}) RETURN count({var}) AS n")
    rows = result.get_all()
    return int(rows[0][0]) if rows else 0


def load_learning_catalog(store: Any, projection: str) -> Any:
    """Rebuild ``store.learning_catalog`` (and the id index of the loaded rows) from the file;
    returns the loaded rows, the Arrow table ``get_learning`` builds models from (see
    ``LearningStore``). ``projection``: the learning's scalar properties as ``l.<p> AS <p>``;
    the content key, search text and embedding are added here."""
    catalog = store.learning_catalog
    proj = projection + ", l.content_key AS content_key, l.search_text AS search_text, l.embedding AS embedding"
    catalog.vectors.start_load(_count(store, "Learning", "l"))
    interned: dict[Any, Any] = {}
    anchor_memo: dict[Any, Any] = {}  # anchor -> itself, and a row's links -> its anchor tuple
    ids: list[str] = []
    users: list[str] = []
    tools: list[str | None] = []
    keys: list[str] = []
    texts: list[str | None] = []
    anchors: list[tuple[Anchor, ...]] = []
    parts: dict[str, list[np.ndarray]] = {c: [] for c in catalog.COLUMNS}
    kept: list[pa.Table] = []
    bad: list[dict[str, Any]] = []
    for chunk in store.scan_chunks("Learning", "l", proj):
        chunk = health.split_rows(store, "Learning", chunk)  # bad rows left out (listed in bad_rows)
        bad.extend(b for b in store.bad_rows if b["table"] == "Learning")
        if chunk.num_rows == 0:
            if not kept:
                kept.append(chunk.drop_columns(_DROP))  # the columns, for an empty file
            continue
        chunk_ids = chunk.column("id").to_pylist()
        catalog.vectors.append_loaded(chunk_ids, _embeddings(chunk, store.dim))
        ids.extend(chunk_ids)
        users.extend(_strings(chunk.column("user_id"), interned))
        chunk_tools = _strings(chunk.column("tool"), interned)
        tools.extend(chunk_tools)
        keys.extend(chunk.column("content_key").to_pylist())
        texts.extend(chunk.column("search_text").to_pylist())
        for tool, ents, tops, otype in zip(
            chunk_tools, chunk.column("entities").to_pylist(), chunk.column("topics").to_pylist(),
            _strings(chunk.column("objective_type"), interned),
        ):
            key = (tool, tuple(ents or ()), tuple(tops or ()), otype)
            row = anchor_memo.get(key)
            if row is None:  # rows with the same links share one tuple of shared anchors
                row = tuple(anchor_memo.setdefault(a, a) for a in anchors_of(tool, key[1], key[2], otype))
                anchor_memo[key] = row
            anchors.append(row)
        created = _seconds(chunk, "created_at")
        ttl = _numbers(chunk, "ttl_days", np.nan)
        values = {
            "status": _codes(chunk, "status", STATUS_CODE),
            "tier": _codes(chunk, "tier", TIER_CODE),
            "superseded": _flags(chunk, "superseded_by"),
            "shared": _flags(chunk, "shared"),
            "helpful": _numbers(chunk, "helpful"),
            "harmful": _numbers(chunk, "harmful"),
            "validations": _numbers(chunk, "validations"),
            "confidence": _numbers(chunk, "confidence", 0.5),
            "score": _numbers(chunk, "score", 0.5),
            "canary_allocation": _numbers(chunk, "canary_allocation", 1.0),
            "created_at": created,
            "updated_at": _seconds(chunk, "updated_at"),
            "expires_at": np.where(np.isnan(ttl) | (ttl <= 0), np.inf, created + np.nan_to_num(ttl) * 86400.0),
        }
        for name, arr in values.items():
            parts[name].append(arr)
        kept.append(chunk.drop_columns(_DROP))
        del chunk
    _set_bad_rows(store, "Learning", bad)
    columns = {c: (np.concatenate(p) if p else np.zeros(0)) for c, p in parts.items()}
    del parts
    # Keep the rows (Arrow holds them compactly): get_learning builds a model from them on demand
    # for any learning not written since, instead of a Kùzu round trip.
    rows = pa.concat_tables(kept).combine_chunks() if kept else None
    del kept
    store._loaded_index = dict(zip(ids, range(len(ids))))
    store._dirty_ids = set()
    catalog.vectors.finish_load()
    catalog.load_rows(ids, users, tools, keys, columns, anchors, texts)
    return rows


def load_event_catalog(store: Any) -> None:
    """Rebuild ``store.event_catalog`` from the file, in chunks."""
    proj = "e.id AS id, e.user_id AS user_id, e.embedding AS embedding, e.search_text AS search_text"
    expected = _count(store, "Event", "e")
    matrix = store.event_catalog.vectors
    matrix.start_load(expected)  # int8 codes from its threshold on, quantised chunk by chunk (no float32 copy)
    interned: dict[Any, Any] = {}
    ids: list[str] = []
    users: list[str] = []
    texts: list[str | None] = []
    bad: list[dict[str, Any]] = []
    queue = embed_queue(store)
    queue.clear()  # re-filled below with the events still without an embedding
    waiting: list[str] = []
    for chunk in store.scan_chunks("Event", "e", proj):
        if chunk.column("embedding").null_count:  # written, embedding queued (event_embed_later)
            missing = pc.is_null(chunk.column("embedding"))
            waiting.extend(chunk.filter(missing).column("id").to_pylist())
            chunk = chunk.filter(pc.invert(missing))
        chunk = health.split_rows(store, "Event", chunk)
        bad.extend(b for b in store.bad_rows if b["table"] == "Event")
        if chunk.num_rows == 0:
            continue
        chunk_ids = chunk.column("id").to_pylist()
        matrix.append_loaded(chunk_ids, _embeddings(chunk, store.dim))
        ids.extend(chunk_ids)
        users.extend(_strings(chunk.column("user_id"), interned))
        texts.extend(chunk.column("search_text").to_pylist())
    _set_bad_rows(store, "Event", bad)
    for i in range(0, len(waiting), 500):
        for r in store.read("UNWIND $ids AS i MATCH (e:Event {id: i}) RETURN e.id AS id, e.user_id AS user_id, "
                            "e.content AS content, e.search_text AS search_text", {"ids": waiting[i : i + 500]}):
            queue.put(str(r["id"]), str(r["user_id"]), str(r["content"] or ""), str(r["search_text"] or ""))
    store.event_catalog.load(ids, users, None, texts)
