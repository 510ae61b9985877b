"""Distillation's Cypher: candidate episodic learnings, distilled rules and their members."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from graphmem.store.kuzu_store import KuzuBase, to_db_time

DISTILLED = "distillation"  # Learning.source_type of a distilled rule


class DistillStore(KuzuBase):
    """What :mod:`graphmem.distill` reads and writes besides learnings themselves."""

    def distill_candidates(self, user_id: str) -> list[str]:
        """The user's episodic learnings (observations, reflection rules) not distilled yet and
        still in use, oldest first."""
        rows = self.read(
            "MATCH (l:Learning) WHERE l.user_id = $u AND (l.kind = 'observation' OR l.source_type = 'reflection') "
            "AND l.distilled_at IS NULL AND l.tier <> 'archive' AND l.status <> 'disabled' "
            "AND l.superseded_by IS NULL RETURN l.id AS id ORDER BY l.created_at, l.id",
            {"u": user_id},
        )
        return [r["id"] for r in rows]

    def distilled_rules(self, user_id: str) -> dict[str, list[str]]:
        """The user's live distilled rules and the ids of the learnings each was derived from."""
        rows = self.read(
            "MATCH (r:Learning)-[:DERIVED_FROM]->(m:Learning) WHERE r.user_id = $u AND r.source_type = $src "
            "AND r.status <> 'disabled' AND r.superseded_by IS NULL RETURN r.id AS id, collect(m.id) AS members "
            "ORDER BY id",
            {"u": user_id, "src": DISTILLED},
        )
        return {r["id"]: sorted(r["members"]) for r in rows}

    def learning_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored embeddings by learning id."""
        if not ids:
            return {}
        rows = self.read("MATCH (l:Learning) WHERE l.id IN $ids RETURN l.id AS id, l.embedding AS e", {"ids": list(ids)})
        return {r["id"]: np.asarray(r["e"], dtype=np.float32) for r in rows}

    def link_distilled(self, rule_id: str, member_ids: Sequence[str], at: datetime) -> None:
        """rule-[:DERIVED_FROM]->member for each member; all of them marked distilled at ``at``."""
        params: dict[str, Any] = {"r": rule_id, "ids": list(member_ids)}
        self.write("MATCH (r:Learning {id: $r}), (m:Learning) WHERE m.id IN $ids MERGE (r)-[:DERIVED_FROM]->(m)", params)
        self.write("MATCH (l:Learning) WHERE l.id IN $ids OR l.id = $r SET l.distilled_at = $ts",
                   {**params, "ts": to_db_time(at)})
