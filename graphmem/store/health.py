"""The file's health: rows the catalogs cannot hold, and the checks and repairs of ``graphmem doctor``.

A row written by hand (analyst Cypher with ``write=True``, another Kùzu client) can hold values
graphmem never writes: a status outside the lifecycle, a missing embedding. Opening a file must
not fail on them: :func:`split_rows` keeps such rows out of the in-memory catalogs and lists them
in ``store.bad_rows`` (with a logged warning). :func:`check` finds those and other problems (the
Meta bookkeeping, links to nodes that are gone, catalogs out of step with the file) and
:func:`repair` fixes what can be fixed without guessing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, get_args

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, Field

from graphmem.models import LEARNING_KINDS, SENTIMENTS, SOURCE_TYPES, EventKind
from graphmem.store import migrations
from graphmem.store.catalog import STATUS_CODE, TIER_CODE

if TYPE_CHECKING:
    from graphmem.store.connection import Mirrored

log = logging.getLogger("graphmem")

# Allowed values of the enum-like properties, and what --repair sets an unknown value to.
LEARNING_ENUMS: dict[str, tuple[tuple[str, ...], str]] = {
    "status": (tuple(STATUS_CODE), "disabled"),
    "tier": (tuple(TIER_CODE), "archive"),
    "kind": (LEARNING_KINDS, "observation"),
    "sentiment": (SENTIMENTS, "neutral"),
    "source_type": (SOURCE_TYPES, "observation"),
}
OBJECTIVE_STATUSES = ("running", "completed", "failed", "cancelled")
EVENT_KINDS_ALL: tuple[str, ...] = get_args(EventKind)


def _embedding_ok(value: Any, dim: int) -> bool:
    return value is not None and len(value) == dim


def row_problems(table: str, row: dict[str, Any], dim: int) -> list[str]:
    """What is wrong with one Learning or Event row (as the catalogs read it); [] when nothing."""
    problems = []
    if table == "Learning":
        for prop, (allowed, _) in LEARNING_ENUMS.items():
            if prop in row and row[prop] not in allowed:
                problems.append(f"{prop} {row[prop]!r} is not one of {', '.join(allowed)}")
        if "created_at" in row and row["created_at"] is None:
            problems.append("created_at is missing")
    elif table == "Event" and "kind" in row and row["kind"] not in EVENT_KINDS_ALL:
        problems.append(f"kind {row['kind']!r} is not one of {', '.join(EVENT_KINDS_ALL)}")
    if "user_id" in row and row["user_id"] is None:
        problems.append("user_id is missing")
    if "embedding" in row and not _embedding_ok(row["embedding"], dim):
        problems.append(f"embedding is missing or not {dim} numbers")
    return problems


def split_rows(store: Any, table_name: str, table: pa.Table) -> pa.Table:
    """``table`` without the rows the catalogs cannot hold; those go to ``store.bad_rows``."""
    dim = int(store.dim)
    columns = [c for c in ("status", "tier", "kind", "sentiment", "source_type", "created_at", "user_id", "embedding") if c in table.column_names]
    keep = np.ones(table.num_rows, dtype=bool)
    bad = []
    suspects = np.flatnonzero(_suspect_rows(table_name, table, columns, dim))  # vectorised pre-check
    if suspects.size:
        sub = table.take(pa.array(suspects))
        data = {c: sub.column(c).to_pylist() for c in columns}  # only the suspect rows become Python
        ids = sub.column("id").to_pylist()
        for j, ident in enumerate(ids):
            problems = row_problems(table_name, {c: data[c][j] for c in columns}, dim)
            if problems:
                keep[int(suspects[j])] = False
                bad.append({"table": table_name, "id": ident, "problems": problems})
    previous: list[dict[str, Any]] = getattr(store, "bad_rows", [])
    store.bad_rows = [b for b in previous if b["table"] != table_name] + bad
    if not bad:
        return table
    log.warning(
        "%d %s row(s) of %s hold values graphmem cannot use and were left out (first: %s %s); "
        "run `graphmem doctor` to see them and `graphmem doctor --repair` to fix them",
        len(bad), table_name, getattr(store, "path", None), bad[0]["id"], "; ".join(bad[0]["problems"]),
    )
    return table.filter(pa.array(keep))


def _suspect_rows(table_name: str, table: pa.Table, columns: list[str], dim: int) -> np.ndarray:
    """A boolean mask of the rows :func:`row_problems` may object to (a superset of them),
    computed column-wise: an open reads every row, and turning each embedding into a Python
    list cost ~3 s and ~1.2 GB at 100k learnings."""
    import pyarrow.compute as pc

    mask = np.zeros(table.num_rows, dtype=bool)
    if table.num_rows == 0:
        return mask

    def flag(values: Any) -> None:
        mask[np.asarray(pc.fill_null(values, True).to_numpy(zero_copy_only=False), dtype=bool)] = True

    enums: dict[str, tuple[str, ...]] = {}
    if table_name == "Learning":
        enums = {prop: allowed for prop, (allowed, _) in LEARNING_ENUMS.items()}
    elif table_name == "Event":
        enums = {"kind": EVENT_KINDS_ALL}
    try:
        for prop, allowed in enums.items():
            if prop in columns:
                flag(pc.invert(pc.is_in(table.column(prop), value_set=pa.array(list(allowed), pa.string()))))
        for prop in ("created_at", "user_id"):
            if prop in columns:
                flag(pc.is_null(table.column(prop)))
        if "embedding" in columns:
            flag(pc.not_equal(pc.list_value_length(table.column("embedding")), dim))
    except (pa.ArrowException, TypeError, ValueError):  # an unexpected column type: check every row
        mask[:] = True
    return mask


def _problem(kind: str, message: str, *, table: str = "", ident: Any = None, repairable: bool = False) -> dict[str, Any]:
    return {"kind": kind, "table": table, "id": ident, "message": message, "repairable": repairable}


def _rows(store: Mirrored, cypher: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return store.read(cypher, params)


def _tables(store: Mirrored) -> set[str]:
    return {r["name"] for r in _rows(store, "CALL show_tables() RETURN name")}


def _embedding_dim(store: Mirrored) -> int | None:
    for r in _rows(store, "CALL table_info('Learning') RETURN name, type"):
        if r["name"] == "embedding" and str(r["type"]).upper().startswith("FLOAT["):
            return int(str(r["type"])[6:-1])
    return None


def check(store: Mirrored) -> list[dict[str, Any]]:
    """Every problem found in the file, as dicts: kind, table, id, message, repairable."""
    out: list[dict[str, Any]] = []
    tables = _tables(store)
    # --- Meta bookkeeping
    meta = {r["k"]: r["v"] for r in _rows(store, "MATCH (m:Meta) RETURN m.key AS k, m.value AS v")} if "Meta" in tables else {}
    for key, expected in (("embedder", store.embedder_name), ("dim", str(store.dim)), ("schema_version", str(migrations.latest_version()))):
        if key not in meta:
            out.append(_problem("meta", f"Meta has no {key!r}; it should be {expected!r}", table="Meta", ident=key, repairable=True))
        elif key != "embedder" and meta[key] != expected:
            out.append(_problem("meta", f"Meta {key!r} is {meta[key]!r}, expected {expected!r}", table="Meta", ident=key))
    file_dim = _embedding_dim(store) if "Learning" in tables else None
    if file_dim is not None and file_dim != store.dim:
        out.append(_problem("meta", f"embeddings in this file have {file_dim} dims, this embedder {store.dim}", table="Learning"))
    # --- rows with values graphmem cannot use
    if "Learning" in tables:
        props = ", ".join(f"l.{p} AS {p}" for p in LEARNING_ENUMS) + ", l.created_at AS created_at, l.user_id AS user_id"
        for r in _rows(store, f"MATCH (l:Learning) RETURN l.id AS id, {props}, l.embedding IS NULL AS no_emb"):
            problems = row_problems("Learning", {k: v for k, v in r.items() if k not in ("id", "no_emb")}, store.dim)
            if r["no_emb"]:
                problems.append("embedding is missing")
            for p in problems:
                out.append(_problem("bad_value", p, table="Learning", ident=r["id"], repairable=True))
        for r in _rows(
            store,
            "MATCH (l:Learning) WHERE l.superseded_by IS NOT NULL AND l.superseded_by <> '' "
            "OPTIONAL MATCH (n:Learning {id: l.superseded_by}) WITH l, n WHERE n IS NULL RETURN l.id AS id, l.superseded_by AS s",
        ):
            out.append(_problem("dangling", f"superseded_by points to a missing learning {r['s']}", table="Learning", ident=r["id"], repairable=True))
    if "Event" in tables:
        queue = getattr(store, "_embed_queue", None)
        queued = queue.ids() if queue is not None else set()
        for r in _rows(store, "MATCH (e:Event) RETURN e.id AS id, e.kind AS kind, e.user_id AS user_id, e.embedding IS NULL AS no_emb"):
            problems = row_problems("Event", {"kind": r["kind"], "user_id": r["user_id"]}, store.dim)
            if r["no_emb"] and r["id"] not in queued:  # queued: embedded by the next drain
                problems.append("embedding is missing")
            for p in problems:
                out.append(_problem("bad_value", p, table="Event", ident=r["id"], repairable=p.startswith("embedding")))
    if "Objective" in tables:
        for r in _rows(store, "MATCH (o:Objective) WHERE NOT o.status IN $ok RETURN o.id AS id, o.status AS s", {"ok": list(OBJECTIVE_STATUSES)}):
            out.append(_problem("bad_value", f"status {r['s']!r} is not one of {', '.join(OBJECTIVE_STATUSES)}", table="Objective", ident=r["id"], repairable=True))
    if "Transition" in tables:
        q = "MATCH (t:Transition) WHERE NOT EXISTS { MATCH (:Learning)-[:HAS_TRANSITION]->(t) } RETURN t.id AS id, t.learning_id AS l"
        for r in _rows(store, q):
            out.append(_problem("dangling", f"transition of a missing learning {r['l']}", table="Transition", ident=r["id"]))
    # --- the in-memory mirrors
    if "Learning" in tables:
        in_file = int(_rows(store, "MATCH (l:Learning) RETURN count(l) AS n")[0]["n"])
        bad = sum(1 for b in getattr(store, "bad_rows", []) if b["table"] == "Learning")
        if in_file - bad != len(store.learning_catalog):
            out.append(_problem("mirror", f"the learning catalog holds {len(store.learning_catalog)} learnings, the file {in_file - bad} usable ones", table="Learning", repairable=True))
    if "Event" in tables:
        in_file = int(_rows(store, "MATCH (e:Event) RETURN count(e) AS n")[0]["n"])
        bad = sum(1 for b in getattr(store, "bad_rows", []) if b["table"] == "Event")
        bad += len(getattr(store, "_embed_queue", ()))  # written, embedding queued (event_embed_later)
        if in_file - bad != len(store.event_catalog):
            out.append(_problem("mirror", f"the event catalog holds {len(store.event_catalog)} events, the file {in_file - bad} usable ones", table="Event", repairable=True))
    return out


def repair(store: Mirrored, embed: Callable[[Sequence[str]], np.ndarray]) -> list[str]:
    """Fix what :func:`check` marks repairable; returns what was done, one line each.

    Unknown enum values become the safe default (status → disabled, tier → archive, kind and
    source_type → observation, sentiment → neutral, objective status → cancelled), missing
    embeddings are recomputed from the text, a superseded_by pointing nowhere is cleared, missing
    Meta keys are written from the current embedder (after checking its dimension against the
    file's vectors) and the catalogs are reloaded.
    """
    from graphmem.errors import EmbedderMismatchError

    done: list[str] = []
    tables = _tables(store)
    file_dim = _embedding_dim(store) if "Learning" in tables else None
    if file_dim is not None and file_dim != store.dim:
        raise EmbedderMismatchError(
            f"the vectors in this file have {file_dim} dims but this embedder has {store.dim}: "
            "repair it with the embedder that built it"
        )
    with store.transaction():
        meta = {r["k"] for r in _rows(store, "MATCH (m:Meta) RETURN m.key AS k")}
        for key, value in (("embedder", store.embedder_name), ("dim", str(store.dim)), ("schema_version", str(store.schema_version))):
            if key not in meta:
                store.write("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})
                done.append(f"Meta {key} set to {value!r}")
        for prop, (allowed, fallback) in LEARNING_ENUMS.items():
            rows = store.write(
                f"MATCH (l:Learning) WHERE l.{prop} IS NULL OR NOT l.{prop} IN $ok SET l.{prop} = $v RETURN l.id AS id",
                {"ok": list(allowed), "v": fallback},
            )
            done += [f"learning {r['id']}: {prop} set to {fallback!r}" for r in rows]
        rows = store.write("MATCH (l:Learning) WHERE l.created_at IS NULL SET l.created_at = l.updated_at RETURN l.id AS id")
        done += [f"learning {r['id']}: created_at set from updated_at" for r in rows]
        rows = store.write(
            "MATCH (l:Learning) WHERE l.superseded_by IS NOT NULL AND l.superseded_by <> '' "
            "OPTIONAL MATCH (n:Learning {id: l.superseded_by}) WITH l, n WHERE n IS NULL "
            "SET l.superseded_by = NULL RETURN l.id AS id"
        )
        done += [f"learning {r['id']}: dangling superseded_by cleared" for r in rows]
        rows = store.write(
            "MATCH (o:Objective) WHERE o.status IS NULL OR NOT o.status IN $ok SET o.status = 'cancelled' RETURN o.id AS id",
            {"ok": list(OBJECTIVE_STATUSES)},
        )
        done += [f"objective {r['id']}: status set to 'cancelled'" for r in rows]
        for label, text in (("Learning", "coalesce(n.content, '')"), ("Event", "coalesce(n.content, '')")):
            missing = store.read(f"MATCH (n:{label}) WHERE n.embedding IS NULL RETURN n.id AS id, {text} AS t")
            if missing:
                vectors = np.asarray(embed([r["t"] for r in missing]), dtype=np.float32)
                for r, v in zip(missing, vectors):
                    store.write(f"MATCH (n:{label} {{id: $id}}) SET n.embedding = $e", {"id": r["id"], "e": v.tolist()})
                    done.append(f"{label.lower()} {r['id']}: embedding recomputed")
    store.reload_catalogs()
    done.append("catalogs reloaded")
    return done


class DoctorReport(BaseModel):
    """What ``graphmem doctor`` found and (with repair) did."""

    path: str | None = None
    problems: list[dict[str, Any]] = Field(default_factory=list)
    repaired: list[str] = Field(default_factory=list)
    remaining: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no problem is left."""
        return not (self.remaining if self.repaired else self.problems)


def doctor(store: Mirrored, *, repair_it: bool, embed: Callable[[Sequence[str]], np.ndarray]) -> DoctorReport:
    """Check the file; with ``repair_it``, repair what can be repaired and check again."""
    report = DoctorReport(path=None if store.path is None else str(store.path), problems=check(store))
    if repair_it and report.problems:
        report.repaired = repair(store, embed)
        report.remaining = check(store)
    else:
        report.remaining = list(report.problems)
    return report
