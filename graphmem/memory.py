"""Memory: the one public facade of graphmem.

It wires the store (Kùzu), the embedder, the LLM and the learning, retrieval, summary and
lifecycle services together. Every public method validates its input and raises a
:class:`~graphmem.errors.GraphmemError` subclass that says what to do; writes are transactional.

>>> mem = Memory(None, user="alice", embedder=HashEmbedder())   # None: in-memory database
>>> l = mem.add_learning("Keep emails under 3 paragraphs", tool="send_email")
>>> [x.content for x in mem.learnings(tool="send_email")]
['Keep emails under 3 paragraphs']
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from graphmem.config import Settings
from graphmem.embed import Embedder, HashEmbedder, default_embedder
from graphmem.errors import InvalidInputError, NotFoundError
from graphmem.inputs import (
    json_object,
    names,
    optional_text,
    require_choice,
    require_count,
    require_text,
    require_unit,
)
from graphmem.models import (
    EVENT_KINDS,
    LEARNING_KINDS,
    SENTIMENTS,
    SOURCE_TYPES,
    STATUSES,
    TIERS,
    Event,
    Learning,
    LearningLinks,
    Transition,
    utcnow,
)
from graphmem.store import open_store, release_store
from graphmem.store.text import content_key

__all__ = ["Memory", "HashEmbedder"]

_OUTBOUND_ROLES = frozenset({"assistant", "agent", "tool", "system"})
_UPDATABLE = {
    "content", "recommendation", "applies_when", "kind", "sentiment", "confidence", "score",
    "status", "canary_allocation", "tier", "helpful", "harmful", "validations", "contradictions",
    "ttl_days", "shared", "source_type",
}


class Memory:
    """A graph-native learning memory on one Kùzu file (or in memory when ``path`` is None).

    Args:
        path: the database file; None for an in-memory database.
        user: whose learnings this Memory reads and writes (others' are never returned).
        read_only: open an existing file without writing to it.
        embedder: defaults to the bundled all-MiniLM-L6-v2 (offline).
        llm: defaults to the deterministic OfflineLLM.
        settings: every threshold; defaults to the seeds' values.
        clock: returns "now" as an aware UTC datetime; tests inject one.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        user: str = "default",
        read_only: bool = False,
        embedder: Embedder | None = None,
        llm: Any = None,
        settings: Settings | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.user = require_text("user", user, max_chars=200)
        self.embedder: Embedder = embedder or default_embedder()
        self.llm = llm if llm is not None else _default_llm()
        self.clock: Callable[[], datetime] = clock or utcnow
        self.store = open_store(
            path, dim=self.embedder.dim, embedder_name=self.embedder.name, read_only=read_only
        )
        self._closed = False

    # --- lifecycle of the object -----------------------------------------------------------
    def close(self) -> None:
        """Release the database file (closed when the last Memory on it in this process closes)."""
        if not self._closed:
            self._closed = True
            release_store(self.store)

    def for_user(self, user: str) -> Memory:
        """Another Memory on the same database for another user, sharing this one's store."""
        other = Memory.__new__(Memory)
        other.__dict__.update(self.__dict__)
        other.user = require_text("user", user, max_chars=200)
        other.store = open_store(
            self.store.path, dim=self.embedder.dim, embedder_name=self.embedder.name, read_only=self.store.read_only
        ) if self.store.path is not None else self.store
        other._closed = self.store.path is None  # an in-memory store belongs to its creator
        return other

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> datetime:
        """The current time from the injected clock, aware UTC."""
        now = self.clock()
        return now if now.tzinfo else now.replace(tzinfo=timezone.utc)

    def _embed_one(self, text: str) -> np.ndarray:
        return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)

    # --- events ------------------------------------------------------------------------------
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
        event = self._make_event(
            kind, content, tool=tool, role=role, objective_id=objective_id, session_id=session_id,
            created_at=created_at, entities=entities, success=success, metadata=metadata,
            direction=direction, is_owner=is_owner,
        )
        self.store.insert_event(event, self._embed_one(event.content))
        return event

    def _make_event(
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
        text = require_text("content", content, max_chars=self.settings.max_content_chars, allow_empty=True)
        if kind == "message" and not text:
            raise InvalidInputError("a message event needs content; pass the message text")
        if direction is None:
            outbound = kind in ("tool_call", "tool_result") or (role or "").lower() in _OUTBOUND_ROLES
            direction = "outbound" if outbound else "inbound"
        require_choice("direction", direction, ("inbound", "outbound"))
        if objective_id is not None:
            self.store.get_objective(objective_id)  # NotFoundError with the fix
        when = created_at or self.now()
        if when.tzinfo is None:
            raise InvalidInputError("created_at must be timezone-aware (e.g. datetime(..., tzinfo=timezone.utc))")
        return Event(
            user_id=self.user, session_id=session_id, kind=kind, role=role, direction=direction,  # type: ignore[arg-type]
            is_owner=bool(is_owner), content=text, tool_name=optional_text("tool", tool, max_chars=200),
            success=success, objective_id=objective_id, created_at=when.astimezone(timezone.utc),
            metadata=json_object("metadata", metadata), entities=names("entity", entities),
        )

    # --- learnings ---------------------------------------------------------------------------
    def add_learning(
        self,
        content: str,
        *,
        kind: str = "rule",
        tool: str | None = None,
        entities: Iterable[str] = (),
        topics: Iterable[str] = (),
        objective_type: str | None = None,
        recommendation: str | None = None,
        applies_when: str | None = None,
        sentiment: str = "neutral",
        source_type: str = "observation",
        confidence: float = 0.5,
        status: str = "active",
        tier: str = "active",
        shared: bool = False,
        ttl_days: int | None = None,
        source_event_id: str | None = None,
        objective_id: str | None = None,
        created_at: datetime | None = None,
    ) -> Learning:
        """Store a learning linked to its tool, entities, topics and objective type.

        Tool/Topic/Entity/ObjectiveType nodes are created on first use. An exact duplicate of
        one of this user's learnings is merged into it (validations + 1) instead of stored twice.
        The learning and its edges are written in one transaction.
        """
        learning, links = self._make_learning(
            content, kind=kind, tool=tool, entities=entities, topics=topics,
            objective_type=objective_type, recommendation=recommendation, applies_when=applies_when,
            sentiment=sentiment, source_type=source_type, confidence=confidence, status=status,
            tier=tier, shared=shared, ttl_days=ttl_days, source_event_id=source_event_id,
            objective_id=objective_id, created_at=created_at,
        )
        embedding = self._embed_one(_embedding_text(learning))
        return self._store_learning(learning, links, embedding)

    def add_learnings(self, items: Sequence[Mapping[str, Any]]) -> list[Learning]:
        """Add many learnings at once: all validated first, embedded in one batch, one transaction.

        Each item holds add_learning's arguments (``content`` required). Nothing is written if
        any item is invalid.
        """
        prepared = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping) or "content" not in item:
                raise InvalidInputError(f"item {i} must be a dict with at least 'content'")
            args = dict(item)
            try:
                prepared.append(self._make_learning(args.pop("content"), **args))
            except TypeError as e:
                raise InvalidInputError(f"item {i}: {e}") from e
            except InvalidInputError as e:
                raise InvalidInputError(f"item {i}: {e}") from e
        if not prepared:
            return []
        vectors = self.embedder.embed([_embedding_text(l) for l, _ in prepared])
        out: list[Learning] = []
        batch_keys: dict[tuple[str, str], Learning] = {}
        with self.store.transaction():
            for (learning, links), vector in zip(prepared, vectors):
                key = (learning.user_id, content_key(learning.content))
                if key in batch_keys:  # a duplicate inside the batch itself
                    out.append(self._merge_into(batch_keys[key], learning, links))
                    batch_keys[key] = out[-1]
                    continue
                stored = self._store_learning(learning, links, np.asarray(vector, dtype=np.float32))
                batch_keys[key] = stored
                out.append(stored)
        self._after_write()
        return out

    def _make_learning(
        self,
        content: str,
        *,
        kind: str = "rule",
        tool: str | None = None,
        entities: Iterable[str] = (),
        topics: Iterable[str] = (),
        objective_type: str | None = None,
        recommendation: str | None = None,
        applies_when: str | None = None,
        sentiment: str = "neutral",
        source_type: str = "observation",
        confidence: float = 0.5,
        status: str = "active",
        tier: str = "active",
        shared: bool = False,
        ttl_days: int | None = None,
        source_event_id: str | None = None,
        objective_id: str | None = None,
        created_at: datetime | None = None,
    ) -> tuple[Learning, LearningLinks]:
        limit = self.settings.max_content_chars
        text = require_text("content", content, max_chars=limit)
        if ttl_days is None:
            ttl_days = self.settings.ttl_days.get(kind) if kind in LEARNING_KINDS else None
        elif isinstance(ttl_days, bool) or not isinstance(ttl_days, int) or ttl_days <= 0:
            raise InvalidInputError(f"ttl_days must be a whole number of days > 0 (or None), got {ttl_days!r}")
        when = (created_at or self.now()).astimezone(timezone.utc)
        if objective_id is not None:
            self.store.get_objective(objective_id)
        learning = Learning(
            user_id=self.user,
            shared=bool(shared),
            kind=require_choice("kind", kind, LEARNING_KINDS),  # type: ignore[arg-type]
            content=text,
            recommendation=optional_text("recommendation", recommendation, max_chars=limit),
            applies_when=optional_text("applies_when", applies_when, max_chars=limit),
            source_type=require_choice("source_type", source_type, SOURCE_TYPES),  # type: ignore[arg-type]
            source_event_id=source_event_id,
            sentiment=require_choice("sentiment", sentiment, SENTIMENTS),  # type: ignore[arg-type]
            confidence=require_unit("confidence", confidence),
            status=require_choice("status", status, STATUSES),  # type: ignore[arg-type]
            tier=require_choice("tier", tier, TIERS),  # type: ignore[arg-type]
            canary_allocation=self.settings.canary_min_allocation if status == "canary" else 1.0,
            ttl_days=ttl_days,
            tool=optional_text("tool", tool, max_chars=200),
            objective_type=optional_text("objective_type", objective_type, max_chars=200),
            topics=names("topic", topics),
            entities=names("entity", entities),
            created_at=when,
            updated_at=when,
        )
        links = LearningLinks(
            tool=learning.tool, topics=learning.topics, entities=learning.entities,
            objective_type=learning.objective_type, objective_id=objective_id,
            source_event_id=source_event_id,
        )
        return learning, links

    def _store_learning(self, learning: Learning, links: LearningLinks, embedding: np.ndarray) -> Learning:
        """Insert, or merge into an existing duplicate (the curator decides)."""
        existing_id = self.store.learning_catalog.find_exact(learning.user_id, content_key(learning.content))
        if existing_id is not None:
            return self._merge_into(self.store.get_learning(existing_id), learning, links)
        with self.store.transaction():
            self.store.insert_learning(learning, embedding, links)
            self._on_learnings_changed([learning], change="created")
        self._after_write()
        return learning

    def _merge_into(self, existing: Learning, new: Learning, links: LearningLinks) -> Learning:
        """Count a validation on ``existing`` and add the new learning's links to it."""
        now = self.now()
        merged = existing.model_copy(
            update={
                "validations": existing.validations + 1,
                "last_validated_at": now,
                "updated_at": now,
                "confidence": max(existing.confidence, new.confidence),
                "recommendation": existing.recommendation or new.recommendation,
                "applies_when": existing.applies_when or new.applies_when,
                "tool": existing.tool or new.tool,
                "objective_type": existing.objective_type or new.objective_type,
                "topics": _union(existing.topics, new.topics),
                "entities": _union(existing.entities, new.entities),
            }
        )
        extra = LearningLinks(
            tool=new.tool if new.tool and new.tool != existing.tool else None,
            topics=[t for t in new.topics if t not in existing.topics],
            entities=[e for e in new.entities if e not in existing.entities],
            objective_type=new.objective_type if new.objective_type != existing.objective_type else None,
            objective_id=links.objective_id,
            source_event_id=links.source_event_id,
        )
        with self.store.transaction():
            self.store.save_learning(merged)
            self.store.add_links(merged.id, extra)
            self._on_learnings_changed([merged], change="merged")
        self._after_write()
        return merged

    def get_learning(self, learning_id: str) -> Learning:
        """One of this user's (or a shared) learning by id."""
        learning = self.store.get_learning(learning_id)
        if learning.user_id != self.user and not learning.shared:
            raise NotFoundError(f"no learning with id {learning_id!r} for user {self.user!r}")
        return learning

    def update_learning(self, learning_id: str, **changes: Any) -> Learning:
        """Change fields of a learning; status and tier changes bump ``version`` and are logged.

        Updatable: content, recommendation, applies_when, kind, sentiment, confidence, score,
        status, canary_allocation, tier, helpful, harmful, validations, contradictions,
        ttl_days, shared, source_type.
        """
        unknown = sorted(set(changes) - _UPDATABLE)
        if unknown:
            raise InvalidInputError(
                f"cannot update {', '.join(unknown)}; updatable fields: {', '.join(sorted(_UPDATABLE))}"
            )
        if not changes:
            raise InvalidInputError("nothing to update; pass fields such as status='canary' or helpful=3")
        current = self.get_learning(learning_id)
        clean = self._validate_changes(changes)
        return self._apply_changes(current, clean, reason="update_learning")

    def _validate_changes(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        limit = self.settings.max_content_chars
        clean: dict[str, Any] = {}
        for key, value in changes.items():
            if key == "content":
                clean[key] = require_text("content", value, max_chars=limit)
            elif key in ("recommendation", "applies_when"):
                clean[key] = optional_text(key, value, max_chars=limit)
            elif key == "kind":
                clean[key] = require_choice("kind", value, LEARNING_KINDS)
            elif key == "sentiment":
                clean[key] = require_choice("sentiment", value, SENTIMENTS)
            elif key == "source_type":
                clean[key] = require_choice("source_type", value, SOURCE_TYPES)
            elif key == "status":
                clean[key] = require_choice("status", value, STATUSES)
            elif key == "tier":
                clean[key] = require_choice("tier", value, TIERS)
            elif key in ("confidence", "score", "canary_allocation"):
                clean[key] = require_unit(key, value)
            elif key in ("helpful", "harmful", "validations", "contradictions"):
                clean[key] = require_count(key, value)
            elif key == "ttl_days":
                if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                    raise InvalidInputError(f"ttl_days must be a whole number > 0 or None, got {value!r}")
                clean[key] = value
            elif key == "shared":
                clean[key] = bool(value)
        return clean

    def _apply_changes(self, current: Learning, clean: Mapping[str, Any], *, reason: str) -> Learning:
        """Write validated changes; log status/tier transitions; re-embed changed text."""
        now = self.now()
        transitions = [
            (f, str(getattr(current, f)), str(clean[f]))
            for f in ("status", "tier")
            if f in clean and clean[f] != getattr(current, f)
        ]
        update = dict(clean)
        update["updated_at"] = now
        if transitions:
            update["version"] = current.version + 1
        if clean.get("status") == "canary" and "canary_allocation" not in clean and current.status != "canary":
            update["canary_allocation"] = self.settings.canary_min_allocation
        if clean.get("status") == "active" and "canary_allocation" not in clean:
            update["canary_allocation"] = 1.0
        updated = current.model_copy(update=update)
        Learning.model_validate(updated.model_dump())  # re-check the combined result
        text_changed = any(f in clean for f in ("content", "recommendation", "applies_when"))
        embedding = self._embed_one(_embedding_text(updated)) if text_changed else None
        with self.store.transaction():
            self.store.save_learning(updated, embedding)
            for field, old, new in transitions:
                self.store.log_transition(
                    Transition(learning_id=updated.id, field=field, old=old, new=new, reason=reason,
                               version=updated.version, created_at=now)
                )
            self._on_learnings_changed([updated], change="retired" if updated.status == "disabled" else "updated")
        self._after_write()
        return updated

    def retire_learning(self, learning_id: str, *, reason: str = "retired") -> Learning:
        """Take a learning out of use for good: status disabled, tier archive. Never deleted."""
        current = self.get_learning(learning_id)
        return self._apply_changes(current, {"status": "disabled", "tier": "archive"}, reason=reason)

    def learnings(
        self,
        *,
        status: str | None = None,
        tier: str | None = None,
        tool: str | None = None,
        topic: str | None = None,
        entity: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
    ) -> list[Learning]:
        """This user's (and shared) learnings matching every filter, newest first."""
        if status is not None:
            require_choice("status", status, STATUSES)
        if tier is not None:
            require_choice("tier", tier, TIERS)
        if kind is not None:
            require_choice("kind", kind, LEARNING_KINDS)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
            raise InvalidInputError(f"limit must be a whole number > 0, got {limit!r}")
        return self.store.find_learnings(
            user_id=self.user, status=status, tier=tier, tool=tool, topic=topic, entity=entity,
            kind=kind, limit=limit,
        )

    # --- write hooks ---------------------------------------------------------------------------
    def _on_learnings_changed(self, learnings: Sequence[Learning], *, change: str) -> None:
        """Called inside every transaction that writes learnings (created, merged, updated,
        retired, outcome...): marks the summaries those learnings feed as staler."""

    def _after_write(self) -> None:
        """Called after a learning write commits: runs inline summary refreshes if due."""

    # --- learning from experience (issue 3) ---------------------------------------------------

    # --- retrieval (issue 4) -------------------------------------------------------------------

    # --- summaries (issue 5) -------------------------------------------------------------------
    def _user_preferences_text(self) -> str:
        """The text of this user's ``user_preferences`` summary, "" until one exists."""
        return ""

    # --- outcomes and lifecycle (issue 6) ------------------------------------------------------

    # --- analysts ------------------------------------------------------------------------------
    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *, write: bool = False) -> list[dict[str, Any]]:
        """Run Cypher over the graph; rows as dicts. Read-only unless ``write=True``."""
        rows = self.store.cypher(query, params, write=write)
        if write:
            self.store.reload_catalogs()  # a raw write may have changed learnings behind our back
        return rows

    def stats(self) -> dict[str, int]:
        """Node counts per table and edge counts per type."""
        return self.store.stats()


def _embedding_text(learning: Learning) -> str:
    parts = [learning.content]
    if learning.recommendation and learning.recommendation not in learning.content:
        parts.append(learning.recommendation)
    return " ".join(parts)


def _union(a: Sequence[str], b: Sequence[str]) -> list[str]:
    return list(a) + [x for x in b if x not in a]


def _default_llm() -> Any:
    from graphmem.llm import OfflineLLM

    return OfflineLLM()
