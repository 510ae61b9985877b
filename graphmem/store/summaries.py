"""Summary nodes (seed 001, issue 5): staleness counters, pending changes, SUMMARIZED_IN edges.

The policy (which learning feeds which summary, thresholds, when to refresh) lives in
:mod:`graphmem.summaries`; this mixin only runs the queries. A Summary's id is
``user_id + '|' + key``. ``pending`` (schema 004) holds the ids of the learnings written since the
last refresh, so an incremental refresh reads those rows by primary key and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from graphmem.models import Learning, Summary
from graphmem.store.kuzu_store import KuzuBase, from_db_time, to_db_time
from graphmem.store.learnings import _RETURN, learning_from_row
from graphmem.store.vector_math import db_floats

_SUMMARY_RETURN = (
    "s.id AS id, s.key AS key, s.user_id AS user_id, s.kind AS kind, s.text AS text, "
    "s.staleness AS staleness, s.threshold AS threshold, s.refreshed_at AS refreshed_at, "
    "s.pending AS pending"
)

_BRIEF = (
    "id", "user_id", "kind", "content", "recommendation", "sentiment", "status", "tier", "superseded_by",
    "tool", "objective_type", "topics", "updated_at", "source_type", "confidence",
)
_BRIEF_RETURN = ", ".join(f"l.{p} AS {p}" for p in _BRIEF)

# How a summary's kind scopes the learnings it covers (user_preferences: every learning of the user).
_SCOPE = {
    "user_preferences": "",
    "tool": "-[:ABOUT_TOOL]->(:Tool {name: $name})",
    "topic": "-[:ABOUT_TOPIC]->(:Topic {name: $name})",
    "objective_type": "-[:FOR_OBJECTIVE_TYPE]->(:ObjectiveType {name: $name})",
}
_ELIGIBLE = (
    "l.user_id = $user AND l.kind IN $kinds AND l.status IN $statuses "
    "AND l.tier <> 'archive' AND l.superseded_by IS NULL"
)


@dataclass(frozen=True)
class SummaryFeed:
    """One summary a learning feeds (or fed): where to count the change."""

    id: str
    key: str
    user_id: str
    kind: str
    threshold: int


@dataclass(frozen=True)
class SummaryRefresh:
    """One summary's refreshed text for :meth:`SummaryStore.save_summary_refreshes` (``embedding``
    None: the text did not change, the stored embedding is kept)."""

    user_id: str
    key: str
    text: str
    embedding: Any
    consumed_staleness: int
    consumed_ids: Sequence[str]


@dataclass
class SummaryState:
    """A summary with its pending (changed since refresh) learning ids."""

    summary: Summary
    pending: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        """The node's primary key."""
        return summary_id(self.summary.user_id, self.summary.key)


def summary_id(user_id: str, key: str) -> str:
    """The primary key of a user's summary."""
    return f"{user_id}|{key}"


def _state_from_row(row: Mapping[str, Any]) -> SummaryState:
    summary = Summary(
        key=row["key"],
        user_id=row["user_id"],
        kind=row["kind"] or "user_preferences",
        text=row["text"] or "",
        staleness=int(row["staleness"] or 0),
        threshold=int(row["threshold"] or 0),
        refreshed_at=from_db_time(row["refreshed_at"]),
    )
    return SummaryState(summary, list(row["pending"] or []))


_Noted = tuple[int, dict[str, SummaryState] | None]
"""A transaction's serial and the summary states its statements returned (None: not usable)."""


def _due(state: SummaryState) -> bool:
    """:meth:`SummaryStore.summary_states`' ``due_only`` condition, on a known state."""
    s = state.summary
    return s.staleness > 0 and (s.staleness >= s.threshold or (s.key == "user_preferences" and s.refreshed_at is None))


def _params(**params: Any) -> dict[str, Any]:
    """Query parameters without ``name`` when it is None (Kùzu refuses unused parameters)."""
    if params.get("name") is None:
        params.pop("name", None)
    return params


