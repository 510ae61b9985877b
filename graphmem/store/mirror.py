"""Consistency check between the Learning rows in Kùzu and the in-memory learning catalog.

The catalog (:class:`graphmem.store.catalog.LearningCatalog`) mirrors every committed learning
write; a write that failed half-way, or a catalog update that ran for a rolled-back transaction,
shows up here as a difference. Used by the tests (fuzzing, concurrency) and handy when debugging.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from graphmem.store.catalog import STATUS_CODE, TIER_CODE

if TYPE_CHECKING:
    from graphmem.store import KuzuGraphStore

_STATUS_OF = {code: name for name, code in STATUS_CODE.items()}
_TIER_OF = {code: name for name, code in TIER_CODE.items()}


def mirror_mismatches(store: KuzuGraphStore) -> list[str]:
    """Differences between Kùzu's Learning rows and ``store.learning_catalog``; [] when in sync.

    Compares the count per (user, status), then per learning: presence on both sides, owner,
    status, tier, shared flag, superseded flag and tool.
    """
    rows = store.read(
        "MATCH (l:Learning) RETURN l.id AS id, l.user_id AS user_id, l.status AS status, l.tier AS tier, "
        "l.shared AS shared, l.superseded_by AS superseded_by, l.tool AS tool"
    )
    cat = store.learning_catalog
    in_db: dict[str, dict[str, Any]] = {r["id"]: r for r in rows}
    in_cat: dict[str, dict[str, Any]] = {}
    status, tier, shared, superseded = cat.col("status"), cat.col("tier"), cat.col("shared"), cat.col("superseded")
    for row, ident in enumerate(cat.ids):
        in_cat[ident] = {
            "id": ident, "user_id": cat.user[row], "status": _STATUS_OF.get(int(status[row]), "?"),
            "tier": _TIER_OF.get(int(tier[row]), "?"), "shared": bool(shared[row]),
            "superseded_by": bool(superseded[row]), "tool": cat.tool[row],
        }
    out: list[str] = []
    if len(cat.ids) != len(set(cat.ids)):
        out.append(f"the catalog lists {len(cat.ids) - len(set(cat.ids))} learning id(s) twice")
    db_counts = Counter((r["user_id"], r["status"]) for r in in_db.values())
    cat_counts = Counter((r["user_id"], r["status"]) for r in in_cat.values())
    for key in sorted(set(db_counts) | set(cat_counts), key=str):
        if db_counts[key] != cat_counts[key]:
            out.append(f"user {key[0]!r} status {key[1]}: {db_counts[key]} in Kùzu, {cat_counts[key]} in the catalog")
    for ident in sorted(set(in_db) - set(in_cat)):
        out.append(f"learning {ident} is in Kùzu but not in the catalog")
    for ident in sorted(set(in_cat) - set(in_db)):
        out.append(f"learning {ident} is in the catalog but not in Kùzu")
    for ident in sorted(set(in_db) & set(in_cat)):
        db, mem = in_db[ident], in_cat[ident]
        for field in ("user_id", "status", "tier", "tool"):
            if db[field] != mem[field]:
                out.append(f"learning {ident} {field}: {db[field]!r} in Kùzu, {mem[field]!r} in the catalog")
        if bool(db["shared"]) != mem["shared"]:
            out.append(f"learning {ident} shared: {db['shared']!r} in Kùzu, {mem['shared']!r} in the catalog")
        if bool(db["superseded_by"]) != mem["superseded_by"]:
            out.append(f"learning {ident} superseded: {db['superseded_by']!r} in Kùzu, {mem['superseded_by']} in the catalog")
    return out


__all__ = ["mirror_mismatches"]
