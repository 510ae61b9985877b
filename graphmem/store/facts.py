"""Fact validity: the fact key and the valid-from / valid-to times of fact learnings."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from graphmem.store.kuzu_store import KuzuBase, from_db_time, to_db_time


class FactStore(KuzuBase):
    """The ``fact_key``, ``valid_from`` and ``valid_to`` columns of Learning (schema 006)."""

    def set_fact(self, learning_id: str, fact_key: str, valid_from: datetime) -> None:
        """Mark a learning as stating the fact ``fact_key``, true since ``valid_from``."""
        self.write(
            "MATCH (l:Learning {id: $id}) SET l.fact_key = $k, l.valid_from = $f",
            {"id": learning_id, "k": fact_key, "f": to_db_time(valid_from)},
        )

    def end_fact(self, learning_id: str, valid_to: datetime) -> None:
        """The fact a learning states stopped being true at ``valid_to``."""
        self.write("MATCH (l:Learning {id: $id}) SET l.valid_to = $t", {"id": learning_id, "t": to_db_time(valid_to)})

    def current_fact(self, user_id: str, fact_key: str) -> str | None:
        """Id of this user's learning that currently states ``fact_key`` (valid_to unset), if any."""
        rows = self.read(
            "MATCH (l:Learning) WHERE l.user_id = $user AND l.fact_key = $k AND l.valid_to IS NULL "
            "AND l.superseded_by IS NULL RETURN l.id AS id ORDER BY l.valid_from DESC LIMIT 1",
            {"user": user_id, "k": fact_key},
        )
        return str(rows[0]["id"]) if rows else None

    def fact_rows(self, user_id: str, key_prefix: str | None = None) -> list[dict[str, Any]]:
        """This user's fact learnings (current and past): id, fact_key, valid_from, valid_to; by key, then time."""
        where = "l.user_id = $user AND l.fact_key IS NOT NULL"
        params: dict[str, Any] = {"user": user_id}
        if key_prefix is not None:
            where += " AND starts_with(l.fact_key, $prefix)"
            params["prefix"] = key_prefix
        rows = self.read(
            f"MATCH (l:Learning) WHERE {where} RETURN l.id AS id, l.fact_key AS fact_key, "
            "l.valid_from AS valid_from, l.valid_to AS valid_to ORDER BY l.fact_key, l.valid_from",
            params,
        )
        return [{**r, "valid_from": from_db_time(r["valid_from"]), "valid_to": from_db_time(r["valid_to"])}
                for r in rows]
