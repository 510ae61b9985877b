"""The events service: log what happened (episodic memory), one event or a batch.

``Memory.record_event`` / ``record_events`` delegate here; feedback and objectives log their
messages and steps through the same :class:`EventService`. Tool results also feed the implicit
outcome tracker (:func:`graphmem.outcomes.after_event`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.embed import QUERY_BATCH_MAX, embed_queries, embed_with_progress
from graphmem.errors import InvalidInputError
from graphmem.inputs import (
    json_object,
    model_errors,
    names,
    optional_bool,
    optional_id,
    optional_string,
    optional_text,
    require_bool,
    require_choice,
    require_items,
    require_text,
    require_time,
)
from graphmem.models import EVENT_KINDS, Event
from graphmem.outcomes import after_event
from graphmem.retrieve.entities import event_mentions
from graphmem.retrieve.event_terms import warm_terms
from graphmem.trust import own_objective

if TYPE_CHECKING:
    from graphmem.deps import Deps


def embedding_of(embedder: Any) -> Callable[[list[str]], np.ndarray]:
    """How a drain embeds its texts: a few in one forward pass on the query threads (a search
    right after a ``record_event`` drains one text), many through the batch path."""

    def embed(texts: list[str]) -> np.ndarray:
        if len(texts) <= QUERY_BATCH_MAX:
            return embed_queries(embedder, texts)
        return np.asarray(embedder.embed(texts), dtype=np.float32)

    return embed


_OUTBOUND_ROLES = frozenset({"assistant", "agent", "tool", "system"})


class EventService:
    """record_event, record_events (and the validation both share)."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

    def record_event(
        self,
        kind: str,
        content: str = "",
        *,
        tool: str | None = None,
        role: str | None = None,
        objective_id: str | None = None,
        session_id: str | None = None,
        created_at: datetime | None = None,
        entities: Iterable[str] = (),
        success: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
        direction: str | None = None,
        is_owner: bool = False,
    ) -> Event:
        """Log something that happened (episodic memory); events are searchable.

        ``direction`` defaults to outbound for tool calls/results and assistant messages,
        inbound otherwise. ``metadata`` must survive a JSON round trip and comes back unchanged.
        """
        event = self.make_event(
            kind, content, tool=tool, role=role, objective_id=objective_id, session_id=session_id,
            created_at=created_at, entities=entities, success=success, metadata=metadata,
            direction=direction, is_owner=is_owner,
        )
        deps = self.deps
        found = event_mentions(deps.store, deps.settings, deps.user, [event])
        if deps.settings.event_embed_later:  # row now, embedding with the next search (one batch)
            deps.store.insert_event(event, None, found[0] if found else ())
            if deps.store.pending_embeddings() >= deps.settings.event_embed_queue_max:
                self.drain()
        else:
            deps.store.insert_event(event, deps.embed_one(event.content), found[0] if found else ())
        if event.kind in ("tool_call", "tool_result") and event.tool_name:
            after_event(deps, event)  # the implicit outcome tracker: tool results become outcomes
        return event

    def drain(self) -> int:
        """Embed the events ``record_event`` queued (``Settings.event_embed_later``) in one
        batch and make them searchable; returns how many. Search over events calls it first."""
        store = self.deps.store
        if not store.pending_embeddings():
            return 0
        return store.drain_event_embeddings(embedding_of(self.deps.embedder))

    def make_event(
        self,
        kind: str,
        content: str,
        *,
        tool: str | None,
        role: str | None,
        objective_id: str | None,
        session_id: str | None,
        created_at: datetime | None,
        entities: Iterable[str],
        success: bool | None,
        metadata: Mapping[str, Any] | None,
        direction: str | None,
        is_owner: bool,
    ) -> Event:
        require_choice("event kind", kind, EVENT_KINDS)
        text = require_text("content", content, max_chars=self.deps.settings.max_content_chars, allow_empty=True)
        if kind == "message" and not text:
            raise InvalidInputError("a message event needs content; pass the message text")
        role = optional_text("role", role, max_chars=200)
        session_id = optional_string("session_id", session_id)
        success, is_owner = optional_bool("success", success), require_bool("is_owner", is_owner)
        objective_id = optional_id("objective_id", objective_id)
        created_at = require_time("created_at", created_at)
        if direction is None:
            outbound = kind in ("tool_call", "tool_result") or (role or "").lower() in _OUTBOUND_ROLES
            direction = "outbound" if outbound else "inbound"
        require_choice("direction", direction, ("inbound", "outbound"))
        if objective_id is not None:
            own_objective(self.deps, objective_id)  # NotFoundError, also for another user's objective
        when = created_at or self.deps.now()
        with model_errors("event"):
            return Event(
                user_id=self.deps.user, session_id=session_id, kind=kind, role=role, direction=direction,  # type: ignore[arg-type]
                is_owner=is_owner, content=text, tool_name=optional_text("tool", tool, max_chars=200),
                success=success, objective_id=objective_id, created_at=when.astimezone(UTC),
                metadata=json_object("metadata", metadata), entities=names("entity", entities),
            )

    def record_events(
        self, items: Sequence[Mapping[str, Any]], *, progress: Callable[[int, int], None] | None = None
    ) -> list[Event]:
        """Log many events at once: all validated first, embedded in one batch, one transaction.
        ``progress``, if given, is called with (items embedded so far, total) as the embedding
        proceeds.

        Each item holds ``record_event``'s arguments (``kind`` and ``content`` at least, e.g.
        ``{"kind": "message", "content": "...", "role": "Dana", "session_id": "s1"}``). Nothing
        is written if any item is invalid. Returns the events in the order given.
        """
        events: list[Event] = []
        for i, item in enumerate(require_items("items", items)):
            if not isinstance(item, Mapping) or "kind" not in item:
                raise InvalidInputError(f"item {i} must be a dict with at least 'kind' (and 'content')")
            args = dict(item)
            kind, content = args.pop("kind"), args.pop("content", "")
            defaults: dict[str, Any] = {
                "tool": None, "role": None, "objective_id": None, "session_id": None, "created_at": None,
                "entities": (), "success": None, "metadata": None, "direction": None, "is_owner": False,
            }
            unknown = sorted(str(k) for k in set(args) - set(defaults))
            if unknown:
                raise InvalidInputError(f"item {i}: unknown field(s) {', '.join(unknown)}; use {', '.join(defaults)}")
            defaults.update(args)
            try:
                events.append(self.make_event(kind, content, **defaults))
            except InvalidInputError as e:
                raise type(e)(f"item {i}: {e}") from e
        if not events:
            return []
        self.drain()  # queued single events first: the catalog keeps the order they were written in
        vectors = embed_with_progress(self.deps.embedder, [e.content for e in events], progress)
        found = event_mentions(self.deps.store, self.deps.settings, self.deps.user, events)
        self.deps.store.insert_event_batch(list(zip(events, vectors)), found)
        warm_terms(self.deps.store, self.deps.embedder, self.deps.settings, self.deps.user,
                   [e.content for e in events])
        return events
