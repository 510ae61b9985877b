"""Forgetting: hard deletes of one user's memory, or of one learning, with all their edges.

Everything here runs in one write transaction (all or nothing) and then rebuilds the in-memory
mirrors (learning and event catalogs, anchors and co-occurrence counts, cached rows and summary
texts) from the file, so nothing of what was forgotten survives in memory either.

What belongs to a user: their Learning, Event, Objective, Summary, Application, Pattern, Trace,
Reflection and Judge nodes (``user_id``), the Verdicts of their Traces, the Transitions of their
learnings, and the RELATED co-occurrence counts their learnings made (``RELATED.user_id``).
Tool, Topic, Entity and ObjectiveType nodes that one of those rows linked are deleted too when
nothing else links them any more, so a name only this user wrote (an entity "Dana") does not
survive; a name another user also uses stays (as does a Tool's aggregate success/error count).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphmem.store.kuzu_store import KuzuBase

# Node tables with a user_id column, deleted with every edge they have.
_OWNED = ("Learning", "Event", "Objective", "Summary", "Application", "Pattern", "Trace", "Reflection", "Judge",
          "TuningSnapshot", "TunedSettings", "Domain", "DomainSnapshot", "DomainEvent", "DomainGap",
          "FusionWeights")
# The edges that make a name node "used"; a candidate with none of them left is an orphan.
_NAME_USES: dict[str, tuple[str, ...]] = {
    "Tool": ("ABOUT_TOOL", "USED_TOOL"),
    "Topic": ("ABOUT_TOPIC",),
    "Entity": ("MENTIONS",),
    "ObjectiveType": ("FOR_OBJECTIVE_TYPE",),
}
_LINKERS: dict[str, str] = {  # name table -> pattern from the user's rows that reach it
    "Tool": "MATCH (x)-[:ABOUT_TOOL|USED_TOOL]->(n:Tool) WHERE x.id IN $ids",
    "Topic": "MATCH (x:Learning)-[:ABOUT_TOPIC]->(n:Topic) WHERE x.id IN $ids",
    "Entity": "MATCH (x)-[:MENTIONS]->(n:Entity) WHERE x.id IN $ids",
    "ObjectiveType": "MATCH (x)-[:FOR_OBJECTIVE_TYPE]->(n:ObjectiveType) WHERE x.id IN $ids",
}


class ForgetStore(KuzuBase):
    """Hard deletes for privacy: :meth:`forget_user` and :meth:`forget_learnings`."""

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Delete everything ``user_id`` owns (see the module docstring); returns counts per table."""
        counts: dict[str, int] = {}
        with self.transaction():
            ids: dict[str, list[str]] = {
                label: [r["id"] for r in self.read(f"MATCH (n:{label}) WHERE n.user_id = $u RETURN n.name AS id"
                                                     if label == "Judge" else
                                                     f"MATCH (n:{label}) WHERE n.user_id = $u RETURN n.id AS id",
                                                     {"u": user_id})]
                for label in _OWNED
            }
            self._summaries_touched()  # the user's Summary nodes go
            linked = self._linked_names(ids["Learning"] + ids["Event"] + ids["Objective"])
            counts["RELATED"] = self._count_delete(
                "MATCH ()-[r:RELATED]->() WHERE r.user_id = $u", "r", {"u": user_id}
            )
            counts["Verdict"] = self._count_delete(
                "MATCH (t:Trace)-[:JUDGED]->(v:Verdict) WHERE t.id IN $ids", "v", {"ids": ids["Trace"]}, detach=True
            )
            counts["Transition"] = self._count_delete(
                "MATCH (t:Transition) WHERE t.learning_id IN $ids", "t", {"ids": ids["Learning"]}, detach=True
            )
            self._unlink_foreign_summaries(ids["Learning"], user_id)
            self._scrub_references(ids["Learning"])
            for label in _OWNED:
                key = "name" if label == "Judge" else "id"
                counts[label] = self._count_delete(
                    f"MATCH (n:{label}) WHERE n.{key} IN $ids", "n", {"ids": ids[label]}, detach=True
                )
            counts.update(self._delete_orphans(linked))
            self.on_commit(self._after_forget)  # mirrors rebuilt before any reader runs again
        return counts

    def forget_learnings(self, learning_ids: Sequence[str]) -> dict[str, int]:
        """Delete these learnings, their edges and Transitions, their co-occurrence counts, and
        name nodes only they linked; one transaction. Returns counts per table."""
        ids = list(dict.fromkeys(learning_ids))
        counts: dict[str, int] = {}
        with self.transaction():
            rows = self.read(
                "MATCH (l:Learning) WHERE l.id IN $ids RETURN l.id AS id, l.user_id AS user", {"ids": ids}
            )
            linked = self._linked_names([r["id"] for r in rows])
            for row in rows:
                self._recount_related(row["user"], self._pairs_of(row["id"]), ids)
            counts["Transition"] = self._count_delete(
                "MATCH (t:Transition) WHERE t.learning_id IN $ids", "t", {"ids": ids}, detach=True
            )
            self._unlink_foreign_summaries([r["id"] for r in rows], None)
            self._scrub_references(ids)
            counts["Learning"] = self._count_delete(
                "MATCH (n:Learning) WHERE n.id IN $ids", "n", {"ids": ids}, detach=True
            )
            counts.update(self._delete_orphans(linked))
            self.on_commit(self._after_forget)  # mirrors rebuilt before any reader runs again
        return counts

    def _summaries_touched(self) -> None:
        """Summary nodes change: the summary states known without a read are dropped
        (:meth:`graphmem.store.summaries.SummaryStore.summaries_touched`)."""
        touched = getattr(self, "summaries_touched", None)
        if touched is not None:
            touched()

    def user_stats(self, user_id: str) -> dict[str, int]:
        """Like :meth:`stats`, for what ``user_id`` owns: their nodes per table (Verdicts of
        their traces, Transitions of their learnings) and, per edge type, the edges leaving
        their nodes (RELATED: the co-occurrences their learnings counted)."""
        out: dict[str, int] = {}
        for label in _OWNED:
            out[label] = int(self.read(f"MATCH (n:{label}) WHERE n.user_id = $u RETURN count(n) AS n", {"u": user_id})[0]["n"])
        out["Verdict"] = int(self.read(
            "MATCH (t:Trace)-[:JUDGED]->(v:Verdict) WHERE t.user_id = $u RETURN count(v) AS n", {"u": user_id})[0]["n"])
        out["Transition"] = int(self.read(
            "MATCH (l:Learning)-[:HAS_TRANSITION]->(t:Transition) WHERE l.user_id = $u RETURN count(t) AS n",
            {"u": user_id})[0]["n"])
        for name in [t["name"] for t in self.read("CALL show_tables() RETURN name, type") if t["type"] == "REL"]:
            where = "r.user_id = $u" if name == "RELATED" else "a.user_id = $u"
            if name == "RELATED":
                query = f"MATCH ()-[r:{name}]->() WHERE {where} RETURN count(r) AS n"
            elif name == "EVALUATED_BY":
                query = "MATCH (t:Trace)-[:JUDGED]->(:Verdict)-[r:EVALUATED_BY]->() WHERE t.user_id = $u RETURN count(r) AS n"
            else:
                query = f"MATCH (a)-[r:{name}]->() WHERE {where} RETURN count(r) AS n"
            out[name] = int(self.read(query, {"u": user_id})[0]["n"])
        return out

    # --- helpers (inside the transaction) ---------------------------------------------------
    def _count_delete(self, match: str, var: str, params: dict[str, Any], *, detach: bool = False) -> int:
        if any(isinstance(v, list) and not v for v in params.values()):
            return 0
        n = int(self.read(f"{match} RETURN count({var}) AS n", params)[0]["n"])
        if n:
            self.write(f"{match} {'DETACH ' if detach else ''}DELETE {var}", params)
        return n

    def _linked_names(self, ids: list[str]) -> dict[str, list[str]]:
        """Name nodes (Tool/Topic/Entity/ObjectiveType) these rows link, by table."""
        if not ids:
            return {}
        return {
            label: sorted({r["name"] for r in self.read(f"{query} RETURN DISTINCT n.name AS name", {"ids": ids})})
            for label, query in _LINKERS.items()
        }

    def _delete_orphans(self, linked: dict[str, list[str]]) -> dict[str, int]:
        """Delete the candidate name nodes nothing links any more (with their RELATED edges)."""
        out: dict[str, int] = {}
        for label, names in linked.items():
            if not names:
                continue
            uses = " AND ".join(f"NOT EXISTS {{ MATCH (n)<-[:{rel}]-() }}" for rel in _NAME_USES[label])
            out[label] = self._count_delete(
                f"MATCH (n:{label}) WHERE n.name IN $names AND {uses}", "n", {"names": names}, detach=True
            )
        return out

    def _pairs_of(self, learning_id: str) -> list[tuple[str, str, str, str]]:
        """The (label, name, label, name) co-occurrence pairs one learning's edges form."""
        row = self.read(
            "MATCH (l:Learning {id: $id}) "
            "OPTIONAL MATCH (l)-[:ABOUT_TOPIC]->(t:Topic) WITH l, collect(t.name) AS topics "
            "OPTIONAL MATCH (l)-[:MENTIONS]->(e:Entity) RETURN topics, collect(e.name) AS entities",
            {"id": learning_id},
        )
        if not row:
            return []
        names = [("Topic", t) for t in row[0]["topics"] or []] + [("Entity", e) for e in row[0]["entities"] or []]
        return [(ka, a, kb, b) for i, (ka, a) in enumerate(names) for kb, b in names[i + 1 :] if a != b or ka != kb]

    def _recount_related(self, user_id: str, pairs: list[tuple[str, str, str, str]], gone: list[str]) -> None:
        """Recount the owner's RELATED edges of these pairs from their learnings still linking
        both ends (``gone`` left out); an edge whose count reaches zero is deleted."""
        edge = {"Topic": "ABOUT_TOPIC", "Entity": "MENTIONS"}
        for ka, a, kb, b in dict.fromkeys(pairs):
            n = int(self.read(
                f"MATCH (l:Learning)-[:{edge[ka]}]->(x:{ka} {{name: $a}}), (l)-[:{edge[kb]}]->(y:{kb} {{name: $b}}) "
                "WHERE l.user_id = $u AND NOT list_contains($gone, l.id) RETURN count(DISTINCT l) AS n",
                {"a": a, "b": b, "u": user_id, "gone": gone},
            )[0]["n"])
            for (la, na), (lb, nb) in (((ka, a), (kb, b)), ((kb, b), (ka, a))):
                self.write(
                    f"MATCH (x:{la} {{name: $a}})-[r:RELATED]->(y:{lb} {{name: $b}}) WHERE r.user_id = $u DELETE r",
                    {"a": na, "b": nb, "u": user_id},
                )
            if n:
                self.write(
                    f"MATCH (x:{ka} {{name: $a}}), (y:{kb} {{name: $b}}) "
                    "CREATE (x)-[:RELATED {weight: $w, user_id: $u}]->(y)",
                    {"a": a, "b": b, "u": user_id, "w": n},
                )

    def _unlink_foreign_summaries(self, learning_ids: list[str], user_id: str | None) -> None:
        """A summary that covered a forgotten learning (any but ``user_id``'s, which are deleted)
        is emptied and made due, so its text (which may quote the learning) is rebuilt without
        it at the next refresh."""
        if not learning_ids:
            return
        self._summaries_touched()
        self.write(
            "MATCH (l:Learning)-[:SUMMARIZED_IN]->(s:Summary) WHERE l.id IN $ids AND s.user_id <> $u "
            "SET s.text = '', s.staleness = s.threshold, s.embedding = $zero",
            {"ids": learning_ids, "u": user_id if user_id is not None else "\x00", "zero": [0.0] * self.dim},
        )
        gone = set(learning_ids)
        for row in self.read("MATCH (s:Summary) WHERE size(s.pending) > 0 RETURN s.id AS id, s.pending AS pending"):
            pending = list(row["pending"] or [])
            if gone.intersection(pending):
                self.write(
                    "MATCH (s:Summary {id: $id}) SET s.pending = CAST($pending AS STRING[])",
                    {"id": row["id"], "pending": [p for p in pending if p not in gone]},
                )

    def _scrub_references(self, learning_ids: list[str]) -> None:
        """Remaining learnings superseded by a forgotten one keep their archive tier but lose the
        id (``superseded_by``), and their Transition reasons stop naming it."""
        if not learning_ids:
            return
        self.write(
            "MATCH (l:Learning) WHERE l.superseded_by IN $ids AND NOT l.id IN $ids SET l.superseded_by = NULL",
            {"ids": learning_ids},
        )
        for ident in learning_ids:
            for row in self.read(
                "MATCH (t:Transition) WHERE contains(t.reason, $id) RETURN t.id AS id, t.reason AS reason", {"id": ident}
            ):
                self.write(
                    "MATCH (t:Transition {id: $tid}) SET t.reason = $reason",
                    {"tid": row["id"], "reason": row["reason"].replace(ident, "a forgotten learning")},
                )

    def _after_forget(self) -> None:
        """Rebuild every in-memory mirror from the file (after the commit)."""
        self.forgotten = getattr(self, "forgotten", 0) + 1  # name indexes reload on this
        search_cache = getattr(self, "_search_cache_dict", None)
        if search_cache:
            search_cache.clear()  # event layouts of the search (ids, sessions)
        reload = getattr(self, "reload_catalogs", None)
        if reload is not None:
            reload()


__all__ = ["ForgetStore"]
