"""Retrieval queries: full-text over learnings, graph neighbourhoods, names, Applications.

The retrieval pipeline (graphmem/retrieve/) ranks from the in-memory catalog and calls these for
the parts only the graph knows. Each method is one Kùzu round trip (or one write transaction), so
``Memory.context()`` stays at a handful of round trips. Full-text ranking on the hot path runs on
the in-memory lexical mirror (graphmem/store/lexical.py), never on Kùzu's FTS index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import kuzu

from graphmem.store.kuzu_store import KuzuBase, dumps, to_db_time

# Anchor kinds → (node label, edge from Learning to it).
ANCHOR_EDGES: dict[str, tuple[str, str]] = {
    "tool": ("Tool", "ABOUT_TOOL"),
    "entity": ("Entity", "MENTIONS"),
    "topic": ("Topic", "ABOUT_TOPIC"),
    "objective_type": ("ObjectiveType", "FOR_OBJECTIVE_TYPE"),
}
_LABEL_KIND = {"Entity": "entity", "Topic": "topic"}


def _arrow_rows(result: kuzu.QueryResult | list[kuzu.QueryResult]) -> dict[str, list[Any]]:
    """A query result as columns (Arrow is much faster than get_all for thousands of rows)."""
    if isinstance(result, list):
        result = result[-1]
    table = result.get_as_arrow(chunk_size=1_000_000)
    return {name: table.column(name).to_pylist() for name in table.column_names}


class RetrievalStore(KuzuBase):
    """The Cypher behind context assembly and search over learnings."""

    def _read_columns(self, cypher: str, params: Mapping[str, Any]) -> dict[str, list[Any]]:
        from graphmem.errors import StoreError

        try:
            return _arrow_rows(self.execute_read(cypher, params))
        except RuntimeError as e:
            raise StoreError(f"query failed: {e}") from e

    def fulltext_learnings(self, normalised_query: str, k: int) -> list[tuple[str, float]]:
        """BM25 matches of an already normalised query through Kùzu's FTS index (for analysts).

        Not on the hot path: Kùzu's statistics are global, each query costs 8-24 ms at 100k
        learnings, and in Kùzu 0.11.3 it aborts the process if it runs while another connection
        writes the Learning table. Returns up to ``k`` (learning id, score) pairs, best first, over all users: the caller
        filters with the catalog. An empty query returns nothing.
        """
        if not normalised_query.strip() or k <= 0:
            return []
        rows = self.read(
            "CALL QUERY_FTS_INDEX('Learning', 'learning_fts', $q, top := $k) "
            "RETURN node.id AS id, score ORDER BY score DESC",
            {"q": normalised_query, "k": int(k)},
        )
        return [(r["id"], float(r["score"])) for r in rows]

    def one_hop_learnings(
        self, anchors: Mapping[str, Sequence[str]], cap: int = 0, pool: Sequence[str] = ()
    ) -> list[tuple[str, str, str]]:
        """Learnings one edge away from the anchors: (learning id, anchor kind, anchor name).

        ``anchors`` maps "tool" | "entity" | "topic" | "objective_type" to node names. One query.
        With ``cap`` > 0, at most ``cap`` learnings come from any one anchor (a hub such as a
        busy tool would otherwise ship tens of thousands of rows), plus those of its learnings
        that are in ``pool`` (the ids other signals already found), so they still get the
        graph's support.
        """
        parts: list[str] = []
        params: dict[str, Any] = {"cap": int(cap) if cap > 0 else 2**62, "pool": list(pool)}
        for kind, names in anchors.items():
            if not names or kind not in ANCHOR_EDGES:
                continue
            label, edge = ANCHOR_EDGES[kind]
            params[kind] = list(names)
            parts.append(
                f"MATCH (l:Learning)-[:{edge}]->(n:{label}) WHERE n.name IN ${kind} "
                "WITH n, collect(l.id) AS ids, "
                "collect(CASE WHEN list_contains($pool, l.id) THEN l.id ELSE NULL END) AS hits "
                f"RETURN '{kind}' AS kind, n.name AS name, list_slice(ids, 1, $cap + 1) AS ids, hits"
            )
        if not parts:
            return []
        cols = self._read_columns(" UNION ALL ".join(parts), params)
        out: list[tuple[str, str, str]] = []
        for kind, name, ids, hits in zip(cols["kind"], cols["name"], cols["ids"], cols["hits"]):
            out.extend((ident, kind, name) for ident in dict.fromkeys([*(ids or []), *(hits or [])]))
        return out

    def related_neighbours(
        self, entities: Sequence[str], topics: Sequence[str], cap: int, user: str | None = None
    ) -> list[tuple[str, str, str, str, int]]:
        """The strongest RELATED neighbours of the anchor entities/topics, at most ``cap``.

        ``user``: only the co-occurrences that user's learnings counted (None: everyone's).
        Returns (neighbour kind, neighbour name, via kind, via name, weight), heaviest first.
        """
        if cap <= 0 or not (entities or topics):
            return []
        parts: list[str] = []
        params: dict[str, Any] = {}
        for kind, label, names in (("entity", "Entity", entities), ("topic", "Topic", topics)):
            if not names:
                continue
            params[kind] = list(names)
            if user is not None:
                params["user"] = user
            mine = " AND r.user_id = $user" if user is not None else ""
            parts.append(
                f"MATCH (a:{label})-[r:RELATED]-(n) WHERE a.name IN ${kind}{mine} "
                f"RETURN label(n) AS label, n.name AS name, '{kind}' AS via_kind, a.name AS via, r.weight AS w"
            )
        rows = self.read(" UNION ALL ".join(parts), params)
        rows.sort(key=lambda r: (-(r["w"] or 1), r["name"]))
        rows = rows[:cap]
        return [
            (_LABEL_KIND.get(r["label"], r["label"].lower()), r["name"], r["via_kind"], r["via"], int(r["w"] or 1))
            for r in rows
        ]

    def second_hop_learnings(self, neighbours: Sequence[tuple[str, str]], cap: int) -> list[tuple[str, str, str]]:
        """Learnings linked to each (kind, name) neighbour, at most ``cap`` from any one of them.

        Returns (learning id, neighbour kind, neighbour name). One query; the fan-out cap is
        applied per neighbour so a hub topic cannot flood the candidates.
        """
        if cap <= 0 or not neighbours:
            return []
        parts: list[str] = []
        params: dict[str, Any] = {"cap": int(cap)}
        for kind in ("entity", "topic"):
            names = sorted({n for k, n in neighbours if k == kind})
            if not names:
                continue
            label, edge = ANCHOR_EDGES[kind]
            params[kind] = names
            parts.append(
                f"MATCH (l:Learning)-[:{edge}]->(n:{label}) WHERE n.name IN ${kind} "
                f"WITH n, collect(l.id) AS ids RETURN '{kind}' AS kind, n.name AS name, list_slice(ids, 1, $cap + 1) AS ids"
            )
        if not parts:
            return []
        cols = self._read_columns(" UNION ALL ".join(parts), params)
        out: list[tuple[str, str, str]] = []
        for kind, name, ids in zip(cols["kind"], cols["name"], cols["ids"]):
            out.extend((ident, kind, name) for ident in (ids or [])[:cap])
        return out

    def node_names(self, label: str) -> list[str]:
        """Every name of one node table (Entity, Topic, Tool, ObjectiveType)."""
        if label not in ("Entity", "Topic", "Tool", "ObjectiveType"):
            raise ValueError(f"unknown label {label!r}")
        return [n for n in self._read_columns(f"MATCH (n:{label}) RETURN n.name AS name", {})["name"] if n]

    def count_nodes(self, label: str) -> int:
        """How many nodes one name table holds (cheap; used to refresh the name index)."""
        if label not in ("Entity", "Topic", "Tool", "ObjectiveType"):
            raise ValueError(f"unknown label {label!r}")
        return int(self.read(f"MATCH (n:{label}) RETURN count(n) AS n")[0]["n"])

    def record_application(
        self,
        *,
        application_id: str,
        user_id: str,
        query: str,
        tool: str | None,
        created_at: datetime,
        reasons: Sequence[str],
        shown: Iterable[tuple[str, int, float, Sequence[str]]],
        session_id: str | None = None,
    ) -> None:
        """Write an Application and APPLIED_IN edges (rank, score, reasons JSON) in one transaction.

        ``shown`` holds (learning id, rank from 1, score, reasons) for each learning handed out.
        """
        params: dict[str, Any] = {
            "id": application_id, "user": user_id, "query": query, "tool": tool,
            "ts": to_db_time(created_at), "reasons": dumps(list(reasons)), "sid": session_id,
        }
        matches, edges = [], []
        for i, (ident, rank, score, why) in enumerate(shown):
            matches.append(f"(l{i}:Learning {{id: $l{i}}})")
            edges.append(f"(l{i})-[:APPLIED_IN {{rank: $r{i}, score: $s{i}, reasons: $w{i}, confidence: l{i}.confidence}}]->(a)")
            params.update({f"l{i}": ident, f"r{i}": int(rank), f"s{i}": float(score), f"w{i}": dumps(list(why))})
        # One statement: a primary-key lookup per learning (an UNWIND would scan every learning,
        # and a statement per edge costs more than the edge).
        cypher = ("CREATE (a:Application {id: $id, user_id: $user, query: $query, tool: $tool, "
                  "created_at: $ts, reasons: $reasons, session_id: $sid})")
        if matches:
            cypher += f" WITH a MATCH {', '.join(matches)} CREATE {', '.join(edges)}"
        with self.transaction():
            self.write(cypher, params)

    def applied_learnings(self, application_id: str) -> list[dict[str, Any]]:
        """The learnings an Application showed: id, rank, score, reasons (JSON text), by rank."""
        return self.read(
            "MATCH (l:Learning)-[r:APPLIED_IN]->(a:Application {id: $id}) "
            "RETURN l.id AS id, r.rank AS rank, r.score AS score, r.reasons AS reasons ORDER BY r.rank",
            {"id": application_id},
        )

    def bulk_insert_related(
        self, pairs: Sequence[tuple[str, str, str, str, int]], user_id: str | None = None
    ) -> None:
        """Add new RELATED edges in bulk: (from label, from name, to label, to name, weight),
        counted for ``user_id`` (the owner of the learnings they come from).

        For benchmarks and imports that bypass the per-learning writes (those count
        co-occurrence themselves). Labels are Entity or Topic; the endpoint nodes must exist and
        the edges must not (one COPY from a pyarrow table per label pair).
        """
        import pyarrow as pa

        from graphmem.errors import InvalidInputError, StoreError

        groups: dict[tuple[str, str], list[tuple[str, str, int]]] = {}
        for la, a, lb, b, w in pairs:
            if la not in _LABEL_KIND or lb not in _LABEL_KIND:
                raise InvalidInputError(f"RELATED links Entity and Topic nodes, not {la}/{lb}")
            groups.setdefault((la, lb), []).append((a, b, int(w)))
        with self.exclusive():
            for (la, lb), edges in groups.items():
                bulk_table = pa.table({  # noqa: F841 -- read by name in the COPY statement
                    "from": [a for a, _, _ in edges],
                    "to": [b for _, b, _ in edges],
                    "weight": pa.array([w for _, _, w in edges], type=pa.int64()),
                    "user_id": pa.array([user_id] * len(edges), type=pa.string()),
                })
                try:
                    self._conn_main.execute(f"COPY RELATED FROM bulk_table (from='{la}', to='{lb}')")
                except RuntimeError as e:
                    raise StoreError(f"bulk RELATED import failed: {e}") from e
