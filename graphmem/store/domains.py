"""The Cypher of domains (schema 012): what the weakness trainer and domain evolution read
(showings of learnings with their outcomes, learnings per domain, activity) and write (Domain,
DomainSnapshot, DomainEvent and DomainGap nodes; the links of weakness lessons)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from graphmem.store.kuzu_store import KuzuBase, from_db_time, loads, to_db_time

_NAME_TABLES = {"tool": "Tool", "topic": "Topic", "objective_type": "ObjectiveType"}
_SNAPSHOT_PROPS = ("learnings", "live_learnings", "avg_confidence", "showings", "followed", "unhelpful",
                   "follow_rate", "surprises", "avg_gap", "weak", "sources")


class DomainStore(KuzuBase):
    """Reads and writes of :mod:`graphmem.domain_evolution` and :mod:`graphmem.weakness`."""

    # --- reads --------------------------------------------------------------------------------
    def judged_showings(self, user_id: str) -> list[dict[str, Any]]:
        """Every time one of the user's learnings was shown in one of the user's contexts that got
        an outcome crediting it (not ``verdict = 'none'``), oldest outcome first: the learning's
        links, source and confidence (when shown, else now), the edge's verdict, the context."""
        rows = self.read(
            "MATCH (l:Learning)-[e:APPLIED_IN]->(a:Application) "
            "WHERE l.user_id = $u AND a.user_id = $u AND a.outcome_at IS NOT NULL "
            "AND (e.verdict IS NULL OR e.verdict <> 'none') "
            "RETURN l.id AS learning_id, l.content AS content, l.tool AS tool, l.topics AS topics, "
            "l.objective_type AS objective_type, l.source_type AS source_type, l.entities AS entities, "
            "coalesce(e.confidence, l.confidence) AS confidence, e.verdict AS verdict, a.id AS application_id, "
            "a.query AS query, a.outcome AS outcome, a.rating AS rating, a.reasons AS reasons, "
            "a.outcome_at AS outcome_at ORDER BY a.outcome_at, a.id, l.id",
            {"u": user_id},
        )
        for r in rows:
            r["reasons"] = loads(r["reasons"], [])
            r["outcome_at"] = from_db_time(r["outcome_at"])
            r["topics"] = list(r["topics"] or [])
            r["entities"] = list(r["entities"] or [])
        return rows

    def domain_learnings(self, user_id: str) -> list[dict[str, Any]]:
        """The user's own learnings with their links, status and confidence."""
        rows = self.read(
            "MATCH (l:Learning) WHERE l.user_id = $u RETURN l.id AS id, l.tool AS tool, l.topics AS topics, "
            "l.objective_type AS objective_type, l.status AS status, l.confidence AS confidence",
            {"u": user_id},
        )
        for r in rows:
            r["topics"] = list(r["topics"] or [])
        return rows

    def domain_activity(self, user_id: str) -> dict[str, set[str]]:
        """Names the user worked with, learnings or not: tools of their events and contexts, and
        their objectives' types ({"tool": {...}, "objective_type": {...}})."""
        tools = {r["t"] for r in self.read(
            "MATCH (e:Event) WHERE e.user_id = $u AND e.tool_name IS NOT NULL RETURN DISTINCT e.tool_name AS t",
            {"u": user_id})}
        tools |= {r["t"] for r in self.read(
            "MATCH (a:Application) WHERE a.user_id = $u AND a.tool IS NOT NULL RETURN DISTINCT a.tool AS t",
            {"u": user_id})}
        types = {r["t"] for r in self.read(
            "MATCH (o:Objective) WHERE o.user_id = $u AND o.objective_type IS NOT NULL "
            "RETURN DISTINCT o.objective_type AS t", {"u": user_id})}
        return {"tool": {str(t) for t in tools if t}, "objective_type": {str(t) for t in types if t}}

    def domain_states(self, user_id: str) -> dict[str, dict[str, Any]]:
        """The user's Domain nodes by id, each with its latest snapshot's figures (``snapshot``)."""
        rows = self.read(
            "MATCH (d:Domain) WHERE d.user_id = $u OPTIONAL MATCH (d)-[:HAS_SNAPSHOT]->(s:DomainSnapshot) "
            "WHERE s.id = d.snapshot_id RETURN d.id AS id, d.kind AS kind, d.name AS name, "
            "d.follow_rate AS follow_rate, d.top_source AS top_source, d.weak_source AS weak_source, "
            "d.snapshot_id AS snapshot_id, d.updated_at AS updated_at, "
            + ", ".join(f"s.{p} AS s_{p}" for p in _SNAPSHOT_PROPS),
            {"u": user_id},
        )
        out: dict[str, dict[str, Any]] = {}
        for r in rows:
            snap = {p: r.pop(f"s_{p}") for p in _SNAPSHOT_PROPS}
            snap["sources"] = loads(snap["sources"], {})
            r["snapshot"] = snap if r["snapshot_id"] else None
            r["updated_at"] = from_db_time(r["updated_at"])
            out[str(r["id"])] = r
        return out

    def domain_events(self, user_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The user's stored domain events, newest first."""
        rows = self.read(
            "MATCH (d:Domain)-[:HAS_EVENT]->(e:DomainEvent) WHERE d.user_id = $u "
            "RETURN e.id AS id, e.domain AS domain, e.snapshot_id AS snapshot_id, e.kind AS kind, "
            "e.source AS source, e.old AS old, e.new AS new, e.detail AS detail, e.created_at AS created_at "
            "ORDER BY e.created_at DESC, e.id LIMIT $k",
            {"u": user_id, "k": int(limit)},
        )
        for r in rows:
            r["created_at"] = from_db_time(r["created_at"])
        return rows

    def domain_gaps(self, user_id: str) -> list[dict[str, Any]]:
        """The gaps of each domain's latest snapshot (the current diagnosis)."""
        rows = self.read(
            "MATCH (d:Domain)-[:HAS_GAP]->(g:DomainGap) WHERE d.user_id = $u AND g.snapshot_id = d.snapshot_id "
            "RETURN g.id AS id, g.domain AS domain, g.snapshot_id AS snapshot_id, g.kind AS kind, "
            "g.severity AS severity, g.detail AS detail, g.created_at AS created_at ORDER BY g.domain, g.kind",
            {"u": user_id},
        )
        for r in rows:
            r["created_at"] = from_db_time(r["created_at"])
        return rows

    def consumed_surprises(self, user_id: str) -> set[tuple[str, str]]:
        """(application id, learning id) of the surprises a weakness lesson already consolidates."""
        rows = self.read(
            "MATCH (c:Learning)-[s:SURPRISED_BY]->(a:Application) WHERE c.user_id = $u "
            "RETURN a.id AS a, s.learning_id AS l",
            {"u": user_id},
        )
        return {(str(r["a"]), str(r["l"])) for r in rows}

    def weakness_lessons(self, user_id: str, domain_node: str) -> list[str]:
        """Ids of the lessons proposed for one Domain node, oldest first."""
        rows = self.read(
            "MATCH (c:Learning)-[:WEAKNESS_OF]->(d:Domain {id: $d}) WHERE c.user_id = $u "
            "RETURN c.id AS id ORDER BY c.created_at, c.id",
            {"u": user_id, "d": domain_node},
        )
        return [str(r["id"]) for r in rows]

    def weakness_lesson_rows(self, user_id: str) -> list[dict[str, Any]]:
        """The user's weakness lessons, oldest first: id, content, status, validations, the
        domain's kind and name, and how many surprise episodes they consolidate."""
        return self.read(
            "MATCH (c:Learning)-[:WEAKNESS_OF]->(d:Domain) WHERE c.user_id = $u "
            "OPTIONAL MATCH (c)-[s:SURPRISED_BY]->(:Application) "
            "RETURN c.id AS id, c.content AS content, c.status AS status, c.validations AS validations, "
            "d.kind AS kind, d.name AS name, count(s) AS episodes, c.created_at AS created_at "
            "ORDER BY created_at, id",
            {"u": user_id},
        )

    # --- writes -------------------------------------------------------------------------------
    def upsert_domain(self, node_id: str, user_id: str, kind: str, name: str, at: datetime) -> None:
        """Create the Domain node if missing, linked (COVERS) to its Tool/Topic/ObjectiveType node."""
        self.write(
            "MERGE (d:Domain {id: $id}) ON CREATE SET d.user_id = $u, d.kind = $kind, d.name = $name, "
            "d.created_at = $at, d.updated_at = $at",
            {"id": node_id, "u": user_id, "kind": kind, "name": name, "at": to_db_time(at)},
        )
        table = _NAME_TABLES.get(kind)
        if table is not None:
            self.write(
                f"MATCH (d:Domain {{id: $id}}), (n:{table} {{name: $name}}) MERGE (d)-[:COVERS]->(n)",
                {"id": node_id, "name": name},
            )

    def add_domain_snapshot(self, node_id: str, snapshot_id: str, user_id: str, domain: str,
                            figures: Mapping[str, Any], top_source: str | None, weak_source: str | None,
                            at: datetime) -> None:
        """Store one snapshot, link it and make it the Domain's latest (its follow rate and sources)."""
        params = {p: figures[p] for p in _SNAPSHOT_PROPS}
        props = ", ".join(f"{p}: ${p}" for p in _SNAPSHOT_PROPS)
        self.write(
            f"MATCH (d:Domain {{id: $node}}) CREATE (d)-[:HAS_SNAPSHOT]->(:DomainSnapshot {{id: $sid, "
            f"user_id: $u, domain: $domain, created_at: $at, {props}}}) "
            "SET d.snapshot_id = $sid, d.follow_rate = $follow_rate, d.top_source = $top, "
            "d.weak_source = $weak_src, d.updated_at = $at",
            {**params, "node": node_id, "sid": snapshot_id, "u": user_id, "domain": domain,
             "at": to_db_time(at), "top": top_source, "weak_src": weak_source},
        )

    def add_domain_event(self, node_id: str, event: Mapping[str, Any]) -> None:
        """Store one DomainEvent (id, user_id, domain, snapshot_id, kind, source, old, new,
        detail, created_at) linked from its Domain."""
        params = dict(event)
        params["created_at"] = to_db_time(params["created_at"])
        props = ", ".join(f"{k}: ${k}" for k in event)
        self.write(f"MATCH (d:Domain {{id: $node}}) CREATE (d)-[:HAS_EVENT]->(:DomainEvent {{{props}}})",
                   {**params, "node": node_id})

    def add_domain_gap(self, node_id: str, gap: Mapping[str, Any]) -> None:
        """Store one DomainGap (id, user_id, domain, snapshot_id, kind, severity, detail,
        created_at) linked from its Domain."""
        params = dict(gap)
        params["created_at"] = to_db_time(params["created_at"])
        props = ", ".join(f"{k}: ${k}" for k in gap)
        self.write(f"MATCH (d:Domain {{id: $node}}) CREATE (d)-[:HAS_GAP]->(:DomainGap {{{props}}})",
                   {**params, "node": node_id})

    def link_weakness(self, lesson_id: str, domain_node: str, surprises: Sequence[tuple[str, str, float]]) -> None:
        """lesson-[:WEAKNESS_OF]->Domain, lesson-[:SURPRISED_BY]->each surprise's Application
        ((application id, learning id, gap)), and lesson-[:DERIVED_FROM]->each surprising learning."""
        self.write("MATCH (c:Learning {id: $c}), (d:Domain {id: $d}) MERGE (c)-[:WEAKNESS_OF]->(d)",
                   {"c": lesson_id, "d": domain_node})
        for app_id, learning_id, gap in surprises:
            self.write(
                "MATCH (c:Learning {id: $c}), (a:Application {id: $a}) "
                "MERGE (c)-[s:SURPRISED_BY {learning_id: $l}]->(a) SET s.gap = $g",
                {"c": lesson_id, "a": app_id, "l": learning_id, "g": float(gap)},
            )
            if learning_id != lesson_id:
                self.write(
                    "MATCH (c:Learning {id: $c}), (m:Learning {id: $l}) MERGE (c)-[:DERIVED_FROM]->(m)",
                    {"c": lesson_id, "l": learning_id},
                )


__all__ = ["DomainStore"]
