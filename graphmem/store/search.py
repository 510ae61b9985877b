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

import bisect
import itertools
import threading
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


# per id asked for, the events a table must hold before primary-key lookups beat one scan
_LOOKUP_PER_ID_EVENTS = 2_000

class EventLayout:
    """One user's events, position by position in the order the event catalog holds them (the
    order they were written), with each session's conversation order (time, then insertion)
    kept beside them for the session-neighbour expansion.

    ``rows`` holds each event's row in the event catalog's matrix, ``content`` its text;
    ``derived`` caches values computed from the layout by the ranking (e.g. time flags).

    The layout grows in place when events are written (:meth:`append`): positions never move
    between two rebuilds, so a cache computed over the first ``m`` positions stays valid for
    them. A cache kept in ``derived`` survives an append only when its key is in
    ``keep_on_append`` (the one who stores it extends it to the new positions); every other
    entry is dropped. A rebuild (on open, after a delete) makes a new layout.
    """

    def __init__(
        self,
        order: list[str] | None = None,
        session: list[str] | None = None,
        content: list[str] | None = None,
        rows: Sequence[int] | np.ndarray | None = None,
        created: list[Any] | None = None,
        role: list[str] | None = None,
        linked: list[list[str]] | None = None,
        tie: Sequence[int] | np.ndarray | None = None,
    ) -> None:
        self.order: list[str] = list(order or [])
        n = len(self.order)
        self.session: list[str] = list(session) if session is not None else [""] * n  # "" when none
        self.content: list[str] = list(content) if content is not None else [""] * n
        self.created: list[Any] = list(created) if created is not None else [None] * n  # database time
        self.role: list[str] = list(role) if role is not None else [""] * n  # speaker role ("" when none)
        self.linked: list[list[str]] = list(linked) if linked is not None else [[] for _ in range(n)]
        self.position: dict[str, int] = {ident: i for i, ident in enumerate(self.order)}  # id -> index
        self.derived: dict[str, Any] = {}
        self.keep_on_append: set[str] = set()  # derived keys their owner extends after an append
        self.mention_rows: list[tuple[str, str]] = []  # (event id, entity name) of appended events
        self.names: dict[str, None] | None = None  # every entity the events mention (read on first use)
        self.generation = -1  # the event catalog's generation this layout reflects
        # id -> the row events_by_ids reads for it, for the hits of a search (SearchStore.layout_events;
        # None: not kept, the hits are read from the file); an id absent from it is read when asked
        self.event_rows: dict[str, dict[str, Any]] | None = None
        self.seen = 0  # catalog rows examined so far (rows below it are in the layout or not the user's)
        self._rows = np.zeros(max(16, n), dtype=np.int64)
        self._rows[:n] = np.asarray(rows if rows is not None else np.arange(n), dtype=np.int64)
        self._tie = np.zeros(max(16, n), dtype=np.int64)
        self._tie[:n] = np.asarray(tie if tie is not None else np.arange(n), dtype=np.int64)
        self._tie_max = int(self._tie[:n].max()) if n else -1
        self._nb: dict[int, np.ndarray] = {}  # window -> (capacity, 2 * window) neighbour positions
        self._members: dict[str, list[int]] | None = None  # session -> positions in conversation order

    def __len__(self) -> int:
        return len(self.order)

    @property
    def rows(self) -> np.ndarray:
        """Each position's row in the event catalog (a view; do not keep it across writes)."""
        return self._rows[: len(self.order)]

    # --- conversation order -------------------------------------------------------------
    def _key(self, p: int) -> tuple[Any, int]:
        ts = self.created[p]
        return (ts if ts is not None else datetime.min, int(self._tie[p]))

    def members(self) -> dict[str, list[int]]:
        """Session -> its positions in conversation order (time, then insertion); built once."""
        if self._members is None:
            groups: dict[str, list[int]] = {}
            for p, sid in enumerate(self.session):
                if sid:
                    groups.setdefault(sid, []).append(p)
            for ps in groups.values():
                ps.sort(key=self._key)
            self._members = groups
        return self._members

    def neighbours(self, event_id: str, window: int) -> list[tuple[str, int]]:
        """Events within ``window`` turns of ``event_id`` in its session, with their distance."""
        pos = self.position.get(event_id)
        if pos is None or not self.session[pos]:
            return []
        seq = self.members()[self.session[pos]]
        j = seq.index(pos)
        out: list[tuple[str, int]] = []
        for d in range(1, window + 1):
            for q in (j - d, j + d):
                if 0 <= q < len(seq):
                    out.append((self.order[seq[q]], d))
        return out

    def neighbour_index(self, window: int) -> np.ndarray:
        """``(n, 2 * window)`` positions of same-session neighbours: columns are distance 1
        before, 1 after, 2 before, 2 after...; ``-1`` where there is none (index an array of
        ``n + 1`` values whose last one means "no neighbour"). Kept up to date by
        :meth:`append`; a view, do not keep it across writes."""
        window = max(int(window), 0)
        n = len(self.order)
        nb = self._nb.get(window)
        if nb is None:
            self.members()  # (so that appends from now on keep the sessions' order up to date)
            nb = np.full((max(16, n, self._rows.shape[0]), 2 * window), -1, dtype=np.int64)  # capacity, as append grows
            if window:
                for seq in self.members().values():
                    arr = np.asarray(seq, dtype=np.int64)
                    for d in range(1, min(window, len(arr) - 1) + 1):
                        nb[arr[d:], 2 * (d - 1)] = arr[:-d]
                        nb[arr[:-d], 2 * (d - 1) + 1] = arr[d:]
            self._nb[window] = nb
        return nb[:n]

    def _fix_neighbours(self, seq: list[int], j: int) -> None:
        """Recompute the neighbour columns of the members around index ``j`` of ``seq``."""
        for window, nb in self._nb.items():
            for q in range(max(0, j - window), min(len(seq), j + window + 1)):
                p = seq[q]
                for d in range(1, window + 1):
                    nb[p, 2 * (d - 1)] = seq[q - d] if q - d >= 0 else -1
                    nb[p, 2 * (d - 1) + 1] = seq[q + d] if q + d < len(seq) else -1

    # --- growing in place ---------------------------------------------------------------
    def append(
        self, ident: str, row: int, session: str, content: str, created: Any, role: str,
        linked: Sequence[str], mentions: Sequence[str] = (), event_row: dict[str, Any] | None = None,
    ) -> int:
        """Add one event at the end (its catalog ``row``; ``mentions``: the entity names its
        MENTIONS edges point to; ``event_row``: what the file holds for it, kept when the layout
        keeps its events' rows); returns its position. The neighbour index is updated around
        it in its session (it need not be the session's latest turn)."""
        p = len(self.order)
        if p >= self._rows.shape[0]:
            cap = 2 * self._rows.shape[0]
            self._rows = np.resize(self._rows, cap)
            self._tie = np.resize(self._tie, cap)
            for window, nb in list(self._nb.items()):
                grown = np.full((cap, nb.shape[1]), -1, dtype=np.int64)
                grown[:p] = nb[:p]
                self._nb[window] = grown
        self._rows[p] = row
        self._tie_max += 1
        self._tie[p] = self._tie_max  # written after every event before it
        self.order.append(ident)
        self.session.append(session)
        self.content.append(content)
        self.created.append(created)
        self.role.append(role)
        self.linked.append(list(linked))
        self.position[ident] = p
        self.mention_rows.extend((ident, name) for name in mentions)
        if self.event_rows is not None and event_row is not None:
            self.event_rows[ident] = event_row
        if self.names is not None:
            self.names.update(dict.fromkeys(mentions))
        for nb in self._nb.values():
            nb[p] = -1
        if session and self._members is not None:
            seq = self._members.setdefault(session, [])
            j = bisect.bisect_right(seq, self._key(p), key=self._key)
            seq.insert(j, p)
            self._fix_neighbours(seq, j)
        for key in [k for k in self.derived if k not in self.keep_on_append]:
            del self.derived[key]
        return p

    def same_as(self, other: EventLayout) -> bool:
        """True when both layouts hold the same events at the same positions, catalog rows,
        columns and neighbours (tests compare an incrementally grown layout to a rebuilt one)."""
        n = len(self)
        if self.order != other.order or self.session != other.session or self.content != other.content:
            return False
        if self.role != other.role or self.created != other.created:
            return False
        if [sorted(x) for x in self.linked] != [sorted(x) for x in other.linked]:
            return False
        if not np.array_equal(self.rows, other.rows):
            return False
        return all(np.array_equal(self.neighbour_index(w), other.neighbour_index(w)) for w in (1, 2, 3)) and n == len(other)


