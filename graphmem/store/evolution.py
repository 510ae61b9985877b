"""Bullet evolution's Cypher (schema 010): failing learnings, their siblings and failed cases, and
the EVOLVED_FROM lineage of an evolved learning."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graphmem.store.kuzu_store import KuzuBase, from_db_time, loads, to_db_time

_LIVE = ("l.status <> 'disabled' AND l.superseded_by IS NULL AND l.tier <> 'archive' "
         "AND (l.kind IS NULL OR l.kind <> 'prompt')")


class EvolutionStore(KuzuBase):
    """What :mod:`graphmem.evolution` reads and writes besides learnings themselves."""

    def failing_learnings(self, user_id: str, min_ratings: int) -> list[str]:
        """The user's live learnings rated at least ``min_ratings`` times with harmful ≥ helpful,
        not tried by evolution since their last change; most harmful first."""
        rows = self.read(
            f"MATCH (l:Learning) WHERE l.user_id = $u AND {_LIVE} AND l.helpful + l.harmful >= $n "
            "AND l.harmful >= l.helpful AND (l.evolved_at IS NULL OR l.evolved_at < l.updated_at) "
            "RETURN l.id AS id ORDER BY l.harmful - l.helpful DESC, l.created_at, l.id",
            {"u": user_id, "n": int(min_ratings)},
        )
        return [r["id"] for r in rows]

    def evolution_siblings(self, user_id: str, learning_id: str, tool: str | None, topics: Sequence[str],
                           limit: int) -> list[str]:
        """The learning's live siblings in the same scope (same tool; with no tool, a shared
        topic), most helpful first (helpful count, then success rate), at most ``limit``."""
        params: dict[str, Any]
        if tool:
            where, params = "l.tool = $tool", {"tool": tool}
        elif topics:
            where, params = "l.tool IS NULL AND size(list_intersect(l.topics, $topics)) > 0", {"topics": list(topics)}
        else:
            where, params = "l.tool IS NULL AND (l.topics IS NULL OR size(l.topics) = 0)", {}
        rows = self.read(
            f"MATCH (l:Learning) WHERE l.user_id = $u AND l.id <> $id AND {_LIVE} AND {where} "
            "AND l.helpful > l.harmful RETURN l.id AS id ORDER BY l.helpful DESC, "
            "l.helpful * 1.0 / (l.helpful + l.harmful) DESC, l.created_at DESC, l.id LIMIT $k",
            {"u": user_id, "id": learning_id, "k": int(limit), **params},
        )
        return [r["id"] for r in rows]

    def failed_cases(self, learning_id: str, limit: int) -> list[dict[str, Any]]:
        """Where the learning failed, newest first: failed traces it was derived from (input,
        output, ground truth, node, failed verdicts) then contexts it was shown in whose outcome
        was rejected (the query as input, the outcome's reasons as why)."""
        cases: list[dict[str, Any]] = []
        rows = self.read(
            "MATCH (:Learning {id: $id})-[:DERIVED_FROM]->(t:Trace) WHERE t.passed = false "
            "RETURN t.id AS id, t.input_text AS input_text, t.output AS output, t.ground_truth AS ground_truth, "
            "t.node AS node, t.created_at AS at ORDER BY t.created_at DESC, t.id LIMIT $k",
            {"id": learning_id, "k": int(limit)},
        )
        for r in rows:
            verdicts = self.read(
                "MATCH (:Trace {id: $id})-[:JUDGED]->(v:Verdict) WHERE v.passed = false "
                "RETURN v.judge AS judge, v.reasoning AS reasoning ORDER BY v.judge", {"id": r["id"]})
            cases.append({"kind": "trace", "id": r["id"], "input_text": r["input_text"], "output": r["output"],
                          "ground_truth": r["ground_truth"], "node": r["node"], "verdicts": verdicts,
                          "at": from_db_time(r["at"])})
        if len(cases) < limit:
            rows = self.read(
                "MATCH (:Learning {id: $id})-[e:APPLIED_IN]->(a:Application) "
                "WHERE e.verdict = 'rejected' OR (e.verdict IS NULL AND a.outcome = 'failure') "
                "RETURN a.id AS id, a.query AS query, a.tool AS tool, a.reasons AS reasons, a.created_at AS at "
                "ORDER BY a.created_at DESC, a.id LIMIT $k",
                {"id": learning_id, "k": int(limit - len(cases))},
            )
            for r in rows:
                cases.append({"kind": "context", "id": r["id"], "input_text": r["query"] or "", "output": None,
                              "ground_truth": None, "node": r["tool"], "verdicts": [],
                              "reasons": loads(r["reasons"], []), "at": from_db_time(r["at"])})
        return cases

    def link_evolved(self, child_id: str, parent_ids: Sequence[str], fitness: float, at: datetime) -> None:
        """child-[:EVOLVED_FROM {fitness, created_at}]->parent for each parent."""
        self.write(
            "MATCH (c:Learning {id: $c}), (p:Learning) WHERE p.id IN $ids MERGE (c)-[e:EVOLVED_FROM]->(p) "
            "ON CREATE SET e.fitness = $f, e.created_at = $ts",
            {"c": child_id, "ids": list(parent_ids), "f": float(fitness), "ts": to_db_time(at)},
        )

    def set_evolved_at(self, learning_id: str, at: datetime) -> None:
        """Mark the learning as tried by evolution at ``at``."""
        self.write("MATCH (l:Learning {id: $id}) SET l.evolved_at = $ts", {"id": learning_id, "ts": to_db_time(at)})

    def evolved_from(self, learning_id: str) -> list[str]:
        """Ids of the learnings an evolved learning was bred from."""
        rows = self.read("MATCH (:Learning {id: $id})-[:EVOLVED_FROM]->(p:Learning) RETURN p.id AS id ORDER BY id",
                         {"id": learning_id})
        return [r["id"] for r in rows]