class SummaryStore(KuzuBase):
    """Queries over Summary nodes and their SUMMARIZED_IN edges.

    The states a write transaction's bumps (and a refresh's save) return are kept after its
    commit, tagged with the store's ``generation``: while no other write has committed since,
    they are what the file holds, so the inline refresh that follows reads nothing again
    (:meth:`summary_states` and :meth:`save_summary_refreshes`). Only for a local Kùzu file,
    which one process owns (a Bolt engine may have other writers).
    """

    _summary_tx_states: _Noted  # the open transaction's noted states
    _summary_states_known: tuple[int, dict[str, SummaryState]] | None  # (generation, states by id)

    def _note_summary_states(self, states: Sequence[SummaryState]) -> None:
        """Inside a write transaction: remember the summaries' states after a statement that
        returned them (kept once the transaction commits)."""
        if not self.in_transaction() or not self.can_copy():  # type: ignore[attr-defined]
            return
        serial = self._tx_serial
        noted: _Noted | None = self.__dict__.get("_summary_tx_states")
        if noted is None or noted[0] != serial:
            noted = (serial, {})
            self._summary_tx_states = noted
            self.on_commit(self._publish_summary_states)
        if noted[1] is not None:
            noted[1].update((st.id, st) for st in states)

    def _publish_summary_states(self) -> None:
        """After the commit: the noted states become the known ones (with those known before, when
        no other write committed in between)."""
        noted = self.__dict__.pop("_summary_tx_states", None)
        known = self.__dict__.get("_summary_states_known")
        if noted is None or noted[1] is None:
            self._summary_states_known = None
            return
        states = dict(known[1]) if known is not None and known[0] == self.generation - 1 else {}
        states.update(noted[1])
        self._summary_states_known = (self.generation, states)

    def summaries_touched(self) -> None:
        """Summary nodes were written other than through the bump and refresh methods: forget the
        known states (and those of the open transaction)."""
        self._summary_states_known = None
        if self.in_transaction():
            poisoned: _Noted = (self._tx_serial, None)
            self._summary_tx_states = poisoned

    def _known_summary_states(self, ids: Sequence[str]) -> dict[str, SummaryState] | None:
        """The states of ``ids`` as the file holds them, when known without a read (see the class)."""
        known = self.__dict__.get("_summary_states_known")
        if known is None or known[0] != self.generation or not self.can_copy():  # type: ignore[attr-defined]
            return None
        if self.in_transaction():
            noted = self.__dict__.get("_summary_tx_states")
            if noted is not None and noted[0] == self._tx_serial:  # this transaction changed some already
                return None
        states = known[1]
        if any(i not in states for i in ids):
            return None
        return {i: SummaryState(states[i].summary.model_copy(), list(states[i].pending)) for i in ids}

    def bump_summaries(
        self, learning_id: str, feeds: Sequence[SummaryFeed], *, link: Sequence[str] = (), unlink: Sequence[str] = ()
    ) -> list[SummaryState]:
        """Count one change of ``learning_id`` on each summary in ``feeds`` (staleness + 1).

        Creates missing Summary nodes (staleness 1) and adds the learning to their ``pending``
        list; creates SUMMARIZED_IN edges to the summary ids in ``link`` (which must not be linked
        yet) and deletes those to ``unlink``. Never scans a summary's edges, so the cost does not
        grow with what the summary covers. Runs inside the caller's transaction when there is one.
        """
        if not feeds:
            return []
        rows = [{"id": f.id, "key": f.key, "user": f.user_id, "kind": f.kind, "threshold": int(f.threshold)} for f in feeds]
        bump = (
            "UNWIND $rows AS r "
            "MERGE (s:Summary {id: r.id}) ON CREATE SET s.key = r.key, s.user_id = r.user, s.kind = r.kind, "
            "s.text = '', s.staleness = 0, s.pending = CAST([] AS STRING[]) "
            "SET s.staleness = s.staleness + 1, s.threshold = r.threshold, "
            "s.pending = CASE WHEN list_contains(s.pending, $lid) THEN s.pending ELSE list_append(s.pending, $lid) END "
        )
        if (link and not unlink and set(link) == {f.id for f in feeds} and len(link) == len(feeds)
                and self._rel_seeded("SUMMARIZED_IN", "Learning", "Summary")):  # type: ignore[attr-defined]
            # a new learning (every summary it feeds gets its edge): counts and edges in one statement,
            # joined to the learning's own CREATE when that was held for it (store/held.py)
            created = self._take_held(f"learning:{learning_id}")  # type: ignore[attr-defined]
            if created is not None:
                cypher, params = created
                joined = bump.replace("$rows", "$summary_rows").replace("$lid", "$id")
                out = self.write(
                    f"{cypher} WITH l {joined}CREATE (l)-[:SUMMARIZED_IN]->(s) RETURN {_SUMMARY_RETURN}",
                    {**params, "summary_rows": rows},
                )
            else:
                out = self.write(
                    bump + f"WITH s MATCH (l:Learning {{id: $lid}}) CREATE (l)-[:SUMMARIZED_IN]->(s) RETURN {_SUMMARY_RETURN}",
                    {"lid": learning_id, "rows": rows},
                )
            states = [_state_from_row(r) for r in out]
            self._note_summary_states(states)
            return states
        out = self.write(bump + f"RETURN {_SUMMARY_RETURN}", {"lid": learning_id, "rows": rows})
        states = [_state_from_row(r) for r in out]
        self._note_summary_states(states)
        if link and self.can_copy() and not self._rel_seeded("SUMMARIZED_IN", "Learning", "Summary"):  # type: ignore[attr-defined]
            # the first edges by COPY (a table whose first edges are CREATEd takes ~1-4 MB more)
            self._new_edges("SUMMARIZED_IN", ("Learning", "id"), ("Summary", "id"),  # type: ignore[attr-defined]
                            [(learning_id, sid) for sid in link])
        elif link:
            self.write(
                "MATCH (l:Learning {id: $lid}) UNWIND $ids AS sid MATCH (s:Summary {id: sid}) "
                "CREATE (l)-[:SUMMARIZED_IN]->(s)",
                {"lid": learning_id, "ids": list(link)},
            )
        if unlink:
            self.write(
                "MATCH (l:Learning {id: $lid})-[e:SUMMARIZED_IN]->(s:Summary) WHERE s.id IN $ids DELETE e",
                {"lid": learning_id, "ids": list(unlink)},
            )
        return states

    def bump_summaries_created(self, entries: Sequence[tuple[str, Sequence[SummaryFeed]]]) -> list[SummaryState]:
        """``bump_summaries`` for a batch of new learnings (id, feeds) at once: the same counts,
        pending lists (in the order given) and SUMMARIZED_IN edges, in two statements (the edges
        by COPY) instead of two per learning. Returns every touched summary's state after the batch.
        """
        if not self.can_copy():  # type: ignore[attr-defined]  # a Bolt engine: one at a time
            states: dict[str, SummaryState] = {}
            for lid, feeds in entries:
                for st in self.bump_summaries(lid, feeds, link=[f.id for f in feeds]):
                    states[st.id] = st
            return list(states.values())
        rows: dict[str, dict[str, Any]] = {}
        edges: list[tuple[str, str]] = []
        for lid, feeds in entries:
            for f in feeds:
                row = rows.setdefault(f.id, {"id": f.id, "key": f.key, "user": f.user_id, "kind": f.kind, "k": 0, "lids": []})
                row["threshold"] = int(f.threshold)
                row["k"] += 1
                if lid not in row["lids"]:
                    row["lids"].append(lid)
                edges.append((lid, f.id))
        if not rows:
            return []
        out = self.write(
            "UNWIND $rows AS r "
            "MERGE (s:Summary {id: r.id}) ON CREATE SET s.key = r.key, s.user_id = r.user, s.kind = r.kind, "
            "s.text = '', s.staleness = 0, s.pending = CAST([] AS STRING[]) "
            "SET s.staleness = s.staleness + r.k, s.threshold = r.threshold, s.pending = list_concat(s.pending, r.lids) "
            f"RETURN {_SUMMARY_RETURN}",
            {"rows": list(rows.values())},
        )
        self._new_edges("SUMMARIZED_IN", ("Learning", "id"), ("Summary", "id"), edges)  # type: ignore[attr-defined]
        bumped = [_state_from_row(r) for r in out]
        self._note_summary_states(bumped)
        return bumped

    def summary_inputs(self, ids: Sequence[str]) -> list[Learning]:
        """Learnings by id with only the fields summaries read (one primary-key lookup each).

        Other fields keep the model's defaults: use these for summarizing, never for saving.
        """
        out = []
        cache: dict[str, Learning] = {} if self._tx_depth else getattr(self, "_learning_cache", {})
        for ident in ids:
            cached = cache.get(ident)  # rows written by this process since open: no round trip
            if cached is not None:
                out.append(cached.model_copy(update={"topics": list(cached.topics), "entities": list(cached.entities)}))
                continue
            rows = self.read(f"MATCH (l:Learning {{id: $id}}) RETURN {_BRIEF_RETURN}", {"id": ident})
            if rows:
                data = dict(rows[0])
                data["updated_at"] = from_db_time(data["updated_at"])
                data["topics"] = list(data["topics"] or [])
                out.append(Learning.model_validate({k: v for k, v in data.items() if v is not None or k == "superseded_by"}))
        return out

    def linked_summaries(self, learning_id: str) -> list[SummaryFeed]:
        """The summaries ``learning_id`` is SUMMARIZED_IN now."""
        rows = self.read(
            "MATCH (l:Learning {id: $lid})-[:SUMMARIZED_IN]->(s:Summary) "
            "RETURN s.id AS id, s.key AS key, s.user_id AS user_id, s.kind AS kind, s.threshold AS threshold",
            {"lid": learning_id},
        )
        return [SummaryFeed(r["id"], r["key"], r["user_id"], r["kind"], int(r["threshold"] or 0)) for r in rows]

    def get_summary_state(self, user_id: str, key: str) -> SummaryState | None:
        """One summary by user and key, None if it does not exist yet."""
        rows = self.read(f"MATCH (s:Summary {{id: $id}}) RETURN {_SUMMARY_RETURN}", {"id": summary_id(user_id, key)})
        return _state_from_row(rows[0]) if rows else None

    def summary_states(self, user_id: str | None = None, *, due_only: bool = False, ids: Sequence[str] | None = None) -> list[SummaryState]:
        """Summaries of one user (or all), optionally only those at/over threshold or by id."""
        known = self._known_summary_states(ids) if ids is not None else None
        if known is not None:  # what the last write's bumps returned, and nothing committed since
            return sorted((st for st in known.values()
                           if (user_id is None or st.summary.user_id == user_id) and (not due_only or _due(st))),
                          key=lambda st: (st.summary.user_id, st.summary.key))
        where: list[str] = []
        params: dict[str, Any] = {}
        if user_id is not None:
            where.append("s.user_id = $user")
            params["user"] = user_id
        if due_only:
            where.append("s.staleness > 0 AND (s.staleness >= s.threshold OR (s.key = 'user_preferences' AND s.refreshed_at IS NULL))")
        if ids is not None:
            where.append("s.id IN $ids")
            params["ids"] = list(ids)
        query = "MATCH (s:Summary)" + (" WHERE " + " AND ".join(where) if where else "")
        rows = self.read(f"{query} RETURN {_SUMMARY_RETURN} ORDER BY s.user_id, s.key", params)
        return [_state_from_row(r) for r in rows]

    def covered_learnings(
        self,
        user_id: str,
        kind: str,
        name: str | None,
        *,
        kinds: Sequence[str],
        statuses: Sequence[str],
        limit: int,
    ) -> list[Learning]:
        """The eligible learnings a summary covers: corrections first, then most recently updated."""
        rows = self.read(
            f"MATCH (l:Learning){_SCOPE[kind]} WHERE {_ELIGIBLE} "
            f"WITH l, CASE WHEN l.sentiment = 'negative' THEN 0 ELSE 1 END AS neg "
            f"RETURN {_RETURN}, neg ORDER BY neg, l.updated_at DESC LIMIT $limit",
            _params(user=user_id, name=name, kinds=list(kinds), statuses=list(statuses), limit=int(limit)),
        )
        return [learning_from_row(r) for r in rows]

    def relink_summary(self, user_id: str, key: str, kind: str, name: str | None, *, kinds: Sequence[str], statuses: Sequence[str]) -> None:
        """Make SUMMARIZED_IN edges match exactly the eligible learnings a summary covers (full rebuilds)."""
        params = _params(sid=summary_id(user_id, key), user=user_id, name=name, kinds=list(kinds), statuses=list(statuses))
        with self.transaction():
            self.write(
                f"MATCH (l:Learning)-[e:SUMMARIZED_IN]->(:Summary {{id: $sid}}) WHERE NOT ({_ELIGIBLE}) DELETE e",
                {k: v for k, v in params.items() if k != "name"},
            )
            self.write(
                f"MATCH (s:Summary {{id: $sid}}) MATCH (l:Learning){_SCOPE[kind]} WHERE {_ELIGIBLE} "
                "MERGE (l)-[:SUMMARIZED_IN]->(s)",
                params,
            )

    def ensure_summary(self, user_id: str, key: str, kind: str, threshold: int) -> None:
        """Create an empty Summary node (staleness 0) if it does not exist; used by forced refreshes."""
        self.summaries_touched()
        self.write(
            "MERGE (s:Summary {id: $id}) ON CREATE SET s.key = $key, s.user_id = $user, s.kind = $kind, "
            "s.text = '', s.staleness = 0, s.threshold = $threshold, s.pending = CAST([] AS STRING[])",
            {"id": summary_id(user_id, key), "key": key, "user": user_id, "kind": kind, "threshold": int(threshold)},
        )

    def summary_names(self, user_id: str) -> dict[str, list[str]]:
        """The tools, topics and objective types this user's learnings are about (forced refreshes)."""
        out: dict[str, list[str]] = {}
        for kind, scope in (("tool", "ABOUT_TOOL]->(x:Tool"), ("topic", "ABOUT_TOPIC]->(x:Topic"),
                            ("objective_type", "FOR_OBJECTIVE_TYPE]->(x:ObjectiveType")):
            rows = self.read(
                f"MATCH (l:Learning)-[:{scope}) WHERE l.user_id = $user RETURN DISTINCT x.name AS name ORDER BY name",
                {"user": user_id},
            )
            out[kind] = [r["name"] for r in rows]
        return out

    def summary_text(self, user_id: str, key: str) -> str:
        """A summary's text ("" if none), cached: context() reads user_preferences every call.

        The cache entry is dropped after any commit that saves that summary's text, and the
        whole cache on a catalog reload (e.g. after a raw Cypher write).
        """
        cache: dict[str, str] | None = getattr(self, "_summary_text_cache", None)
        if cache is None:
            cache = {}
            self._summary_text_cache = cache
        sid = summary_id(user_id, key)
        text = cache.get(sid)
        if text is None:
            rows = self.read("MATCH (s:Summary {id: $id}) RETURN s.text AS text", {"id": sid})
            text = (rows[0]["text"] or "") if rows else ""
            if not self._tx_depth:
                cache[sid] = text
        return text

    def forget_summary_texts(self) -> None:
        """Drop the summary text cache."""
        self._summary_text_cache = {}

    def save_summary_refresh(
        self,
        user_id: str,
        key: str,
        *,
        text: str,
        embedding: np.ndarray,
        refreshed_at: datetime,
        consumed_staleness: int,
        consumed_ids: Sequence[str],
    ) -> SummaryState:
        """Store a refreshed text; subtract what the refresh consumed from staleness and pending.

        Changes written while the summarizer ran (another thread) stay counted for the next refresh.
        """
        sid = summary_id(user_id, key)
        gone = set(consumed_ids)
        with self.transaction():
            self.summaries_touched()
            rows = self.read(f"MATCH (s:Summary {{id: $id}}) RETURN {_SUMMARY_RETURN}", {"id": sid})
            current = _state_from_row(rows[0]) if rows else None
            staleness = max(0, current.summary.staleness - consumed_staleness) if current else 0
            pending = [p for p in (current.pending if current else []) if p not in gone]
            out = self.write(
                "MATCH (s:Summary {id: $id}) SET s.text = $text, s.embedding = $embedding, "
                "s.refreshed_at = $at, s.staleness = $staleness, s.pending = CAST($pending AS STRING[]) "
                f"RETURN {_SUMMARY_RETURN}",
                {"id": sid, "text": text, "embedding": db_floats(embedding), "at": to_db_time(refreshed_at),
                 "staleness": staleness, "pending": pending},
            )
            self.on_commit(lambda: getattr(self, "_summary_text_cache", {}).pop(sid, None))
        getattr(self, "_summary_text_cache", {}).pop(sid, None)
        return _state_from_row(out[0])

    def save_summary_refreshes(self, refreshes: Sequence[SummaryRefresh], refreshed_at: datetime) -> list[SummaryState]:
        """:meth:`save_summary_refresh` for many summaries in two statements (one read, one write).

        A refresh whose ``embedding`` is None keeps the summary's stored embedding (its text did
        not change). Returns the saved states in the order given.
        """
        if not refreshes:
            return []
        ids = [summary_id(r.user_id, r.key) for r in refreshes]
        with self.transaction():
            current = self._known_summary_states(ids)  # the states as the file holds them, known without a read
            if current is None:
                rows = self.read(f"MATCH (s:Summary) WHERE s.id IN $ids RETURN {_SUMMARY_RETURN}", {"ids": ids})
                current = {row["id"]: _state_from_row(row) for row in rows}
            saved: dict[str, SummaryState] = {}
            updates: list[dict[str, Any]] = []
            for sid, r in zip(ids, refreshes):
                state = current.get(sid)
                if state is None:
                    continue
                gone = set(r.consumed_ids)
                updates.append({"id": sid, "text": r.text,
                                "staleness": max(0, state.summary.staleness - r.consumed_staleness),
                                "pending": [p for p in state.pending if p not in gone], "embedding": r.embedding})
            for with_vector in (True, False):
                group = [u for u in updates if (u["embedding"] is not None) == with_vector]
                if not group:
                    continue
                vectors = ", s.embedding = r.embedding" if with_vector else ""
                rows = self.write(
                    f"UNWIND $rows AS r MATCH (s:Summary {{id: r.id}}) SET s.text = r.text{vectors}, "
                    "s.refreshed_at = $at, s.staleness = r.staleness, s.pending = CAST(r.pending AS STRING[]) "
                    f"RETURN {_SUMMARY_RETURN}",
                    {"rows": [{**u, "embedding": db_floats(u["embedding"])} if with_vector
                              else {k: v for k, v in u.items() if k != "embedding"} for u in group],
                     "at": to_db_time(refreshed_at)},
                )
                saved.update((row["id"], _state_from_row(row)) for row in rows)
            self._note_summary_states(list(saved.values()))
            out = [saved[sid] for sid in ids if sid in saved]
            self.on_commit(lambda: self._forget_summary_texts(ids))
        self._forget_summary_texts(ids)
        return out

    def _forget_summary_texts(self, ids: Sequence[str]) -> None:
        cache = getattr(self, "_summary_text_cache", {})
        for sid in ids:
            cache.pop(sid, None)

    def summary_embedding(self, user_id: str, key: str) -> np.ndarray | None:
        """The stored embedding of a summary's text (None before its first refresh)."""
        rows = self.read("MATCH (s:Summary {id: $id}) RETURN s.embedding AS e", {"id": summary_id(user_id, key)})
        if not rows or rows[0]["e"] is None:
            return None
        return np.asarray(rows[0]["e"], dtype=np.float32)

    def summary_learning_ids(self, user_id: str, key: str) -> list[str]:
        """Ids of the learnings SUMMARIZED_IN a summary."""
        rows = self.read(
            "MATCH (l:Learning)-[:SUMMARIZED_IN]->(:Summary {id: $id}) RETURN l.id AS id ORDER BY id",
            {"id": summary_id(user_id, key)},
        )
        return [r["id"] for r in rows]


__all__ = ["SummaryFeed", "SummaryRefresh", "SummaryState", "SummaryStore", "summary_id"]
