"""The outcome loop's queries: Applications, outcomes, Patterns, EFFECTIVE_FOR and windows.

Every Cypher statement of issue 6 (outcomes, implicit outcomes, pattern effectiveness and the
lifecycle windows) lives here; :mod:`graphmem.outcomes` and :mod:`graphmem.lifecycle` hold the
logic and call these methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from graphmem.errors import NotFoundError
from graphmem.models import Application, Event
from graphmem.store.events import _EVENT_RETURN, event_from_row
from graphmem.store.kuzu_store import KuzuBase, dumps, from_db_time, loads, to_db_time

_APP_PROPS = ("id", "user_id", "query", "tool", "pattern_id", "created_at", "outcome", "rating", "reasons")
_APP_RETURN = ", ".join(f"a.{p} AS {p}" for p in _APP_PROPS) + ", a.outcome_at AS outcome_at"


class WindowOutcome(BaseModel):
    """One outcome in a learning's lifecycle window."""

    application_id: str
    outcome: str | None = None
    rating: str | None = None
    reasons: list[str] = Field(default_factory=list)
    outcome_at: datetime
    verdict: str | None = None  # this learning's own verdict (a tag may differ from the outcome's)


class PatternRow(BaseModel):
    """A Pattern node: a cluster of similar context queries (seed 002)."""

    id: str
    user_id: str
    label: str
    size: int
    centroid: list[float]


def application_from_row(row: dict[str, Any], learning_ids: Sequence[str] = ()) -> Application:
    """An Application model from a row returned with the application projection."""
    data = {p: row[p] for p in _APP_PROPS}
    data["created_at"] = from_db_time(data["created_at"])
    data["reasons"] = loads(data["reasons"], [])
    data["learning_ids"] = list(learning_ids)
    return Application.model_validate(data)


