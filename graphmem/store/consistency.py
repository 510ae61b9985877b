"""Do the in-memory mirrors match the file? The check the stress tests and `doctor` rely on.

The store keeps mirrors of the file (the learning catalog: ids, owners, statuses, tiers,
counters; the event catalog) that it updates after every commit. After any sequence of
concurrent writes they must equal what a fresh read of the file gives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from graphmem.store.catalog import STATUS_CODE, TIER_CODE

if TYPE_CHECKING:
    from graphmem.store.connection import Connection

_FIELDS = ("status", "tier", "helpful", "harmful", "validations")


def mirror_mismatches(store: Connection, *, limit: int = 20) -> list[str]:
    """Differences between the mirrors and the file, as readable lines ([] when they agree)."""
    problems: list[str] = []
    with store.snapshot():
        rows = store.read(
            "MATCH (l:Learning) RETURN l.id AS id, l.user_id AS user_id, l.status AS status, l.tier AS tier, "
            "l.helpful AS helpful, l.harmful AS harmful, l.validations AS validations, l.shared AS shared, "
            "l.superseded_by AS superseded_by, l.tool AS tool"
        )
        events = store.read("MATCH (e:Event) RETURN e.id AS id, e.user_id AS user_id")
        catalog, event_catalog = store.learning_catalog, store.event_catalog
        file_ids = {r["id"] for r in rows}
        mirror_ids = set(catalog.ids)
        for ident in sorted(file_ids - mirror_ids)[:limit]:
            problems.append(f"learning {ident} is in the file but not in the mirror")
        for ident in sorted(mirror_ids - file_ids)[:limit]:
            problems.append(f"learning {ident} is in the mirror but not in the file")
        if len(catalog.ids) != len(mirror_ids):
            problems.append(f"the mirror lists {len(catalog.ids) - len(mirror_ids)} learning id(s) twice")
        codes = {"status": STATUS_CODE, "tier": TIER_CODE}
        rows_of = catalog.vectors.rows
        for r in rows:
            row = rows_of.get(r["id"])
            if row is None:
                continue
            if catalog.user[row] != r["user_id"]:
                problems.append(f"learning {r['id']}: owner {catalog.user[row]!r} in the mirror, {r['user_id']!r} in the file")
            if catalog.tool[row] != r["tool"]:
                problems.append(f"learning {r['id']}: tool {catalog.tool[row]!r} in the mirror, {r['tool']!r} in the file")
            flags = {"shared": bool(r["shared"]), "superseded": bool(r["superseded_by"])}
            for name, want_flag in flags.items():
                if bool(catalog.col(name)[row]) != want_flag:
                    problems.append(f"learning {r['id']}: {name} {not want_flag} in the mirror, {want_flag} in the file")
            for name in _FIELDS:
                want = codes[name].get(r[name], -1) if name in codes else r[name]
                have = catalog.col(name)[row]
                if not np.isclose(float(have), float(want)):
                    problems.append(f"learning {r['id']}: {name} {have!r} in the mirror, {r[name]!r} in the file")
            if len(problems) >= limit:
                break
        event_ids = {e["id"] for e in events}
        mirror_events = set(event_catalog.vectors.ids)
        if event_ids != mirror_events:
            problems.append(
                f"events: {len(event_ids - mirror_events)} in the file only, {len(mirror_events - event_ids)} in the mirror only"
            )
    return problems[:limit]
