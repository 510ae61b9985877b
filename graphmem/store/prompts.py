"""Prompt versions and their A/B serves: the Cypher behind :mod:`graphmem.prompts`.

A prompt version is a Learning of kind ``prompt`` with three extra columns (schema 008):
``prompt_role``, ``prompt_version`` and ``prompt_state`` (active | candidate | deprecated).
Each serve is a ``SERVED_IN`` edge from the version to the context (Application) it was served
in, carrying the A/B arm, the session and, once an outcome arrives, the verdict credited.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from graphmem.store.kuzu_store import KuzuBase, from_db_time, to_db_time


class PromptStore(KuzuBase):
    """Prompt-version columns, SERVED_IN edges and the per-arm outcome counts."""

    def set_prompt_fields(self, learning_id: str, *, role: str | None = None, version: int | None = None,
                          state: str | None = None) -> None:
        """Set the prompt columns given (None: leave that column as it is)."""
        sets: list[str] = []
        params: dict[str, Any] = {"id": learning_id}
        for name, value in (("prompt_role", role), ("prompt_version", version), ("prompt_state", state)):
            if value is not None:
                sets.append(f"l.{name} = ${name}")
                params[name] = value
        if sets:
            self.write(f"MATCH (l:Learning {{id: $id}}) SET {', '.join(sets)}", params)

    def prompt_rows(self, user_id: str, role: str | None = None) -> list[dict[str, Any]]:
        """The user's prompt versions (id, role, version, state), by role then version."""
        where = "l.user_id = $u AND l.kind = 'prompt' AND l.prompt_role IS NOT NULL"
        params: dict[str, Any] = {"u": user_id}
        if role is not None:
            where += " AND l.prompt_role = $role"
            params["role"] = role
        return self.read(
            f"MATCH (l:Learning) WHERE {where} RETURN l.id AS id, l.prompt_role AS role, "
            "l.prompt_version AS version, l.prompt_state AS state ORDER BY role, version",
            params,
        )

    def create_prompt_application(self, application_id: str, user_id: str, role: str, at: datetime) -> None:
        """A context (Application) of its own for a prompt served without one."""
        self.write(
            "CREATE (:Application {id: $id, user_id: $u, query: $q, created_at: $ts, reasons: $r})",
            {"id": application_id, "u": user_id, "q": f"prompt:{role}", "ts": to_db_time(at),
             "r": '["prompt served"]'},
        )

    def link_served(self, learning_id: str, application_id: str, *, role: str, arm: str,
                    session_id: str | None, at: datetime) -> None:
        """version-[:SERVED_IN]->context (one edge per pair)."""
        self.write(
            "MATCH (l:Learning {id: $l}), (a:Application {id: $a}) MERGE (l)-[s:SERVED_IN]->(a) "
            "ON CREATE SET s.role = $role, s.arm = $arm, s.session_id = $sid, s.created_at = $ts",
            {"l": learning_id, "a": application_id, "role": role, "arm": arm, "sid": session_id,
             "ts": to_db_time(at)},
        )

    def uncredited_serves(self, application_id: str) -> list[str]:
        """Ids of the prompt versions served in this context that no outcome credited yet."""
        rows = self.read(
            "MATCH (l:Learning)-[s:SERVED_IN]->(a:Application {id: $a}) WHERE s.verdict IS NULL RETURN l.id AS id",
            {"a": application_id},
        )
        return [r["id"] for r in rows]

    def set_serve_verdict(self, learning_id: str, application_id: str, verdict: str) -> None:
        """Record the verdict credited to one serve."""
        self.write(
            "MATCH (l:Learning {id: $l})-[s:SERVED_IN]->(a:Application {id: $a}) SET s.verdict = $v",
            {"l": learning_id, "a": application_id, "v": verdict},
        )

    def serve_counts(self, learning_ids: Sequence[str], since: datetime | None = None) -> dict[str, dict[str, int]]:
        """Per version: serves and outcomes ``{"served", "accepted", "rejected", "neutral"}``,
        counting only serves at or after ``since`` when given."""
        out = {i: {"served": 0, "accepted": 0, "rejected": 0, "neutral": 0} for i in learning_ids}
        if not learning_ids:
            return out
        where = "l.id IN $ids" + (" AND s.created_at >= $since" if since is not None else "")
        params: dict[str, Any] = {"ids": list(learning_ids)}
        if since is not None:
            params["since"] = to_db_time(since)
        for r in self.read(
            f"MATCH (l:Learning)-[s:SERVED_IN]->(:Application) WHERE {where} "
            "RETURN l.id AS id, s.verdict AS v, count(*) AS n", params,
        ):
            counts = out[r["id"]]
            counts["served"] += int(r["n"])
            if r["v"] in counts:
                counts[r["v"]] += int(r["n"])
        return out

    def serves_of(self, application_id: str) -> list[dict[str, Any]]:
        """The prompt serves of one context: learning id, role, arm, session, verdict, time."""
        rows = self.read(
            "MATCH (l:Learning)-[s:SERVED_IN]->(a:Application {id: $a}) RETURN l.id AS id, s.role AS role, "
            "s.arm AS arm, s.session_id AS session_id, s.verdict AS verdict, s.created_at AS created_at",
            {"a": application_id},
        )
        return [{**r, "created_at": from_db_time(r["created_at"])} for r in rows]
