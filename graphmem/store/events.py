"""Event and Objective nodes: the episodic log and the goals it belongs to."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphmem.errors import NotFoundError
from graphmem.models import Event, Objective, utcnow
from graphmem.store.embed_queue import embed_queue
from graphmem.store.kuzu_store import KuzuBase, dumps, from_db_time, loads, to_db_time
from graphmem.store.text import search_text
from graphmem.store.vector_math import db_floats

EVENT_PROPS: tuple[str, ...] = (
    "id", "user_id", "session_id", "kind", "role", "direction", "is_owner", "content",
    "tool_name", "success", "objective_id", "entities", "created_at",
)
BATCH_MIN_ROWS = 2  # from this many events on, they are written as a batch (LOAD FROM)
_EVENT_RETURN = ", ".join(f"e.{p} AS {p}" for p in EVENT_PROPS) + ", e.metadata AS metadata"
OBJECTIVE_PROPS: tuple[str, ...] = (
    "id", "user_id", "goal", "objective_type", "status", "result", "score", "started_at", "ended_at",
)
_OBJ_RETURN = ", ".join(f"o.{p} AS {p}" for p in OBJECTIVE_PROPS)


def event_from_row(row: dict[str, Any]) -> Event:
    """An Event model from a row returned with the event projection."""
    data = {p: row[p] for p in EVENT_PROPS}
    data["created_at"] = from_db_time(data["created_at"])
    data["entities"] = list(data["entities"] or [])
    data["is_owner"] = bool(data["is_owner"])
    data["metadata"] = loads(row.get("metadata"), {})
    return Event.model_validate(data)


def objective_from_row(row: dict[str, Any]) -> Objective:
    """An Objective model from a row returned with the objective projection."""
    data = {p: row[p] for p in OBJECTIVE_PROPS}
    data["started_at"] = from_db_time(data["started_at"])
    data["ended_at"] = from_db_time(data["ended_at"])
    return Objective.model_validate(data)


class EventStore(KuzuBase):
    """Events (with USED_TOOL, PART_OF and MENTIONS edges) and Objectives."""

    def insert_event(
        self, event: Event, embedding: np.ndarray | None, mentions: Sequence[tuple[str, str]] = ()
    ) -> None:
        """Write one event and its edges in one transaction, and index it for search.

        ``mentions``: ``(name, kind)`` entities found in its text (beyond ``event.entities``),
        linked by MENTIONS as well; a new Entity node gets that kind (name, date).
        ``embedding`` None: the row is written without one and the event is queued; search
        sees it once :meth:`drain_event_embeddings` has embedded the queue."""
        data = event.model_dump()
        params = {p: data[p] for p in EVENT_PROPS}
        params["created_at"] = to_db_time(event.created_at)
        params["metadata"] = dumps(event.metadata)
        params["search_text"] = search_text(event.content)
        params["embedding"] = None if embedding is None else db_floats(embedding)
        props = ", ".join(f"{p}: ${p}" for p in params)
        alone = not self.in_transaction()  # its own transaction: its first edges may be COPYed
        with self.transaction():
            self.write(f"CREATE (e:Event {{{props}}})", params)
            if not (alone and self._copy_first_edges(event, params["created_at"], mentions)):
                self._merge_edges(event, params["created_at"], mentions)
            self._note_layout(event, [*event.entities, *(name for name, _ in mentions)])  # type: ignore[attr-defined]
            if embedding is None:  # the drain checks that the row exists (a rollback drops it)
                embed_queue(self).put(event.id, event.user_id, event.content, params["search_text"])
            else:
                self.on_commit(lambda: self.event_catalog.add(event.id, event.user_id, embedding, params["search_text"]))

    def _merge_edges(self, event: Event, ts: Any, mentions: Sequence[tuple[str, str]]) -> None:
        """One event's edges, one MERGE statement each (its anchors merged on the way)."""
        if event.tool_name:
            self.write(
                "MERGE (t:Tool {name: $name}) ON CREATE SET t.success_count = 0, t.error_count = 0, t.created_at = $ts "
                "WITH t MATCH (e:Event {id: $id}) MERGE (e)-[:USED_TOOL]->(t)",
                {"id": event.id, "name": event.tool_name, "ts": ts},
            )
        if event.objective_id:
            self.write(
                "MATCH (e:Event {id: $id}), (o:Objective {id: $oid}) MERGE (e)-[:PART_OF]->(o)",
                {"id": event.id, "oid": event.objective_id},
            )
        for name in event.entities:
            self.write(
                "MERGE (n:Entity {name: $name}) ON CREATE SET n.kind = 'thing', n.created_at = $ts "
                "WITH n MATCH (e:Event {id: $id}) MERGE (e)-[:MENTIONS]->(n)",
                {"id": event.id, "name": name, "ts": ts},
            )
        for name, kind in mentions:
            self.write(
                "MERGE (n:Entity {name: $name}) ON CREATE SET n.kind = $kind, n.created_at = $ts "
                "WITH n MATCH (e:Event {id: $id}) MERGE (e)-[:MENTIONS]->(n)",
                {"id": event.id, "name": name, "kind": kind, "ts": ts},
            )

    def _copy_first_edges(self, event: Event, ts: Any, mentions: Sequence[tuple[str, str]]) -> bool:
        """When one of the event's edge tables holds no edge yet (a new file): its anchors by
        MERGE and its edges by COPY, the same graph as :meth:`_merge_edges` (True: written).
        Kùzu 0.11.3 gives an edge table whose first edges came from MERGE/CREATE four full-size
        offset columns (~4.2 MB); after a COPY it stays small. Once per table and file, and only
        when the event is its own transaction: in Kùzu 0.11.3 a MERGE of an edge after a COPY
        into the same edge table in the same transaction can miss (edges went missing in a
        batch of events written one insert_event each inside one transaction)."""
        if not self.can_copy():  # type: ignore[attr-defined]
            return False
        tables = [("USED_TOOL", "Tool", bool(event.tool_name)), ("PART_OF", "Objective", bool(event.objective_id)),
                  ("MENTIONS", "Entity", bool(event.entities or mentions))]
        if all(self._rel_seeded(rel, "Event", target) for rel, target, used in tables if used):  # type: ignore[attr-defined]
            return False
        if event.tool_name:
            self.write("MERGE (t:Tool {name: $name}) ON CREATE SET t.success_count = 0, t.error_count = 0, t.created_at = $ts",
                       {"name": event.tool_name, "ts": ts})
            self._new_edges("USED_TOOL", ("Event", "id"), ("Tool", "name"), [(event.id, event.tool_name)])  # type: ignore[attr-defined]
        if event.objective_id:
            self._new_edges("PART_OF", ("Event", "id"), ("Objective", "id"), [(event.id, event.objective_id)])  # type: ignore[attr-defined]
        found = [(name, "thing") for name in event.entities] + list(mentions)
        for name, kind in found:
            self.write("MERGE (n:Entity {name: $name}) ON CREATE SET n.kind = $kind, n.created_at = $ts",
                       {"name": name, "kind": kind, "ts": ts})
        if found:
            self._new_edges("MENTIONS", ("Event", "id"), ("Entity", "name"), [(event.id, name) for name, _ in found])  # type: ignore[attr-defined]
        return True

    def insert_event_batch(
        self, items: Sequence[tuple[Event, np.ndarray]], mentions: Sequence[Sequence[tuple[str, str]]] | None = None
    ) -> None:
        """Write many events and their edges in one transaction, the same graph as
        ``insert_event`` one by one: from two events on, the nodes with one LOAD FROM statement,
        the Tool and Entity nodes with one MERGE statement per label, and each edge table with
        one statement (the first edges a table gets with a COPY; see
        ``LearningStore._new_edges``), instead of one statement per node and edge."""
        if len(items) < BATCH_MIN_ROWS or not self.can_copy():  # type: ignore[attr-defined]
            with self.transaction():
                for i, (event, embedding) in enumerate(items):
                    self.insert_event(event, embedding, mentions[i] if mentions is not None else ())
            return
        rows: list[dict[str, Any]] = []
        tools: dict[str, Any] = {}
        entities: dict[str, tuple[str, Any]] = {}  # name -> (kind of its first use, time)
        used: list[tuple[str, str]] = []
        part_of: list[tuple[str, str]] = []
        mentioned: list[tuple[str, str]] = []
        for i, (event, _) in enumerate(items):
            data = event.model_dump()
            params = {p: data[p] for p in EVENT_PROPS}
            params["created_at"] = ts = to_db_time(event.created_at)
            params["metadata"] = dumps(event.metadata)
            params["search_text"] = search_text(event.content)
            params["embedding"] = np.asarray(items[i][1], dtype=np.float32)  # an Arrow column (store/copy.py)
            rows.append(params)
            if event.tool_name:
                tools.setdefault(event.tool_name, ts)
                used.append((event.id, event.tool_name))
            if event.objective_id:
                part_of.append((event.id, event.objective_id))
            found = [(name, "thing") for name in event.entities] + list(mentions[i] if mentions is not None else ())
            for name, kind in found:
                entities.setdefault(name, (kind, ts))
                mentioned.append((event.id, name))
        with self.transaction():
            self._load_nodes("Event", rows)  # type: ignore[attr-defined]
            if tools:
                self.write(
                    "UNWIND $rows AS r MERGE (t:Tool {name: r.name}) "
                    "ON CREATE SET t.success_count = 0, t.error_count = 0, t.created_at = r.ts",
                    {"rows": [{"name": n, "ts": ts} for n, ts in tools.items()]},
                )
                self._new_edges("USED_TOOL", ("Event", "id"), ("Tool", "name"), used)  # type: ignore[attr-defined]
            if part_of:
                self._new_edges("PART_OF", ("Event", "id"), ("Objective", "id"), part_of)  # type: ignore[attr-defined]
            if entities:
                self.write(
                    "UNWIND $rows AS r MERGE (n:Entity {name: r.name}) ON CREATE SET n.kind = r.kind, n.created_at = r.ts",
                    {"rows": [{"name": n, "kind": k, "ts": ts} for n, (k, ts) in entities.items()]},
                )
                self._new_edges("MENTIONS", ("Event", "id"), ("Entity", "name"), mentioned)  # type: ignore[attr-defined]
            for i, ((event, embedding), params) in enumerate(zip(items, rows)):
                extra = mentions[i] if mentions is not None else ()
                self._note_layout(event, [*event.entities, *(name for name, _ in extra)])  # type: ignore[attr-defined]
                self.on_commit(functools.partial(
                    self.event_catalog.add, event.id, event.user_id, embedding, params["search_text"]))

    def drain_event_embeddings(self, embed: Callable[[list[str]], np.ndarray]) -> int:
        """Embed the queued events (``insert_event`` without an embedding, or rows found without
        one when the file was opened) in one batch, write their embeddings and catalog them;
        returns how many. Call it outside any snapshot or transaction."""
        return embed_queue(self).drain(self, embed)

    def pending_embeddings(self) -> int:
        """How many events wait for their embedding (written, not yet searchable by meaning)."""
        return len(embed_queue(self))

    def get_event(self, event_id: str) -> Event:
        """One event by id; NotFoundError if there is none."""
        rows = self.read(f"MATCH (e:Event {{id: $id}}) RETURN {_EVENT_RETURN}", {"id": event_id})
        if not rows:
            raise NotFoundError(f"no event with id {event_id!r}")
        return event_from_row(rows[0])

    def get_events(self, ids: Sequence[str]) -> list[Event]:
        """Events by id, in the order given (missing ids skipped)."""
        out = []
        for ident in ids:
            rows = self.read(f"MATCH (e:Event {{id: $id}}) RETURN {_EVENT_RETURN}", {"id": ident})
            if rows:
                out.append(event_from_row(rows[0]))
        return out

    def recent_events(
        self,
        user_id: str,
        *,
        limit: int = 5,
        direction: str | None = None,
        kinds: Sequence[str] | None = None,
        objective_id: str | None = None,
        session_id: str | None = None,
    ) -> list[Event]:
        """The user's latest events matching the filters, newest first."""
        where = ["e.user_id = $user"]
        params: dict[str, Any] = {"user": user_id, "limit": int(limit)}
        if direction is not None:
            where.append("e.direction = $direction")
            params["direction"] = direction
        if kinds:
            where.append("e.kind IN $kinds")
            params["kinds"] = list(kinds)
        if objective_id is not None:
            where.append("e.objective_id = $oid")
            params["oid"] = objective_id
        if session_id is not None:
            where.append("e.session_id = $sid")
            params["sid"] = session_id
        query = (
            f"MATCH (e:Event) WHERE {' AND '.join(where)} RETURN {_EVENT_RETURN} "
            "ORDER BY e.created_at DESC LIMIT $limit"
        )
        return [event_from_row(r) for r in self.read(query, params)]

    def count_events(self) -> int:
        """How many Event nodes there are."""
        return int(self.read("MATCH (e:Event) RETURN count(e) AS n")[0]["n"])

    def load_event_catalog(self) -> None:
        """Rebuild the in-memory event catalog from the database (in chunks)."""
        from graphmem.store.catalog_load import load_event_catalog

        load_event_catalog(self)

    # --- objectives ---------------------------------------------------------------------
    def insert_objective(self, objective: Objective) -> None:
        """Write one objective, linked to its ObjectiveType."""
        data = objective.model_dump()
        params = {p: data[p] for p in OBJECTIVE_PROPS}
        params["started_at"] = to_db_time(objective.started_at)
        params["ended_at"] = to_db_time(objective.ended_at)
        props = ", ".join(f"{p}: ${p}" for p in params)
        with self.transaction():
            self.write(f"CREATE (o:Objective {{{props}}})", params)
            if objective.objective_type:
                self.write(
                    "MERGE (t:ObjectiveType {name: $name}) ON CREATE SET t.created_at = $ts "
                    "WITH t MATCH (o:Objective {id: $id}) MERGE (o)-[:FOR_OBJECTIVE_TYPE]->(t)",
                    {"id": objective.id, "name": objective.objective_type, "ts": params["started_at"]},
                )

    def save_objective(self, objective: Objective) -> None:
        """Overwrite an objective's properties."""
        data = objective.model_dump()
        params = {p: data[p] for p in OBJECTIVE_PROPS}
        params["started_at"] = to_db_time(objective.started_at)
        params["ended_at"] = to_db_time(objective.ended_at)
        sets = ", ".join(f"o.{p} = ${p}" for p in OBJECTIVE_PROPS if p != "id")
        self.write(f"MATCH (o:Objective {{id: $id}}) SET {sets}", params)

    def get_objective(self, objective_id: str) -> Objective:
        """One objective by id; NotFoundError if there is none."""
        rows = self.read(f"MATCH (o:Objective {{id: $id}}) RETURN {_OBJ_RETURN}", {"id": objective_id})
        if not rows:
            raise NotFoundError(
                f"no objective with id {objective_id!r}; start one with Memory.start_objective()"
            )
        return objective_from_row(rows[0])

    def bump_tool_counters(self, tool: str, *, successes: int = 0, errors: int = 0) -> None:
        """Add to a Tool's success/error counters (seed 001: tracked in tool definitions)."""
        self.write(
            "MERGE (t:Tool {name: $name}) ON CREATE SET t.success_count = 0, t.error_count = 0, t.created_at = $ts "
            "SET t.success_count = t.success_count + $s, t.error_count = t.error_count + $e",
            {"name": tool, "s": int(successes), "e": int(errors), "ts": to_db_time(utcnow())},
        )

