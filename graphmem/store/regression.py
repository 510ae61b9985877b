"""The Cypher behind :mod:`graphmem.regression`: failed traces that later got a fix."""

from __future__ import annotations

from typing import Any

from graphmem.store.kuzu_store import KuzuBase, from_db_time


class RegressionStore(KuzuBase):
    """Failed traces with the learnings derived from them, their failing verdicts and causes."""

    def failed_traces_with_fixes(self, user_id: str) -> list[dict[str, Any]]:
        """The user's failed Traces that a live learning was derived from (the fix): trace fields
        and ``fixes`` (learning ids), oldest first."""
        rows = self.read(
            "MATCH (l:Learning)-[:DERIVED_FROM]->(t:Trace) WHERE t.user_id = $u AND t.passed = false "
            "AND l.status <> 'disabled' AND l.superseded_by IS NULL "
            "RETURN t.id AS id, t.node AS node, t.input_text AS input_text, t.output AS output, "
            "t.ground_truth AS ground_truth, t.created_at AS created_at, collect(l.id) AS fixes "
            "ORDER BY created_at, id",
            {"u": user_id},
        )
        return [{**r, "created_at": from_db_time(r["created_at"]), "fixes": sorted(r["fixes"])} for r in rows]

    def failing_verdicts(self, trace_id: str) -> list[dict[str, Any]]:
        """The judges that failed a trace and why."""
        return self.read(
            "MATCH (t:Trace {id: $id})-[:JUDGED]->(v:Verdict) WHERE v.passed = false "
            "RETURN v.judge AS judge, v.reasoning AS reasoning ORDER BY judge",
            {"id": trace_id},
        )

    def superseded_by_fix(self, learning_id: str) -> list[str]:
        """Contents of the learnings a fix superseded (the cause it corrected)."""
        rows = self.read(
            "MATCH (:Learning {id: $id})-[:SUPERSEDES]->(o:Learning) RETURN o.content AS c ORDER BY c",
            {"id": learning_id},
        )
        return [r["c"] for r in rows]
