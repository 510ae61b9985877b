"""Learning-from-experience storage (issue 3): judges, traces, verdicts, reflections, and the
curator's SUPERSEDES / CONTRADICTS edges and scoped lookups.

All of it is plain Cypher on the tables of ``schema/001_core.cypher``; no new columns are needed.
List-valued Reflection properties (what_went_well, improvements, rules, prompt_suggestions) are
JSON text, like every other JSON-valued property of the schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.store.kuzu_store import KuzuBase, dumps, from_db_time, loads, to_db_time

_TRACE_PROPS: tuple[str, ...] = (
    "id", "user_id", "node", "mode", "input_text", "output", "ground_truth", "reasoning", "passed",
    "pattern_id", "created_at", "session_id",
)
_TRACE_RETURN = ", ".join(f"t.{p} AS {p}" for p in _TRACE_PROPS)
_DERIVED_TARGETS = frozenset({"Event", "Trace", "Reflection"})
_REFLECT_TARGETS = frozenset({"Event", "Objective", "Trace"})


class TraceStore(KuzuBase):
    """Judges, traces and their verdicts, reflections, and learning-to-learning conflict edges."""

    # --- judges -------------------------------------------------------------------------
    def upsert_judge(
        self, name: str, criteria: str, node: str | None, created_at: datetime, user_id: str | None = None
    ) -> None:
        """Create or replace ``user_id``'s judge ``name`` (None: a built-in judge every user sees).

        Judges are per user: the node's key is ``user|name``, so one user's judge never replaces
        another's; a user's judge of the same name as a built-in one shadows it for that user.
        """
        self.write(
            "MERGE (j:Judge {name: $key}) ON CREATE SET j.created_at = $ts "
            "SET j.criteria = $criteria, j.node = $node, j.active = true, j.user_id = $user, j.label = $name",
            {"key": judge_key(name, user_id), "name": name, "user": user_id, "criteria": criteria, "node": node,
             "ts": to_db_time(created_at)},
        )

    def judges_for(self, node: str | None, user_id: str | None = None) -> list[dict[str, Any]]:
        """Active judges for ``node`` as ``user_id`` sees them: theirs plus the built-in ones
        (a built-in judge shadowed by one of theirs of the same name is left out), each a dict
        with ``name``, ``criteria``, ``node`` and ``key`` (the Judge node's key)."""
        rows = self.read(
            "MATCH (j:Judge) WHERE j.active AND (j.node IS NULL OR j.node = $node) "
            "AND (j.user_id IS NULL OR j.user_id = $user) "
            "RETURN coalesce(j.label, j.name) AS name, j.criteria AS criteria, j.node AS node, "
            "j.name AS key, j.user_id AS user_id ORDER BY name",
            {"node": node or "", "user": user_id if user_id is not None else "\x00"},
        )
        own = {r["name"] for r in rows if r["user_id"] is not None}
        return [
            {k: r[k] for k in ("name", "criteria", "node", "key")}
            for r in rows
            if r["user_id"] is not None or r["name"] not in own
        ]

    # --- traces and verdicts ----------------------------------------------------------------
    def insert_trace(self, trace: dict[str, Any]) -> None:
        """Write one Trace node (keys as in the schema; ``created_at`` an aware datetime)."""
        params = {p: trace.get(p) for p in _TRACE_PROPS}
        params["created_at"] = to_db_time(trace["created_at"])
        props = ", ".join(f"{p}: ${p}" for p in params)
        self.write(f"CREATE (t:Trace {{{props}}})", params)

    def insert_verdict(
        self, trace_id: str, verdict_id: str, judge: str, passed: bool, score: float, reasoning: str,
        created_at: datetime, judge_key: str | None = None,
    ) -> None:
        """Write one Verdict, linked Trace-[:JUDGED]->Verdict-[:EVALUATED_BY]->Judge (the Judge
        node keyed ``judge_key``, default ``judge``)."""
        ts = to_db_time(created_at)
        self.write(
            "MATCH (t:Trace {id: $tid}) CREATE (t)-[:JUDGED]->(v:Verdict {id: $id, judge: $judge, "
            "passed: $passed, score: $score, reasoning: $reasoning, created_at: $ts})",
            {"tid": trace_id, "id": verdict_id, "judge": judge, "passed": bool(passed), "score": float(score),
             "reasoning": reasoning, "ts": ts},
        )
        self.write(
            "MATCH (v:Verdict {id: $id}), (j:Judge {name: $judge}) MERGE (v)-[:EVALUATED_BY]->(j)",
            {"id": verdict_id, "judge": judge_key or judge},
        )

    def get_trace(self, trace_id: str) -> dict[str, Any]:
        """One trace as a dict with its ``verdicts`` (list of dicts); NotFoundError if unknown."""
        rows = self.read(f"MATCH (t:Trace {{id: $id}}) RETURN {_TRACE_RETURN}", {"id": trace_id})
        if not rows:
            raise NotFoundError(f"no trace with id {trace_id!r}")
        trace = dict(rows[0])
        trace["created_at"] = from_db_time(trace["created_at"])
        trace["verdicts"] = self.read(
            "MATCH (:Trace {id: $id})-[:JUDGED]->(v:Verdict) RETURN v.id AS id, v.judge AS judge, "
            "v.passed AS passed, v.score AS score, v.reasoning AS reasoning ORDER BY v.judge",
            {"id": trace_id},
        )
        return trace

    def trace_stats(self, user_id: str) -> list[dict[str, Any]]:
        """Per node and mode: how many traces, and how many passed every judge."""
        return self.read(
            "MATCH (t:Trace) WHERE t.user_id = $user RETURN t.node AS node, t.mode AS mode, "
            "count(t) AS traces, sum(CASE WHEN t.passed THEN 1 ELSE 0 END) AS passed ORDER BY node, mode",
            {"user": user_id},
        )

    # --- reflections --------------------------------------------------------------------
    def insert_reflection(
        self,
        reflection_id: str,
        user_id: str,
        *,
        text: str,
        what_went_well: Sequence[str],
        improvements: Sequence[str],
        rules: Sequence[str],
        prompt_suggestions: Sequence[str],
        confidence: float,
        ttl_days: int | None,
        created_at: datetime,
        about: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Write a Reflection node and REFLECTS_ON edges to ``about`` ((label, id) pairs)."""
        self.write(
            "CREATE (r:Reflection {id: $id, user_id: $user, text: $text, what_went_well: $well, "
            "improvements: $impr, rules: $rules, prompt_suggestions: $prompts, confidence: $conf, "
            "ttl_days: $ttl, created_at: $ts})",
            {"id": reflection_id, "user": user_id, "text": text, "well": dumps(list(what_went_well)),
             "impr": dumps(list(improvements)), "rules": dumps(list(rules)),
             "prompts": dumps(list(prompt_suggestions)), "conf": float(confidence), "ttl": ttl_days,
             "ts": to_db_time(created_at)},
        )
        for label, ident in about:
            if label not in _REFLECT_TARGETS:
                raise InvalidInputError(f"a reflection reflects on {sorted(_REFLECT_TARGETS)}, not {label!r}")
            self.write(
                f"MATCH (r:Reflection {{id: $id}}), (x:{label} {{id: $xid}}) MERGE (r)-[:REFLECTS_ON]->(x)",
                {"id": reflection_id, "xid": ident},
            )

    def get_reflection(self, reflection_id: str) -> dict[str, Any]:
        """One reflection as a dict (list fields decoded); NotFoundError if unknown."""
        rows = self.read(
            "MATCH (r:Reflection {id: $id}) RETURN r.id AS id, r.user_id AS user_id, r.text AS text, "
            "r.what_went_well AS what_went_well, r.improvements AS improvements, r.rules AS rules, "
            "r.prompt_suggestions AS prompt_suggestions, r.confidence AS confidence, r.created_at AS created_at",
            {"id": reflection_id},
        )
        if not rows:
            raise NotFoundError(f"no reflection with id {reflection_id!r}")
        out = dict(rows[0])
        for key in ("what_went_well", "improvements", "rules", "prompt_suggestions"):
            out[key] = loads(out[key], [])
        out["created_at"] = from_db_time(out["created_at"])
        return out

    def reflections_on(self, label: str, ident: str) -> list[str]:
        """Ids of the reflections on one Objective / Event / Trace, oldest first."""
        if label not in _REFLECT_TARGETS:
            raise InvalidInputError(f"reflections are on {sorted(_REFLECT_TARGETS)}, not {label!r}")
        rows = self.read(
            f"MATCH (r:Reflection)-[:REFLECTS_ON]->(x:{label} {{id: $id}}) RETURN r.id AS id ORDER BY r.created_at",
            {"id": ident},
        )
        return [r["id"] for r in rows]

    # --- learning provenance and conflicts ----------------------------------------------------
    def link_derived(self, learning_id: str, label: str, ident: str) -> None:
        """Learning-[:DERIVED_FROM]->Event|Trace|Reflection."""
        if label not in _DERIVED_TARGETS:
            raise InvalidInputError(f"a learning derives from {sorted(_DERIVED_TARGETS)}, not {label!r}")
        self.write(
            f"MATCH (l:Learning {{id: $id}}), (x:{label} {{id: $xid}}) MERGE (l)-[:DERIVED_FROM]->(x)",
            {"id": learning_id, "xid": ident},
        )

    def link_objective(self, learning_id: str, objective_id: str) -> None:
        """Learning-[:FOR_OBJECTIVE]->Objective."""
        self.write(
            "MATCH (l:Learning {id: $id}), (o:Objective {id: $oid}) MERGE (l)-[:FOR_OBJECTIVE]->(o)",
            {"id": learning_id, "oid": objective_id},
        )

    def derived_from(self, learning_id: str) -> list[tuple[str, str]]:
        """(label, id) of everything a learning was derived from."""
        rows = self.read(
            "MATCH (:Learning {id: $id})-[:DERIVED_FROM]->(x) RETURN label(x) AS label, x.id AS id",
            {"id": learning_id},
        )
        return [(r["label"], r["id"]) for r in rows]

    def link_conflict(self, kind: str, newer_id: str, older_id: str, reason: str, created_at: datetime) -> None:
        """newer-[:SUPERSEDES|CONTRADICTS {reason, created_at}]->older (one edge per pair)."""
        if kind not in ("SUPERSEDES", "CONTRADICTS"):
            raise InvalidInputError(f"conflict kind must be SUPERSEDES or CONTRADICTS, not {kind!r}")
        self.write(
            f"MATCH (a:Learning {{id: $a}}), (b:Learning {{id: $b}}) MERGE (a)-[r:{kind}]->(b) "
            "ON CREATE SET r.reason = $reason, r.created_at = $ts",
            {"a": newer_id, "b": older_id, "reason": reason, "ts": to_db_time(created_at)},
        )

    def conflicts(self, learning_id: str) -> list[dict[str, Any]]:
        """SUPERSEDES / CONTRADICTS edges touching a learning: type, src, dst, reason."""
        out: list[dict[str, Any]] = []
        for kind in ("SUPERSEDES", "CONTRADICTS"):
            out += self.read(
                f"MATCH (a:Learning)-[r:{kind}]->(b:Learning) WHERE a.id = $id OR b.id = $id "
                f"RETURN '{kind}' AS type, a.id AS src, b.id AS dst, r.reason AS reason",
                {"id": learning_id},
            )
        return out

    def learning_ids_mentioning(self, user_id: str, entities: Sequence[str]) -> list[str]:
        """Ids of the user's learnings that MENTION any of ``entities`` (the curator's scope)."""
        if not entities:
            return []
        rows = self.read(
            "MATCH (l:Learning)-[:MENTIONS]->(e:Entity) WHERE l.user_id = $user AND e.name IN $names "
            "RETURN DISTINCT l.id AS id",
            {"user": user_id, "names": list(entities)},
        )
        return [r["id"] for r in rows]

    def tool_counters(self, tool: str) -> tuple[int, int]:
        """(success_count, error_count) of a Tool; (0, 0) when the tool is unknown."""
        rows = self.read(
            "MATCH (t:Tool {name: $name}) RETURN t.success_count AS s, t.error_count AS e", {"name": tool}
        )
        if not rows:
            return 0, 0
        return int(rows[0]["s"] or 0), int(rows[0]["e"] or 0)


def judge_key(name: str, user_id: str | None) -> str:
    """The Judge node key of ``user_id``'s judge ``name`` (built-in judges: the bare name)."""
    return name if user_id is None else f"{user_id}|{name}"


__all__ = ["TraceStore", "judge_key"]
