"""Read-side queries for insights and export: outcomes over time, aggregates, episodes, the graph.

Everything here only reads, except :meth:`AnalyticsStore.insert_application_record`, which
writes a finished Application (with its APPLIED_IN edges) in one go: used by tests and by imports
of outcome histories, never by the live loop (``Memory.context``/``record_outcome`` do that).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from graphmem.models import Application, Event, Objective
from graphmem.store.events import _EVENT_RETURN, _OBJ_RETURN, event_from_row, objective_from_row
from graphmem.store.kuzu_store import KuzuBase, dumps, from_db_time, loads, to_db_time

# Properties never copied into exports: vectors are large and mean nothing to graph tools.
_VECTOR_PROPS = frozenset({"embedding", "centroid"})


class AnalyticsStore(KuzuBase):
    """Aggregates and bulk reads for :mod:`graphmem.insights` and :mod:`graphmem.export`."""

    # --- applications and outcomes -------------------------------------------------------
    def application_outcomes(self, user_id: str) -> list[dict[str, Any]]:
        """Every Application of the user, oldest first.

        Rows: id, query, tool, created_at, outcome, rating, reasons (list), outcome_at,
        learnings (how many learnings the context showed).
        """
        rows = self.read(
            "MATCH (a:Application) WHERE a.user_id = $user "
            "OPTIONAL MATCH (l:Learning)-[:APPLIED_IN]->(a) "
            "RETURN a.id AS id, a.query AS query, a.tool AS tool, a.created_at AS created_at, "
            "a.outcome AS outcome, a.rating AS rating, a.reasons AS reasons, a.outcome_at AS outcome_at, "
            "count(l) AS learnings ORDER BY created_at, id",
            {"user": user_id},
        )
        for r in rows:
            r["created_at"] = from_db_time(r["created_at"])
            r["outcome_at"] = from_db_time(r["outcome_at"])
            r["reasons"] = _reason_list(r["reasons"])
            r["learnings"] = int(r["learnings"] or 0)
        return rows

    def status_tier_counts(self, user_id: str) -> list[dict[str, Any]]:
        """How many of the user's learnings sit in each (status, tier) pair."""
        rows = self.read(
            "MATCH (l:Learning) WHERE l.user_id = $user "
            "RETURN l.status AS status, l.tier AS tier, count(*) AS n ORDER BY status, tier",
            {"user": user_id},
        )
        return [{"status": r["status"], "tier": r["tier"], "n": int(r["n"])} for r in rows]

    def recent_transitions(self, user_id: str, *, limit: int = 50) -> list[dict[str, Any]]:
        """The user's latest logged transitions, newest first, with the learning's content."""
        rows = self.read(
            "MATCH (l:Learning)-[:HAS_TRANSITION]->(t:Transition) WHERE l.user_id = $user "
            "RETURN t.created_at AS created_at, t.learning_id AS learning_id, l.content AS content, "
            "t.field AS field, t.old AS old, t.new AS new, t.reason AS reason, t.version AS version "
            "ORDER BY created_at DESC, version DESC LIMIT $limit",
            {"user": user_id, "limit": int(limit)},
        )
        for r in rows:
            r["created_at"] = from_db_time(r["created_at"])
            r["version"] = int(r["version"] or 0)
        return rows

    def insert_application_record(
        self,
        application: Application,
        *,
        outcome_at: datetime | None = None,
        ranks: Sequence[tuple[str, int, float]] = (),
    ) -> None:
        """Write a finished Application and its APPLIED_IN edges ((learning_id, rank, score)).

        For tests and history imports only; the live loop records applications itself.
        """
        params = {
            "id": application.id, "user_id": application.user_id, "query": application.query,
            "tool": application.tool, "pattern_id": application.pattern_id,
            "created_at": to_db_time(application.created_at), "outcome": application.outcome,
            "rating": application.rating, "reasons": dumps(list(application.reasons)),
            "outcome_at": to_db_time(outcome_at),
        }
        props = ", ".join(f"{k}: ${k}" for k in params)
        with self.transaction():
            self.write(f"CREATE (:Application {{{props}}})", params)
            for learning_id, rank, score in ranks:
                self.write(
                    "MATCH (l:Learning {id: $lid}), (a:Application {id: $aid}) "
                    "CREATE (l)-[:APPLIED_IN {rank: $rank, score: $score, reasons: '[]'}]->(a)",
                    {"lid": learning_id, "aid": application.id, "rank": int(rank), "score": float(score)},
                )

    # --- episodes (for the training-pair export) ---------------------------------------------
    def episode_events(self, user_id: str) -> list[Event]:
        """The user's events that belong to an objective or a session, oldest first."""
        rows = self.read(
            f"MATCH (e:Event) WHERE e.user_id = $user AND (e.objective_id IS NOT NULL OR e.session_id IS NOT NULL) "
            f"RETURN {_EVENT_RETURN} ORDER BY e.created_at, e.id",
            {"user": user_id},
        )
        return [event_from_row(r) for r in rows]

    def user_objectives(self, user_id: str) -> list[Objective]:
        """All of the user's objectives, oldest first."""
        rows = self.read(
            f"MATCH (o:Objective) WHERE o.user_id = $user RETURN {_OBJ_RETURN} ORDER BY o.started_at, o.id",
            {"user": user_id},
        )
        return [objective_from_row(r) for r in rows]

    # --- the whole graph (for GraphML) --------------------------------------------------------
    def graph_nodes(self) -> list[dict[str, Any]]:
        """Every node: {"key", "label", "properties"} with vectors dropped.

        ``key`` is the internal id as "table:offset", stable for one read of the file.
        """
        return graph_nodes(self.read)

    def graph_edges(self) -> list[dict[str, Any]]:
        """Every edge: {"src", "dst", "type", "properties"}, endpoints as graph_nodes' keys."""
        return graph_edges(self.read)


Reader = Callable[[str], list[dict[str, Any]]]


def _tables(read: Reader, kind: str) -> list[str]:
    return [t["name"] for t in read("CALL show_tables() RETURN name, type") if t["type"] == kind]


def graph_nodes(read: Reader) -> list[dict[str, Any]]:
    """Every node readable through ``read`` (see :meth:`AnalyticsStore.graph_nodes`)."""
    out = []
    for table in _tables(read, "NODE"):
        for r in read(f"MATCH (n:{table}) RETURN n"):
            node = r["n"]
            props = {k: v for k, v in node.items() if not k.startswith("_") and k not in _VECTOR_PROPS}
            out.append({"key": _internal(node["_id"]), "label": node["_label"], "properties": props})
    return out


def graph_edges(read: Reader) -> list[dict[str, Any]]:
    """Every edge readable through ``read`` (see :meth:`AnalyticsStore.graph_edges`)."""
    out = []
    for table in _tables(read, "REL"):
        for r in read(f"MATCH ()-[r:{table}]->() RETURN r"):
            rel = r["r"]
            props = {k: v for k, v in rel.items() if not k.startswith("_")}
            out.append(
                {"src": _internal(rel["_src"]), "dst": _internal(rel["_dst"]), "type": rel["_label"], "properties": props}
            )
    return out


def _internal(ident: dict[str, Any]) -> str:
    return f"{ident['table']}:{ident['offset']}"


def _reason_list(text: str | None) -> list[str]:
    """Reasons stored as JSON text (a list); tolerate a bare comma-separated string."""
    if not text:
        return []
    try:
        value = loads(text, [])
    except ValueError:
        return [p.strip() for p in text.split(",") if p.strip()]
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]
