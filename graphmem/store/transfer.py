"""Reading one user's whole memory out of a file, and writing it into another (Cypher side of
:mod:`graphmem.transfer`).

:func:`dump_rows` reads what the user owns (the per-user view of :mod:`graphmem.store.analyst`,
minus other users' shared learnings and the built-in judges) as plain rows: every node with all
its properties, vectors included, and every edge between them. :func:`load_rows` writes such rows
into a store in ONE transaction, so a failure leaves the file as it was. Both are generic over the
schema: a table added by a later migration travels without a change here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from graphmem.errors import InvalidInputError
from graphmem.store.analyst import _VOCABULARY, user_view
from graphmem.store.kuzu_store import KuzuBase, to_db_time
from graphmem.store.learnings import _cooccurring

Progress = Callable[[int, int], None]
#: node tables never exported: bookkeeping of the file itself
_SKIPPED_TABLES = frozenset({"Meta"})
#: edges recomputed on import rather than copied (counts per owner, see LearningStore._relate)
_RECOMPUTED_RELS = frozenset({"RELATED"})


def _all(conn: Any, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
    result = conn.execute(query, params or {})
    if isinstance(result, list):  # pragma: no cover
        result = result[-1]
    return [list(r) for r in result.get_all()]


def schema(store: KuzuBase) -> tuple[dict[str, dict[str, str]], dict[str, str], dict[str, dict[str, str]]]:
    """The store's node tables ({table: {column: type}}), their primary keys, and rel tables' columns."""
    nodes: dict[str, dict[str, str]] = {}
    pks: dict[str, str] = {}
    rels: dict[str, dict[str, str]] = {}
    for t in store.read("CALL show_tables() RETURN name, type"):
        info = store.read(f"CALL table_info('{t['name']}') RETURN *")
        columns = {str(r["name"]): str(r["type"]) for r in info}
        if t["type"] == "NODE":
            nodes[t["name"]] = columns
            pks[t["name"]] = next(str(r["name"]) for r in info if r.get("primary key"))
        elif t["type"] == "REL":
            rels[t["name"]] = columns
    return nodes, pks, rels


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return to_db_time(value).isoformat()  # type: ignore[union-attr]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def dump_rows(store: KuzuBase, user: str) -> Iterator[dict[str, Any]]:
    """The user's nodes (``{"type": "node", "label", "properties"}``), then the edges between
    them (``{"type": "edge", "rel", "from": [label, key], "to": [label, key], "properties"}``).

    Tool/Topic/Entity/ObjectiveType nodes come as ``{"type": "node", "label", "properties":
    {"name", ...}}`` too (Entity with its kind; Tool without its counters, which every user shares).
    """
    nodes, pks, rels = schema(store)
    with user_view(store, user, vectors=True) as conn:
        kept: dict[str, set[Any]] = {}
        for label, columns in nodes.items():
            if label in _SKIPPED_TABLES or label in _VOCABULARY:
                continue
            names = list(columns)
            kept[label] = set()
            for row in _all(conn, f"MATCH (n:{label}) RETURN " + ", ".join(f"n.`{c}`" for c in names)):
                props = dict(zip(names, row))
                if "user_id" in props and props["user_id"] != user:
                    continue  # another user's shared learning, or a built-in judge
                kept[label].add(props[pks[label]])
                yield {"type": "node", "label": label, "properties": {k: _jsonable(v) for k, v in props.items()}}
        vocab: dict[str, set[str]] = {v: set() for v in _VOCABULARY if v in nodes}
        edges: list[dict[str, Any]] = []
        for rel, columns in rels.items():
            if rel in _RECOMPUTED_RELS:
                continue
            props_cols = list(columns)
            ret = "".join(f", r.`{c}`" for c in props_cols)
            for src, dst, src_pk, dst_pk in (tuple(str(x) for x in r) for r in _all(conn, f"CALL show_connection('{rel}') RETURN *")):
                if src not in kept:
                    continue  # edges out of vocabulary nodes are RELATED only
                for row in _all(conn, f"MATCH (a:{src})-[r:{rel}]->(b:{dst}) RETURN a.`{src_pk}`, b.`{dst_pk}`{ret}"):
                    a_key, b_key = row[0], row[1]
                    if a_key not in kept[src]:
                        continue
                    if dst in vocab:
                        vocab[dst].add(b_key)
                    elif b_key not in kept.get(dst, ()):
                        continue
                    edges.append({
                        "type": "edge", "rel": rel, "from": [src, a_key], "to": [dst, b_key],
                        "properties": {c: _jsonable(v) for c, v in zip(props_cols, row[2:])},
                    })
    kinds: dict[str, str] = {}
    if vocab.get("Entity"):
        for r in store.read("MATCH (e:Entity) WHERE e.name IN $names RETURN e.name AS name, e.kind AS kind",
                            {"names": sorted(vocab["Entity"])}):
            kinds[r["name"]] = r["kind"]
    for label, found in vocab.items():
        for name in sorted(found):
            anchor: dict[str, Any] = {"name": name}
            if label == "Entity":
                anchor["kind"] = kinds.get(name) or "thing"
            yield {"type": "node", "label": label, "properties": anchor}
    yield from edges


# --- loading ------------------------------------------------------------------------------
def _convert(value: Any, kuzu_type: str, dim: int, where: str) -> Any:
    """A JSON value as the column's type wants it; InvalidInputError naming ``where`` if it can't."""
    if value is None:
        return None
    t = kuzu_type.upper()
    try:
        if t == "TIMESTAMP":
            return to_db_time(datetime.fromisoformat(str(value)))
        if t in ("INT64", "INT32"):
            if isinstance(value, bool) or float(value) != int(value):
                raise ValueError(value)
            return int(value)
        if t in ("DOUBLE", "FLOAT"):
            return float(value)
        if t in ("BOOL", "BOOLEAN"):
            if not isinstance(value, bool):
                raise ValueError(value)
            return value
        if t == "STRING":
            if not isinstance(value, str):
                raise ValueError(value)
            return value
        if t == "STRING[]":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(value)
            return value
        if t.startswith(("FLOAT[", "DOUBLE[")):
            if not isinstance(value, list):
                raise ValueError(value)
            if len(value) != dim:
                raise InvalidInputError(
                    f"{where}: a vector of {len(value)} dims, but this file's embedder has {dim}: "
                    "import into a file opened with the embedder the export was made with"
                )
            return [float(v) for v in value]
    except (TypeError, ValueError) as e:
        if isinstance(e, InvalidInputError):
            raise
        raise InvalidInputError(f"{where}: {value!r} is not a valid {kuzu_type}") from e
    return value


def _rekey(value: Any, old: str, new: str) -> Any:
    """Keys built as "user|name" (summaries, judges) follow the user they are imported as."""
    if old != new and isinstance(value, str) and value.startswith(old + "|"):
        return new + value[len(old):]
    return value


def prepare(
    store: KuzuBase, records: list[tuple[int, dict[str, Any]]], *, old_user: str, new_user: str
) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str, str, Any, Any, dict[str, Any]]]]:
    """Check every record against the store's schema and convert its values; nothing is written.

    ``records`` are (line number, record). Returns the nodes as (label, params) and the edges as
    (rel, src label, dst label, src key, dst key, params). Raises InvalidInputError naming the
    line for anything the store cannot take, or an id the file already holds.
    """
    nodes_schema, pks, rels_schema = schema(store)
    nodes: list[tuple[str, dict[str, Any]]] = []
    edges: list[tuple[str, str, str, Any, Any, dict[str, Any]]] = []
    keys: dict[str, set[Any]] = {}
    for line, rec in records:
        where = f"line {line}"
        props = rec.get("properties") or {}
        if not isinstance(props, dict):
            raise InvalidInputError(f"{where}: 'properties' must be a JSON object")
        if rec.get("type") == "node":
            label = rec.get("label")
            if label not in nodes_schema or label in _SKIPPED_TABLES:
                raise InvalidInputError(f"{where}: unknown node label {label!r}")
            columns = nodes_schema[label]
            unknown = sorted(set(props) - set(columns))
            if unknown:
                raise InvalidInputError(f"{where}: {label} has no properties {unknown}; was this exported by a newer graphmem?")
            params = {k: _convert(v, columns[k], store.dim, f"{where} ({label}.{k})") for k, v in props.items()}
            if "user_id" in params:
                params["user_id"] = new_user
            pk = pks[label]
            params[pk] = _rekey(params.get(pk), old_user, new_user)
            if params[pk] is None:
                raise InvalidInputError(f"{where}: {label} without its key {pk!r}")
            if params[pk] in keys.setdefault(label, set()):
                raise InvalidInputError(f"{where}: {label} {params[pk]!r} appears twice in the file")
            keys[label].add(params[pk])
            nodes.append((label, params))
        elif rec.get("type") == "edge":
            rel = rec.get("rel")
            if rel not in rels_schema or rel in _RECOMPUTED_RELS:
                raise InvalidInputError(f"{where}: unknown edge type {rel!r}")
            ends = rec.get("from"), rec.get("to")
            if not all(isinstance(e, list) and len(e) == 2 and e[0] in nodes_schema for e in ends):
                raise InvalidInputError(f"{where}: 'from' and 'to' must be [label, key] of known node labels")
            columns = rels_schema[rel]
            unknown = sorted(set(props) - set(columns))
            if unknown:
                raise InvalidInputError(f"{where}: {rel} edges have no properties {unknown}")
            params = {k: _convert(v, columns[k], store.dim, f"{where} ({rel}.{k})") for k, v in props.items()}
            (src, a), (dst, b) = ends  # type: ignore[misc]
            edges.append((rel, src, dst, _rekey(a, old_user, new_user), _rekey(b, old_user, new_user), params))
        else:
            raise InvalidInputError(f"{where}: 'type' must be 'node' or 'edge', got {rec.get('type')!r}")
    for rel, src, dst, a, b, _ in edges:
        for label, key in ((src, a), (dst, b)):
            if key not in keys.get(label, ()):
                raise InvalidInputError(f"an edge {rel} names {label} {key!r}, which the file does not hold")
    for label, ids in keys.items():
        if label in _VOCABULARY or not ids:
            continue
        taken = store.read(f"MATCH (n:{label}) WHERE n.`{pks[label]}` IN $ids RETURN n.`{pks[label]}` AS k LIMIT 3",
                           {"ids": sorted(ids)})
        if taken:
            shown = ", ".join(str(r["k"]) for r in taken)
            raise InvalidInputError(
                f"this database already holds {label} {shown}: import into a new file, or forget those first"
            )
    return nodes, edges


def load_rows(
    store: KuzuBase,
    nodes: list[tuple[str, dict[str, Any]]],
    edges: list[tuple[str, str, str, Any, Any, dict[str, Any]]],
    *,
    user: str,
    progress: Progress | None = None,
) -> None:
    """Write checked rows (from :func:`prepare`) in one transaction: vocabulary nodes are merged
    with the file's, the others created; RELATED co-occurrence counts are added for ``user``."""
    _, pks, _ = schema(store)
    total = len(nodes) + len(edges)
    done = 0
    step = max(1, total // 200)
    with store.transaction():  # type: ignore[attr-defined]
        for label, params in nodes:
            pk = pks[label]
            if label in _VOCABULARY:
                extra = {k: v for k, v in params.items() if k != pk}
                sets = {"Tool": "n.success_count = 0, n.error_count = 0, n.created_at = $ts",
                        "Entity": "n.kind = $kind, n.created_at = $ts"}.get(label, "n.created_at = $ts")
                store.write(f"MERGE (n:{label} {{{pk}: $key}}) ON CREATE SET {sets}",
                            {"key": params[pk], "ts": to_db_time(datetime.now().astimezone()),
                             **({"kind": extra.get("kind") or "thing"} if label == "Entity" else {})})
            else:
                props = ", ".join(f"`{k}`: ${k}" for k in params)
                store.write(f"CREATE (n:{label} {{{props}}})", params)
            done += 1
            if progress is not None and done % step == 0:
                progress(done, total)
        grouped: dict[tuple[str, str, str], list[tuple[Any, Any, dict[str, Any]]]] = {}
        for rel, src, dst, a, b, params in edges:
            grouped.setdefault((rel, src, dst), []).append((a, b, params))
        for (rel, src, dst), rows in grouped.items():
            match = f"MATCH (a:{src} {{`{pks[src]}`: $a}}), (b:{dst} {{`{pks[dst]}`: $b}}) "
            if not any(p for _, _, p in rows):  # no properties: one statement for the whole group
                store.write(
                    f"UNWIND $rows AS r MATCH (a:{src} {{`{pks[src]}`: r.a}}), (b:{dst} {{`{pks[dst]}`: r.b}}) "
                    f"CREATE (a)-[:{rel}]->(b)",
                    {"rows": [{"a": a, "b": b} for a, b, _ in rows]},
                )
                done += len(rows)
            else:
                for a, b, params in rows:
                    props = ", ".join(f"`{k}`: $p_{k}" for k in params)
                    store.write(match + f"CREATE (a)-[:{rel} {{{props}}}]->(b)",
                                {"a": a, "b": b, **{f"p_{k}": v for k, v in params.items()}})
                    done += 1
                    if progress is not None and done % step == 0:
                        progress(done, total)
            if progress is not None:
                progress(done, total)
        pairs: Counter[tuple[str, str, str, str, str]] = Counter()
        for label, params in nodes:
            if label == "Learning":
                pairs.update((user, *p) for p in _cooccurring(params.get("topics") or [], params.get("entities") or []))
        if pairs:
            store._relate(pairs)  # type: ignore[attr-defined]
    if progress is not None:
        progress(total, total)
