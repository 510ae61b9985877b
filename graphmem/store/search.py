"""Search queries over events: full-text (BM25), entity links and session adjacency.

The ranking itself lives in :mod:`graphmem.retrieve.search`; this mixin only answers the
questions it asks of the graph, always filtered by the calling user:

- :meth:`SearchStore.event_fulltext`: BM25 over ``Event.search_text`` via Kùzu's ``event_fts``
  index, for analysts (``Memory.search`` ranks with the event catalog's in-memory lexical mirror);
- :meth:`SearchStore.events_mentioning`: events linked by ``MENTIONS`` to the given entities;
- :meth:`SearchStore.event_layout`: the user's events in conversation order (session, time,
  insertion order) with their catalog rows, cached until the event catalog changes: the
  vector signal and the session-neighbour expansion work on it without further queries;
- :meth:`SearchStore.fusion_state` / :meth:`SearchStore.set_fusion_state`: the user's learned
  fusion weights (``FusionWeights``, see :mod:`graphmem.retrieve.learned`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from graphmem.models import Event
from graphmem.store.events import EVENT_PROPS, event_from_row
from graphmem.store.kuzu_store import KuzuBase, dumps, loads, to_db_time
from graphmem.store.text import search_text

_EVENT_RETURN = ", ".join(f"e.{p} AS {p}" for p in EVENT_PROPS) + ", e.metadata AS metadata"


@dataclass
class EventLayout:
    """One user's events in conversation order (session by session, then time, then insertion).

    ``rows`` holds each event's row in the event catalog's matrix, ``content`` its text;
    ``derived`` caches values computed from the layout by the ranking (e.g. time flags).
    """

    order: list[str] = field(default_factory=list)
    session: list[str] = field(default_factory=list)  # session id per position ("" when none)
    content: list[str] = field(default_factory=list)
    position: dict[str, int] = field(default_factory=dict)  # id -> index into order
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    derived: dict[str, Any] = field(default_factory=dict)
    created: list[Any] = field(default_factory=list)  # created_at per position (database time)
    role: list[str] = field(default_factory=list)  # speaker role per position ("" when none)
    linked: list[list[str]] = field(default_factory=list)  # entities the caller linked, per position

    def __len__(self) -> int:
        return len(self.order)

    def neighbours(self, event_id: str, window: int) -> list[tuple[str, int]]:
        """Events within ``window`` turns of ``event_id`` in its session, with their distance."""
        pos = self.position.get(event_id)
        if pos is None or not self.session[pos]:
            return []
        out: list[tuple[str, int]] = []
        for d in range(1, window + 1):
            for p in (pos - d, pos + d):
                if 0 <= p < len(self.order) and self.session[p] == self.session[pos]:
                    out.append((self.order[p], d))
        return out

    def neighbour_index(self, window: int) -> np.ndarray:
        """``(n, 2 * window)`` positions of same-session neighbours: columns are distance 1
        before, 1 after, 2 before, 2 after...; ``n`` (one past the end) where there is none."""
        key = f"neighbours:{window}"
        cached = self.derived.get(key)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        n = len(self.order)
        sess = np.asarray(self.session, dtype=object)
        out = np.full((n, 2 * max(window, 0)), n, dtype=np.int64)
        idx = np.arange(n)
        for d in range(1, window + 1):
            for col, other in ((2 * (d - 1), idx - d), (2 * (d - 1) + 1, idx + d)):
                ok = (other >= 0) & (other < n)
                same = np.zeros(n, dtype=bool)
                same[ok] = (sess[other[ok]] == sess[ok]) & (sess[ok] != "")
                out[same, col] = other[same]
        self.derived[key] = out
        return out


class SearchStore(KuzuBase):
    """Event search queries (full-text, entities, session layout), filtered by user."""

    def _search_cache(self) -> dict[Any, Any]:
        cache: dict[Any, Any] | None = getattr(self, "_search_cache_dict", None)
        if cache is None:
            cache = {}
            self._search_cache_dict = cache
        return cache

    def event_fulltext(self, user_id: str, text: str, *, limit: int) -> list[tuple[str, float]]:
        """BM25 hits ``(event id, score)`` of the user's events for ``text`` through Kùzu's FTS
        index, best first (global statistics; not used by ``Memory.search``)."""
        query = search_text(text)
        if not query or limit <= 0:
            return []
        # the index ranks every user's events; ask for more so the user filter leaves enough
        top = max(limit * 4, 200)
        rows = self.read(
            "CALL QUERY_FTS_INDEX('Event', 'event_fts', $q, top := $top) "
            "WITH node AS e, score WHERE e.user_id = $user "
            "RETURN e.id AS id, score ORDER BY score DESC LIMIT $limit",
            {"q": query, "top": top, "user": user_id, "limit": int(limit)},
        )
        return [(str(r["id"]), float(r["score"])) for r in rows]

    def event_entity_names(self, user_id: str) -> list[str]:
        """Names of the entities the user's events mention."""
        rows = self.read(
            "MATCH (e:Event)-[:MENTIONS]->(n:Entity) WHERE e.user_id = $user RETURN DISTINCT n.name AS name",
            {"user": user_id},
        )
        return [str(r["name"]) for r in rows]

    def events_mentioning(self, user_id: str, names: Sequence[str], *, limit: int) -> dict[str, list[str]]:
        """The user's events that mention any of ``names``: event id -> matched names (capped)."""
        if not names or limit <= 0:
            return {}
        rows = self.read(
            "MATCH (e:Event)-[:MENTIONS]->(n:Entity) WHERE e.user_id = $user AND n.name IN $names "
            "RETURN e.id AS id, n.name AS name ORDER BY e.created_at DESC LIMIT $limit",
            {"user": user_id, "names": list(names), "limit": int(limit)},
        )
        out: dict[str, list[str]] = {}
        for r in rows:
            out.setdefault(str(r["id"]), []).append(str(r["name"]))
        return out

    def events_with_tool(self, user_id: str, tool: str, *, limit: int) -> list[str]:
        """Ids of the user's events that used ``tool``, newest first."""
        rows = self.read(
            "MATCH (e:Event)-[:USED_TOOL]->(t:Tool {name: $tool}) WHERE e.user_id = $user "
            "RETURN e.id AS id ORDER BY e.created_at DESC LIMIT $limit",
            {"user": user_id, "tool": tool, "limit": int(limit)},
        )
        return [str(r["id"]) for r in rows]

    def event_layout(self, user_id: str) -> EventLayout:
        """The user's events in conversation order; cached until the event catalog changes."""
        rows_map = self.event_catalog.vectors.rows
        key = ("layout", user_id, len(self.event_catalog), id(rows_map))
        cache = self._search_cache()
        layout = cache.get(key)
        if layout is not None:
            return layout  # type: ignore[no-any-return]
        for k in [k for k in cache if k[0] == "layout" and k[1] == user_id]:
            del cache[k]
        found = [r for r in self._layout_rows(user_id) if str(r["id"]) in rows_map]  # committed and catalogued
        found.sort(key=lambda r: (r["sid"] or "", r["ts"], self._layout_tie(r, rows_map)))
        layout = EventLayout(
            order=[str(r["id"]) for r in found],
            session=[str(r["sid"] or "") for r in found],
            content=[str(r["content"] or "") for r in found],
        )
        layout.created = [r["ts"] for r in found]
        layout.role = [str(r["role"] or "") for r in found]
        layout.linked = [list(r["ents"] or []) for r in found]
        layout.position = {ident: i for i, ident in enumerate(layout.order)}
        layout.rows = np.asarray([rows_map[i] for i in layout.order], dtype=np.int64)
        cache[key] = layout
        return layout

    def _layout_rows(self, user_id: str) -> list[dict[str, Any]]:
        """The user's events with what the layout needs (``off``: Kùzu's insertion offset)."""
        return self.read(
            "MATCH (e:Event) WHERE e.user_id = $user RETURN e.id AS id, e.session_id AS sid, "
            "e.created_at AS ts, offset(id(e)) AS off, e.content AS content, e.role AS role, e.entities AS ents",
            {"user": user_id},
        )

    def _layout_tie(self, row: dict[str, Any], rows_map: Mapping[str, int]) -> Any:
        """The order of events of one session with one timestamp: the order they were written."""
        return row["off"]

    def events_by_ids(self, ids: Sequence[str]) -> dict[str, Event]:
        """Events by id in one query (missing ids are absent from the result)."""
        if not ids:
            return {}
        rows = self.read(f"MATCH (e:Event) WHERE e.id IN $ids RETURN {_EVENT_RETURN}", {"ids": list(ids)})
        events = [event_from_row(r) for r in rows]
        return {e.id: e for e in events}

    def insert_events(
        self, items: Sequence[tuple[Event, np.ndarray]], mentions: Sequence[Sequence[tuple[str, str]]] | None = None
    ) -> None:
        """Write many events (and their edges) in one transaction; see ``insert_event``
        (``mentions``: per event, the entities found in its text)."""
        with self.transaction():
            for i, (event, embedding) in enumerate(items):
                found = mentions[i] if mentions is not None else ()
                self.insert_event(event, embedding, found)  # type: ignore[attr-defined]

    def event_mention_rows(self, user_id: str) -> list[tuple[str, str]]:
        """Every ``(event id, entity name)`` MENTIONS link of the user's events."""
        rows = self.read(
            "MATCH (e:Event)-[:MENTIONS]->(n:Entity) WHERE e.user_id = $user RETURN e.id AS id, n.name AS name",
            {"user": user_id},
        )
        return [(str(r["id"]), str(r["name"])) for r in rows]

    # --- learned fusion weights (schema 013) ----------------------------------------------------
    def fusion_state(self, user_id: str) -> dict[str, Any] | None:
        """The user's learned fusion state (weights, best, examples, updates, rollbacks), None
        when no outcome has moved it yet."""
        rows = self.read(
            "MATCH (f:FusionWeights {id: $u}) RETURN f.weights AS weights, f.best AS best, "
            "f.examples AS examples, f.updates AS updates, f.rollbacks AS rollbacks",
            {"u": user_id},
        )
        if not rows:
            return None
        r = rows[0]
        return {"weights": loads(r["weights"], {}), "best": loads(r["best"], {}), "examples": loads(r["examples"], []),
                "updates": int(r["updates"] or 0), "rollbacks": int(r["rollbacks"] or 0)}

    def set_fusion_state(self, user_id: str, state: Mapping[str, Any], at: datetime) -> None:
        """Persist the user's learned fusion state (keys as :meth:`fusion_state` returns)."""
        self.write(
            "MERGE (f:FusionWeights {id: $u}) SET f.user_id = $u, f.weights = $w, f.best = $b, f.examples = $x, "
            "f.updates = $n, f.rollbacks = $r, f.updated_at = $ts",
            {"u": user_id, "w": dumps(dict(state.get("weights", {}))), "b": dumps(dict(state.get("best", {}))),
             "x": dumps(list(state.get("examples", []))), "n": int(state.get("updates", 0)),
             "r": int(state.get("rollbacks", 0)), "ts": to_db_time(at)},
        )