@dataclass
class _Pending:
    """What a written event adds to its user's layout (noted at write time, used after commit)."""

    session: str
    created: Any
    content: str
    role: str
    linked: list[str]
    mentions: list[str] = field(default_factory=list)
    row: dict[str, Any] | None = None  # the event's row, when its user's layout keeps them


def event_row(event: Event) -> dict[str, Any]:
    """The row :meth:`SearchStore.events_by_ids` reads back for ``event`` once it is written
    (the values as the file holds them: database time, metadata as JSON text)."""
    data = event.model_dump()
    row = {p: data[p] for p in EVENT_PROPS}
    row["created_at"] = to_db_time(event.created_at)
    row["metadata"] = dumps(event.metadata)
    return row


PENDING_CAP = 100_000  # events noted for layouts at most; beyond, a layout reads them from the file
_LOCKS = threading.Lock()


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
        """Names of the entities the user's events mention (read once, then kept on the user's
        layout and grown with each write)."""
        layout = self.event_layout(user_id)
        with self._lock.shared(), self._layout_lock():  # shared first: see event_layout
            if layout.names is None:
                rows = self.read(
                    "MATCH (e:Event)-[:MENTIONS]->(n:Entity) WHERE e.user_id = $user RETURN DISTINCT n.name AS name",
                    {"user": user_id},
                )
                names = dict.fromkeys(str(r["name"]) for r in rows)
                for _, name in layout.mention_rows:  # appended after the read began: already in
                    names.setdefault(name)
                layout.names = names
            return list(layout.names)

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
        """The user's events in catalog order (see :class:`EventLayout`), cached: rebuilt from
        the file when the event catalog was reloaded (on open, after a delete), grown in place
        by the events catalogued since (their rows noted at write time, else read by id)."""
        catalog = self.event_catalog
        cache = self._search_cache()
        # Lock order: the store's shared hold, then the layout lock. Growing a layout may read
        # the file (a shared hold); taken under the layout lock alone, that read could wait for
        # a queued writer while a searcher holding the store shared waits for the layout lock.
        with self._lock.shared(), self._layout_lock():
            layout: EventLayout | None = cache.get(("layout", user_id))
            if layout is None or layout.generation != catalog.generation or layout.seen > len(catalog):
                layout = self._build_layout(user_id)
                cache[("layout", user_id)] = layout
            elif layout.seen < len(catalog):
                self._grow_layout(layout, user_id)
            return layout

    def _layout_lock(self) -> threading.Lock:
        lock: threading.Lock | None = getattr(self, "_layout_lock_obj", None)
        if lock is None:
            with _LOCKS:
                lock = getattr(self, "_layout_lock_obj", None)
                if lock is None:
                    lock = self._layout_lock_obj = threading.Lock()
        return lock

    def _pending_layout(self) -> dict[str, _Pending]:
        pending: dict[str, _Pending] | None = getattr(self, "_layout_pending", None)
        if pending is None:
            pending = {}
            self._layout_pending = pending
        return pending

    def _note_layout(self, event: Event, mentions: Sequence[str]) -> None:
        """Note what a written event adds to its user's layout (before the commit; the layout
        takes it once the catalog holds the event). ``mentions``: its MENTIONS entity names."""
        pending = self._pending_layout()
        if len(pending) >= PENDING_CAP:
            pending.clear()  # a writer nobody searches: layouts read the rest from the file
        layout: EventLayout | None = self._search_cache().get(("layout", event.user_id))
        keeps = layout is not None and layout.event_rows is not None  # only then: the row is kept
        pending[event.id] = _Pending(
            session=event.session_id or "", created=to_db_time(event.created_at), content=event.content or "",
            role=event.role or "", linked=list(event.entities), mentions=list(dict.fromkeys(mentions)),
            row=event_row(event) if keeps else None,
        )

    def _build_layout(self, user_id: str) -> EventLayout:
        """The user's layout from the file (every event the catalog holds, in catalog order).

        On a Kùzu file the events are read in chunks of node offsets (``scan_chunks``, as the
        catalog load reads them) and kept column by column, the user's rows picked in Arrow:
        one query returning every event as a Python row held ~6 GB at 1M events. Other stores
        (Bolt) answer one query (:meth:`_layout_rows`); both give the same layout."""
        catalog = self.event_catalog
        generation, seen = catalog.generation, len(catalog)
        rows_map = catalog.vectors.rows
        cols = self._layout_columns(user_id) if self._chunked_layout() else self._layout_columns_rows(user_id, rows_map)
        rows = np.fromiter((rows_map.get(i, seen) for i in cols["id"]), dtype=np.int64, count=len(cols["id"]))
        keep = np.flatnonzero(rows < seen)  # catalogued
        keep = keep[np.argsort(rows[keep], kind="stable")]
        ids = catalog.vectors.ids
        pick = keep.tolist()
        layout = EventLayout(
            order=[ids[r] for r in rows[keep].tolist()],  # the catalog's id strings (no second copy)
            session=[cols["sid"][i] for i in pick],
            content=[cols["content"][i] for i in pick],
            rows=rows[keep],
            created=[cols["ts"][i] for i in pick],
            role=[cols["role"][i] for i in pick],
            linked=[cols["ents"][i] for i in pick],
            tie=np.asarray(cols["tie"], dtype=np.int64)[keep] if len(keep) else np.zeros(0, dtype=np.int64),
        )
        del cols
        layout.generation, layout.seen = generation, seen
        pending = self._pending_layout()
        for ident in layout.order:
            pending.pop(ident, None)
        return layout

    def _grow_layout(self, layout: EventLayout, user_id: str) -> None:
        """Append the user's events catalogued after ``layout.seen`` (the caller holds the lock)."""
        catalog = self.event_catalog
        end = len(catalog)
        new = [(r, catalog.vectors.ids[r]) for r in range(layout.seen, end) if catalog.user[r] == user_id]
        pending = self._pending_layout()
        missing = [ident for _, ident in new if ident not in pending]
        if missing:
            pending.update(self._layout_info(missing))
        for row, ident in new:
            info = pending.pop(ident) if ident in pending else None
            if info is None:  # gone from the file since (a delete is on its way): rebuild then
                continue
            layout.append(ident, row, info.session, info.content, info.created, info.role, info.linked, info.mentions,
                          info.row)
        layout.seen = end

    def _layout_info(self, ids: Sequence[str]) -> dict[str, _Pending]:
        """What the layout needs of these events, read from the file (events not noted at
        write time: written by another process, or beyond ``PENDING_CAP``)."""
        out: dict[str, _Pending] = {}
        for i in range(0, len(ids), 500):
            part = list(ids[i : i + 500])
            for r in self.read(
                "UNWIND $ids AS i MATCH (e:Event {id: i}) RETURN e.id AS id, e.session_id AS sid, "
                "e.created_at AS ts, e.content AS content, e.role AS role, e.entities AS ents", {"ids": part},
            ):
                out[str(r["id"])] = _Pending(str(r["sid"] or ""), r["ts"], str(r["content"] or ""),
                                             str(r["role"] or ""), list(r["ents"] or []))
            for r in self.read(
                "UNWIND $ids AS i MATCH (e:Event {id: i})-[:MENTIONS]->(n:Entity) RETURN e.id AS id, n.name AS name",
                {"ids": part},
            ):
                if str(r["id"]) in out:
                    out[str(r["id"])].mentions.append(str(r["name"]))
        return out

    def _chunked_layout(self) -> bool:
        """True when the layout can be read in chunks of node offsets (a Kùzu file)."""
        import kuzu

        return isinstance(getattr(self, "_db", None), kuzu.Database) and type(self)._layout_rows is SearchStore._layout_rows

    def _layout_columns(self, user_id: str) -> dict[str, list[Any]]:
        """The user's events, column by column (``tie``: Kùzu's insertion offset), read in
        chunks of node offsets and filtered by user in Arrow."""
        import pyarrow.compute as pc

        cols: dict[str, list[Any]] = {k: [] for k in ("id", "sid", "ts", "tie", "content", "role", "ents")}
        interned: dict[str, str] = {}
        proj = ("e.user_id AS user, e.id AS id, e.session_id AS sid, e.created_at AS ts, offset(id(e)) AS off, "
                "e.content AS content, e.role AS role, e.entities AS ents")
        with self._lock.shared():  # scan_chunks runs its queries under the caller's lock
            for chunk in self.scan_chunks("Event", "e", proj):
                chunk = chunk.filter(pc.equal(chunk.column("user"), user_id))
                if chunk.num_rows == 0:
                    continue
                cols["id"].extend(chunk.column("id").to_pylist())
                cols["sid"].extend(interned.setdefault(x, x) if x else "" for x in chunk.column("sid").to_pylist())
                cols["ts"].extend(chunk.column("ts").to_pylist())
                cols["tie"].extend(chunk.column("off").to_pylist())
                cols["content"].extend(x or "" for x in chunk.column("content").to_pylist())
                cols["role"].extend(interned.setdefault(x, x) if x else "" for x in chunk.column("role").to_pylist())
                cols["ents"].extend([interned.setdefault(e, e) for e in x] if x else [] for x in chunk.column("ents").to_pylist())
                del chunk
        return cols

    def _layout_columns_rows(self, user_id: str, rows_map: Mapping[str, int]) -> dict[str, list[Any]]:
        """:meth:`_layout_columns` from one query (:meth:`_layout_rows`; stores that are not a Kùzu file)."""
        found = self._layout_rows(user_id)
        return {
            "id": [str(r["id"]) for r in found], "sid": [str(r["sid"] or "") for r in found],
            "ts": [r["ts"] for r in found], "tie": [int(self._layout_tie(r, rows_map)) for r in found],
            "content": [str(r["content"] or "") for r in found], "role": [str(r["role"] or "") for r in found],
            "ents": [list(r["ents"] or []) for r in found],
        }

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
        """Events by id (missing ids are absent from the result): a primary-key lookup per id
        when the table is large (Kùzu 0.11 answers ``e.id IN $ids`` by scanning every event:
        ~30 ms at 100k events, against ~0.6 ms per lookup), one scanning query otherwise (at a
        conversation's 600 events the scan takes ~0.7 ms, ten lookups ~6 ms)."""
        if not ids:
            return {}
        rows = self._event_rows(list(dict.fromkeys(ids)))
        return {ident: event_from_row(r) for ident, r in rows.items()}

    def layout_events(self, user_id: str, layout: EventLayout, ids: Sequence[str], keep: int) -> dict[str, Event]:
        """The events ``ids`` of the user's ``layout``, for the hits of a search (missing ids are
        absent), from event rows kept on the layout: at most ``keep`` of them (0: none, every
        hit is read from the file). A layout of at most ``keep`` events reads all its rows in one
        query on first use; a larger one keeps the rows of its latest hits (the oldest dropped
        first). Both add the row of each event written since (as written); an id the rows lack
        is read from the file. The rows go with the layout (a reload, a delete) and with
        :meth:`forget_event_rows` (a raw Cypher write). Each call builds new Event models."""
        if not ids:
            return {}
        if keep <= 0:
            layout.event_rows = None
            return self.events_by_ids(ids)
        rows = layout.event_rows
        if rows is None:
            with self._lock.shared(), self._layout_lock():  # no commit meanwhile: later writes add their rows
                if layout.event_rows is None:
                    every: list[dict[str, Any]] = []
                    if len(layout) <= keep:
                        every = self.read(f"MATCH (e:Event) WHERE e.user_id = $user RETURN {_EVENT_RETURN}",
                                          {"user": user_id})
                    layout.event_rows = {str(r["id"]): r for r in every}
                rows = layout.event_rows
        wanted = list(dict.fromkeys(ids))
        with self._layout_lock():  # searches of one user share the rows: change them one at a time
            found = {i: rows.pop(i) for i in wanted if i in rows}  # (put back last: the latest used)
        missing = [i for i in wanted if i not in found]
        if missing:
            found.update(self._event_rows(missing))
        with self._layout_lock():
            rows.update(found)
            for old in list(itertools.islice(rows, max(0, len(rows) - keep))):  # the least recently used
                rows.pop(old, None)
        return {i: event_from_row(found[i]) for i in wanted if i in found}

    def _event_rows(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Rows of the events ``ids`` read from the file (see :meth:`events_by_ids`)."""
        if len(ids) <= 64 and len(self.event_catalog) > _LOOKUP_PER_ID_EVENTS * len(ids):
            rows = []
            for ident in ids:
                rows += self.read(f"MATCH (e:Event {{id: $id}}) RETURN {_EVENT_RETURN}", {"id": ident})
        else:
            rows = self.read(f"MATCH (e:Event) WHERE e.id IN $ids RETURN {_EVENT_RETURN}", {"ids": list(ids)})
        return {str(r["id"]): r for r in rows}

    def forget_event_rows(self) -> None:
        """Drop the event rows the search layouts keep (after a raw Cypher write, which may have
        changed events without the layouts knowing); they are read again on the next search."""
        for key, layout in list(self._search_cache().items()):
            if isinstance(key, tuple) and key[:1] == ("layout",) and isinstance(layout, EventLayout):
                layout.event_rows = None

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