class LoopStore(KuzuBase):
    """Applications (contexts handed out), their outcomes, Patterns and lifecycle windows."""

    def ids_with_prefix(self, table: str, user_id: str, prefix: str, limit: int = 5) -> list[str]:
        """Up to ``limit`` ids of ``user_id``'s Application or Objective nodes starting with ``prefix``."""
        if table not in ("Application", "Objective"):
            raise ValueError(f"ids_with_prefix: unsupported table {table!r}")
        rows = self.read(
            f"MATCH (n:{table}) WHERE n.user_id = $u AND starts_with(n.id, $p) RETURN n.id AS id LIMIT {int(limit)}",
            {"u": user_id, "p": prefix},
        )
        return [r["id"] for r in rows]

    # --- applications ------------------------------------------------------------------------
    def get_application(self, application_id: str) -> Application:
        """One Application with the ids of the learnings it showed (by rank); NotFoundError if none."""
        rows = self.read(f"MATCH (a:Application {{id: $id}}) RETURN {_APP_RETURN}", {"id": application_id})
        if not rows:
            raise NotFoundError(
                f"no context with id {application_id!r}; pass the id of a context returned by Memory.context()"
            )
        return application_from_row(rows[0], self.applied_learning_ids(application_id))

    def applied_learning_ids(self, application_id: str) -> list[str]:
        """Ids of the learnings an Application showed, best rank first."""
        rows = self.read(
            "MATCH (l:Learning)-[r:APPLIED_IN]->(a:Application {id: $id}) RETURN l.id AS id ORDER BY r.rank",
            {"id": application_id},
        )
        return [str(r["id"]) for r in rows]

    def set_outcome(
        self,
        application_id: str,
        *,
        outcome: str,
        rating: str | None,
        reasons: Sequence[str],
        at: datetime,
        pattern_id: str | None,
    ) -> None:
        """Store an Application's outcome, rating, reason tags and pattern."""
        self.write(
            "MATCH (a:Application {id: $id}) SET a.outcome = $outcome, a.rating = $rating, "
            "a.reasons = $reasons, a.outcome_at = $at, a.pattern_id = $pattern_id",
            {"id": application_id, "outcome": outcome, "rating": rating, "reasons": dumps(list(reasons)),
             "at": to_db_time(at), "pattern_id": pattern_id},
        )

    def set_application_reasons(self, application_id: str, reasons: Sequence[str]) -> None:
        """Replace an Application's reason tags (the implicit tracker adds ``retry``)."""
        self.write(
            "MATCH (a:Application {id: $id}) SET a.reasons = $reasons",
            {"id": application_id, "reasons": dumps(list(reasons))},
        )

    def applications_for_tool(
        self, user_id: str, tool: str, since: datetime, until: datetime, *, pending_only: bool = False
    ) -> list[Application]:
        """This user's Applications for ``tool`` created in [since, until], newest first."""
        where = "a.user_id = $user AND a.tool = $tool AND a.created_at >= $since AND a.created_at <= $until"
        if pending_only:
            where += " AND a.outcome IS NULL"
        rows = self.read(
            f"MATCH (a:Application) WHERE {where} RETURN {_APP_RETURN} ORDER BY a.created_at DESC",
            {"user": user_id, "tool": tool, "since": to_db_time(since), "until": to_db_time(until)},
        )
        return [application_from_row(r, self.applied_learning_ids(str(r["id"]))) for r in rows]

    def latest_pending_application(self, user_id: str, since: datetime, until: datetime) -> str | None:
        """Id of this user's newest Application created in [since, until] without an outcome."""
        rows = self.read(
            "MATCH (a:Application) WHERE a.user_id = $user AND a.outcome IS NULL AND a.created_at >= $since "
            "AND a.created_at <= $until RETURN a.id AS id ORDER BY a.created_at DESC LIMIT 1",
            {"user": user_id, "since": to_db_time(since), "until": to_db_time(until)},
        )
        return str(rows[0]["id"]) if rows else None

    def tool_results(
        self, user_id: str, tool: str, since: datetime, until: datetime, *, success: bool | None = None
    ) -> list[Event]:
        """This user's ``tool_result`` events for ``tool`` in [since, until), newest first."""
        where = (
            "e.user_id = $user AND e.kind = 'tool_result' AND e.tool_name = $tool "
            "AND e.created_at >= $since AND e.created_at < $until"
        )
        params: dict[str, Any] = {"user": user_id, "tool": tool, "since": to_db_time(since), "until": to_db_time(until)}
        if success is not None:
            where += " AND e.success = $success"
            params["success"] = success
        rows = self.read(f"MATCH (e:Event) WHERE {where} RETURN {_EVENT_RETURN} ORDER BY e.created_at DESC", params)
        return [event_from_row(r) for r in rows]

    # --- patterns and effectiveness (seed 002) -------------------------------------------------
    def set_credit(self, application_id: str, credits: dict[str, tuple[str, float]]) -> None:
        """Record on each APPLIED_IN edge of the Application the learning's verdict and share
        (``{learning_id: (verdict | 'none', share)}``)."""
        rows = [{"id": k, "v": v, "w": float(w)} for k, (v, w) in credits.items()]
        if rows:
            self.write(
                "UNWIND $rows AS r MATCH (l:Learning {id: r.id})-[e:APPLIED_IN]->(a:Application {id: $aid}) "
                "SET e.verdict = r.v, e.credit = r.w",
                {"aid": application_id, "rows": rows},
            )

    def applied_credit(self, application_id: str) -> dict[str, tuple[str, float]]:
        """``{learning_id: (verdict, share)}`` recorded by the Application's outcome (edges without
        a recorded verdict are left out)."""
        rows = self.read(
            "MATCH (l:Learning)-[e:APPLIED_IN]->(a:Application {id: $id}) WHERE e.verdict IS NOT NULL "
            "RETURN l.id AS id, e.verdict AS v, e.credit AS w",
            {"id": application_id},
        )
        return {str(r["id"]): (str(r["v"]), float(r["w"] if r["w"] is not None else 1.0)) for r in rows}

    def patterns(self, user_id: str) -> list[PatternRow]:
        """This user's Patterns."""
        rows = self.read(
            "MATCH (p:Pattern) WHERE p.user_id = $user RETURN p.id AS id, p.user_id AS user_id, "
            "p.label AS label, p.size AS size, p.centroid AS centroid ORDER BY p.created_at",
            {"user": user_id},
        )
        return [PatternRow.model_validate({**r, "size": int(r["size"] or 0), "centroid": list(r["centroid"])}) for r in rows]

    def create_pattern(self, pattern_id: str, user_id: str, label: str, centroid: np.ndarray, at: datetime) -> None:
        """A new Pattern of one member."""
        self.write(
            "CREATE (:Pattern {id: $id, user_id: $user, label: $label, size: 1, created_at: $at, centroid: $c})",
            {"id": pattern_id, "user": user_id, "label": label, "at": to_db_time(at),
             "c": [float(x) for x in centroid]},
        )

    def grow_pattern(self, pattern_id: str, centroid: np.ndarray, size: int) -> None:
        """Move a Pattern's centroid and set its size."""
        self.write(
            "MATCH (p:Pattern {id: $id}) SET p.centroid = $c, p.size = $size",
            {"id": pattern_id, "c": [float(x) for x in centroid], "size": int(size)},
        )

    def link_matched(self, application_id: str, pattern_id: str) -> None:
        """MATCHED edge from an Application to its Pattern."""
        self.write(
            "MATCH (a:Application {id: $aid}), (p:Pattern {id: $pid}) MERGE (a)-[:MATCHED]->(p)",
            {"aid": application_id, "pid": pattern_id},
        )

    def add_effectiveness(self, learning_id: str, pattern_id: str, helpful: int, harmful: int) -> None:
        """Add to the EFFECTIVE_FOR counts of (learning, pattern), creating the edge if needed."""
        self.write(
            "MATCH (l:Learning {id: $lid}), (p:Pattern {id: $pid}) MERGE (l)-[r:EFFECTIVE_FOR]->(p) "
            "ON CREATE SET r.helpful = $h, r.harmful = $x "
            "ON MATCH SET r.helpful = r.helpful + $h, r.harmful = r.harmful + $x",
            {"lid": learning_id, "pid": pattern_id, "h": int(helpful), "x": int(harmful)},
        )

    def effectiveness(self, pattern_id: str) -> dict[str, tuple[int, int]]:
        """``{learning_id: (helpful, harmful)}`` for one Pattern."""
        rows = self.read(
            "MATCH (l:Learning)-[r:EFFECTIVE_FOR]->(p:Pattern {id: $pid}) "
            "RETURN l.id AS id, r.helpful AS h, r.harmful AS x",
            {"pid": pattern_id},
        )
        return {str(r["id"]): (int(r["h"] or 0), int(r["x"] or 0)) for r in rows}

    # --- lifecycle windows (seed 000) -----------------------------------------------------------
    def learnings_with_new_outcomes(self, user_id: str) -> list[str]:
        """Ids of this user's non-disabled learnings shown in a context whose outcome is newer
        than the learning's ``window_mark`` (the newest outcome already counted)."""
        rows = self.read(
            "MATCH (l:Learning)-[e:APPLIED_IN]->(a:Application) "
            "WHERE l.user_id = $user AND a.user_id = $user AND l.status <> 'disabled' AND a.outcome_at IS NOT NULL "
            "AND (e.verdict IS NULL OR e.verdict <> 'none') "
            "AND (l.window_mark IS NULL OR a.outcome_at > l.window_mark) "
            "RETURN DISTINCT l.id AS id ORDER BY id",
            {"user": user_id},
        )
        return [str(r["id"]) for r in rows]

    def outcome_window(self, learning_id: str, size: int) -> list[WindowOutcome]:
        """The last ``size`` outcomes of the owner's contexts that showed the learning, newest
        first (other users' outcomes on a shared learning never move its lifecycle). A context
        whose outcome did not credit the learning (``used=`` named others) is not in its window."""
        rows = self.read(
            "MATCH (l:Learning {id: $id})-[e:APPLIED_IN]->(a:Application) "
            "WHERE a.outcome_at IS NOT NULL AND a.user_id = l.user_id AND (e.verdict IS NULL OR e.verdict <> 'none') "
            "RETURN a.id AS application_id, a.outcome AS outcome, a.rating AS rating, a.reasons AS reasons, "
            "a.outcome_at AS outcome_at, e.verdict AS verdict ORDER BY a.outcome_at DESC LIMIT $n",
            {"id": learning_id, "n": int(size)},
        )
        return [
            WindowOutcome.model_validate(
                {**r, "reasons": loads(r["reasons"], []), "outcome_at": from_db_time(r["outcome_at"])}
            )
            for r in rows
        ]

    def loop_marks(self, learning_id: str) -> tuple[datetime | None, datetime | None]:
        """A learning's ``(window_mark, decayed_at)``."""
        rows = self.read(
            "MATCH (l:Learning {id: $id}) RETURN l.window_mark AS w, l.decayed_at AS d", {"id": learning_id}
        )
        if not rows:
            raise NotFoundError(f"no learning with id {learning_id!r}")
        return from_db_time(rows[0]["w"]), from_db_time(rows[0]["d"])

    def set_window_mark(self, learning_id: str, mark: datetime) -> None:
        """Remember the newest outcome counted in a learning's window."""
        self.write("MATCH (l:Learning {id: $id}) SET l.window_mark = $m", {"id": learning_id, "m": to_db_time(mark)})

    def set_decayed_at(self, learning_id: str, when: datetime) -> None:
        """Remember when confidence decay was last applied to a learning."""
        self.write("MATCH (l:Learning {id: $id}) SET l.decayed_at = $d", {"id": learning_id, "d": to_db_time(when)})

    def decay_marks(self, user_id: str) -> dict[str, datetime | None]:
        """``{learning_id: decayed_at}`` for this user's learnings."""
        rows = self.read(
            "MATCH (l:Learning) WHERE l.user_id = $user RETURN l.id AS id, l.decayed_at AS d", {"user": user_id}
        )
        return {str(r["id"]): from_db_time(r["d"]) for r in rows}


__all__ = ["LoopStore", "PatternRow", "WindowOutcome", "application_from_row"]
