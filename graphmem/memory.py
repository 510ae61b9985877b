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

import functools
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
    Summary,
    Transition,
    utcnow,
)
from graphmem.store import open_store, release_store
from graphmem.store.text import content_key
from graphmem.export import ExportReport
from graphmem.insights import Insights
from graphmem.promote import PromoteReport, SweepReport
from graphmem.retrieve.search import EventSearch, Hit  # search (issue 4)
from graphmem.retrieve import AssembledContext, Retriever, ScoredLearning  # retrieval (issue 4)
from graphmem.summaries import SummaryService
from graphmem.lifecycle import CycleReport  # outcomes and lifecycle (issue 6)
from graphmem.outcomes import OutcomeReport  # outcomes and lifecycle (issue 6)
from graphmem.learn.judges import TraceResult, TrainReport  # learning (issue 3)
from graphmem.learn.reflection import ReflectionRecord  # learning (issue 3)
from graphmem.models import Objective  # learning (issue 3)

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
        self._after_event(event)
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
        self._summaries.on_learnings_changed(learnings, change)

    def _after_write(self) -> None:
        """Called after a learning write commits: runs inline summary refreshes if due."""
        self._summaries.after_write()

    # --- learning from experience (issue 3) ---------------------------------------------------
    def observe_message(
        self,
        content: str,
        *,
        tool: str | None = None,
        is_owner: bool = True,
        role: str = "user",
        session_id: str | None = None,
        objective_id: str | None = None,
        entities: Iterable[str] = (),
    ) -> list[Learning]:
        """Log an inbound message; for owner messages, turn feedback into a learning (seed 001).

        The last ``Settings.feedback_recent_actions`` outbound actions are the context. Returns the
        new or reinforced learnings: ``[]`` for non-owners, messages without feedback, and LLM
        failures (logged on ``graphmem.learn``; the event stays logged). Empty or over-long
        (``Settings.max_content_chars``) messages raise InvalidInputError.
        """
        from graphmem.learn.feedback import observe_message

        return observe_message(
            self, content, tool=tool, is_owner=is_owner, role=role, session_id=session_id,
            objective_id=objective_id, entities=entities,
        )

    def start_objective(self, goal: str, objective_type: str | None = None) -> Objective:
        """Start a long-running goal; record its steps with ``record_event(..., objective_id=obj.id)``."""
        from graphmem.learn.objectives import start_objective

        return start_objective(self, goal, objective_type)

    def end_objective(
        self, objective_id: str, status: str = "completed", result: str | None = None, *, reflect: bool = True
    ) -> list[Learning]:
        """End an objective (completed | failed | cancelled): self-evaluate it (seed 001), update the
        tools' success/error counters, store what is worth remembering, and (``reflect``) reflect on
        the episode (seed 004; its rules become candidate learnings). Returns the learnings.
        Unknown id: NotFoundError; ended already: InvalidInputError."""
        from graphmem.learn.objectives import end_objective

        return end_objective(self, objective_id, status, result, reflect_episode=reflect)

    def reflect(
        self,
        user_text: str,
        assistant_text: str,
        *,
        success: bool | None = None,
        tools_used: Iterable[str] = (),
        feedback: str | None = None,
        objective_id: str | None = None,
        event_id: str | None = None,
    ) -> ReflectionRecord:
        """Reflect on one episode (seed 004): a Reflection node REFLECTS_ON the objective/event; its
        rules become learnings with status ``Settings.new_reflection_status`` (candidate)."""
        from graphmem.learn.reflection import reflect

        return reflect(
            self, user_text, assistant_text, success=success, tools_used=tools_used, feedback=feedback,
            objective_id=objective_id, event_id=event_id,
        )

    def add_judge(self, name: str, criteria: str, node: str | None = None) -> dict[str, Any]:
        """Configure a named LLM judge with its own criteria, for ``node`` or every node (seed 002)."""
        from graphmem.learn.judges import add_judge

        return add_judge(self, name, criteria, node)

    def trace(
        self,
        input_text: str,
        output: str,
        *,
        node: str,
        ground_truth: str | None = None,
        reasoning: str | None = None,
        mode: str = "online",
    ) -> TraceResult:
        """Judge one output with the node's judges, store the Trace and Verdicts, and (unless
        ``mode="vanilla"``) let the reflector turn failures into learnings (seed 002)."""
        from graphmem.learn.judges import trace

        return trace(self, input_text, output, node=node, ground_truth=ground_truth, reasoning=reasoning, mode=mode)

    def train(self, examples: Sequence[Mapping[str, Any]], *, node: str = "default") -> TrainReport:
        """Offline mode (seed 002) over a dataset of dicts (input_text, output, ground_truth...)."""
        from graphmem.learn.judges import train

        return train(self, examples, node=node)

    def curate(self, learning: Learning, links: LearningLinks, *, trusted_text: str | None = None) -> Learning | None:
        """Store a learning through the curator (merge, supersede, contradict, classify, refuse)."""
        from graphmem.learn.curator import Curator

        return Curator(self).curate(learning, links, trusted_text=trusted_text).learning


    # --- retrieval (issue 4) -------------------------------------------------------------------
    def context(
        self,
        query: str = "",
        *,
        tool: str | None = None,
        entities: Iterable[str] = (),
        topics: Iterable[str] = (),
        objective_type: str | None = None,
        limit: int = 8,
        token_budget: int | None = None,
    ) -> AssembledContext:
        """The learnings and standing preferences an agent should see before acting.

        Candidates come from exact cosine over the catalog, BM25 and the graph (one hop from the
        tool, entities, topics and objective type, plus entities/topics named in ``query``; a
        capped, decayed second hop through RELATED neighbours). They are fused by weighted RRF,
        re-ranked by the quality prior and MMR, and packed into the learnings token budget
        (``token_budget`` or ``Settings.budget_learnings``; ~4 characters per token). Only this
        user's and shared learnings that are active (or sampled canary), not archived,
        superseded or expired are eligible. The context is recorded as an Application with
        APPLIED_IN edges from the learnings shown; ``ctx.id`` is its id.

        An empty query with no anchors returns the preferences and the top-quality learnings.
        Query text beyond ``Settings.max_query_chars`` is ignored (truncated), not an error.
        """
        import time

        from graphmem.models import new_id
        from graphmem.retrieve.context import pack

        t0 = time.perf_counter()
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise InvalidInputError(f"limit must be a whole number > 0, got {limit!r}")
        if token_budget is not None and (
            isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget <= 0
        ):
            raise InvalidInputError(f"token_budget must be a whole number of tokens > 0, got {token_budget!r}")
        if query is None:
            query = ""
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be text, got {type(query).__name__}")
        text = query[: self.settings.max_query_chars]
        tool = optional_text("tool", tool, max_chars=200)
        objective_type = optional_text("objective_type", objective_type, max_chars=200)
        entity_names, topic_names = names("entity", entities), names("topic", topics)
        now = self.now()
        t1 = t2 = time.perf_counter()
        items = self._rank_learnings(  # embeds the query itself, after the full-text query
            text, tool=tool, entities=entity_names, topics=topic_names,
            objective_type=objective_type, limit=limit, now=now,
        )
        budget = token_budget or self.settings.budget_learnings
        shown = pack(items, budget)
        for rank, item in enumerate(shown, start=1):
            item.rank = rank
        t3 = time.perf_counter()
        app_id = new_id()
        if not self.store.read_only:
            record = functools.partial(
                self.store.record_application,
                application_id=app_id, user_id=self.user, query=text, tool=tool, created_at=now,
                reasons=[f"{len(shown)} of {len(items)} ranked learnings fit {budget} tokens"],
                shown=[(i.id, i.rank, i.score, list(i.reasons)) for i in shown],
            )
            if self.settings.defer_application_writes:
                self.store.defer_write(record)  # flushed before anything reads Applications
            else:
                record()
        t4 = time.perf_counter()
        prefs = self._user_preferences_text()
        timings = {"validate": (t1 - t0) * 1e3, "embed": (t2 - t1) * 1e3}
        timings.update(self._retriever().timings_ms)
        timings.update({"rank_total": (t3 - t2) * 1e3, "record": (t4 - t3) * 1e3, "total": (time.perf_counter() - t0) * 1e3})
        return AssembledContext(
            id=app_id, query=text, tool=tool, user_preferences=prefs, learnings=shown,
            budget_user_preferences=self.settings.budget_user_preferences, budget_learnings=budget,
            timings_ms=timings,
        )

    def _retriever(self) -> Retriever:
        """The per-Memory retrieval state (name index, user column cache, seeded RNG)."""
        retriever: Retriever | None = getattr(self, "_retriever_state", None)
        if retriever is None or retriever.store is not self.store:
            retriever = Retriever(self.store, self.settings)
            self._retriever_state = retriever
        return retriever

    def _rank_learnings(
        self,
        query: str,
        *,
        query_vector: np.ndarray | Callable[[], np.ndarray] | None = None,
        tool: str | None = None,
        entities: Sequence[str] = (),
        topics: Sequence[str] = (),
        objective_type: str | None = None,
        limit: int = 8,
        now: datetime | None = None,
    ) -> list[ScoredLearning]:
        """Ranked eligible learnings (no Application recorded); what ``search`` builds on.

        ``query_vector`` None with non-empty ``query`` embeds it during ranking, right after the
        full-text query: Kùzu's full-text search runs ~40 % slower right after a MiniLM call on 2
        cores (torch's worker threads still spin), while the embedding does not mind the order.
        """
        vector: np.ndarray | Callable[[], np.ndarray] | None = query_vector
        if vector is None and query.strip():
            vector = functools.partial(self._embed_one, query)
        return self._retriever().rank(
            user=self.user, query=query, query_vector=vector, now=now or self.now(),
            limit=limit, tool=tool, entities=entities, topics=topics, objective_type=objective_type,
        )

    # search and batch events (issue 4, search) ----------------------------------------------
    def record_events(self, items: Sequence[Mapping[str, Any]]) -> list[Event]:
        """Log many events at once: all validated first, embedded in one batch, one transaction.

        Each item holds ``record_event``'s arguments (``kind`` and ``content`` at least, e.g.
        ``{"kind": "message", "content": "...", "role": "Dana", "session_id": "s1"}``). Nothing
        is written if any item is invalid. Returns the events in the order given.
        """
        events: list[Event] = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping) or "kind" not in item:
                raise InvalidInputError(f"item {i} must be a dict with at least 'kind' (and 'content')")
            args = dict(item)
            kind, content = args.pop("kind"), args.pop("content", "")
            defaults: dict[str, Any] = {
                "tool": None, "role": None, "objective_id": None, "session_id": None, "created_at": None,
                "entities": (), "success": None, "metadata": None, "direction": None, "is_owner": False,
            }
            unknown = sorted(set(args) - set(defaults))
            if unknown:
                raise InvalidInputError(f"item {i}: unknown field(s) {', '.join(unknown)}; use {', '.join(defaults)}")
            defaults.update(args)
            try:
                events.append(self._make_event(kind, content, **defaults))
            except InvalidInputError as e:
                raise InvalidInputError(f"item {i}: {e}") from e
        if not events:
            return []
        vectors = np.asarray(self.embedder.embed([e.content for e in events]), dtype=np.float32)
        self.store.insert_events(list(zip(events, vectors)))
        return events

    def search(
        self,
        query: str = "",
        *,
        k: int = 10,
        over: str = "learnings",
        tool: str | None = None,
        entities: Iterable[str] = (),
        topics: Iterable[str] = (),
    ) -> list[Hit]:
        """Search this user's learnings, events, or both; best first, at most ``k`` hits.

        ``over="events"`` ranks events by vector, full-text, entity/tool links and session
        neighbours (see :mod:`graphmem.retrieve.search`); ``over="learnings"`` uses the
        context pipeline's ranking (eligible learnings only) without recording an Application;
        ``over="all"`` merges both by score scaled to the best hit of each list. Each hit has
        ``.id .kind .node .score .reasons``. An empty query needs ``tool`` or ``entities`` (then
        the linked events / learnings come back). Query text longer than
        ``Settings.max_query_chars`` is truncated to that length (not an error).
        """
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise InvalidInputError(f"k must be a whole number > 0, got {k!r}")
        require_choice("over", over, ("learnings", "events", "all"))
        if query is None:
            query = ""
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
        text = query.strip()[: self.settings.max_query_chars]
        tool_name = optional_text("tool", tool, max_chars=200)
        entity_names = tuple(names("entity", entities))
        topic_names = tuple(names("topic", topics))
        if not text and not tool_name and not entity_names and not topic_names:
            raise InvalidInputError("search needs query text, or a tool, entities or topics to anchor on")
        hits: list[Hit] = []
        if over in ("events", "all"):
            searcher = EventSearch(self.store, self.embedder, self.settings, self.user)
            hits.extend(_scaled(searcher.search(text, k=k, tool=tool_name, entities=entity_names), over))
        if over in ("learnings", "all"):
            hits.extend(_scaled(self._search_learnings(text, k, tool_name, entity_names, topic_names), over))
        hits.sort(key=lambda h: -h.score)
        return hits[:k]

    def _search_learnings(
        self, text: str, k: int, tool: str | None, entities: tuple[str, ...], topics: tuple[str, ...]
    ) -> list[Hit]:
        """Learnings ranked by the context pipeline (no Application recorded)."""
        scored = self._rank_learnings(text, tool=tool, entities=entities, topics=topics, limit=k)
        return [
            Hit(id=s.learning.id, kind="learning", node=s.learning, score=float(s.score), reasons=list(s.reasons))
            for s in scored
        ]

    # --- summaries (issue 5) -------------------------------------------------------------------
    @property
    def _summaries(self) -> SummaryService:
        """This Memory's summary service (created on first use; never shared with for_user copies)."""
        service = self.__dict__.get("_summary_service")
        if service is None or service.memory is not self:
            service = SummaryService(self)
            self.__dict__["_summary_service"] = service
        return service

    def refresh_summaries(self, force: bool = False, *, all_users: bool = False) -> list[Summary]:
        """Refresh the summaries whose staleness reached their threshold; return the refreshed ones.

        Incremental: the summarizer gets the previous text and only the learnings written since
        (corrections first, then newest), plus those that no longer apply. ``force`` rebuilds every
        summary of this user from scratch. Nothing stale: no LLM call, returns ``[]``.
        ``all_users`` refreshes every user's due summaries (the background refresher).
        """
        return self._summaries.refresh(force=bool(force), all_users=bool(all_users))

    def summary(self, key: str) -> Summary:
        """One of this user's summaries by key: ``"user_preferences"``, ``"learning:tool:<name>"``,
        ``"learning:topic:<name>"`` or ``"learning:objective_type:<type>"``."""
        return self._summaries.get(require_text("key", key, max_chars=500))

    def summaries(self) -> list[Summary]:
        """All of this user's summaries, by key."""
        return self._summaries.list()

    def _user_preferences_text(self) -> str:
        """The text of this user's ``user_preferences`` summary, "" until one exists."""
        return self._summaries.user_preferences_text()

    # --- outcomes and lifecycle (issue 6) ------------------------------------------------------
    def record_outcome(
        self,
        context_id: str,
        *,
        success: bool | None = None,
        rating: str | None = None,
        reasons: Iterable[str] | str = (),
    ) -> OutcomeReport:
        """Credit or blame exactly the learnings shown in one context (``ctx.id``).

        ``rating`` good|okay|bad decides when given (okay: neutral, counts as applied only),
        else ``success``. Accepted: helpful+1, validations+1, score+0.03, confidence+0.015;
        rejected: harmful+1, score-0.05, confidence-0.025 (clamped to [0, 1]). ``reasons`` are
        tags (fallback, retry, regenerate... feed the lifecycle windows). The query's Pattern
        gets per-learning EFFECTIVE_FOR counts. One transaction. A second outcome for the same
        context raises InvalidInputError (an implicit one may be replaced once); an unknown
        context raises NotFoundError.
        """
        from graphmem import outcomes

        return outcomes.record_outcome(self, context_id, success=success, rating=rating, reasons=reasons)

    def run_cycle(self) -> CycleReport:
        """Run the lifecycle once: windows and status transitions, hypothesis → belief,
        TTL pruning, tiers and confidence decay. Returns what changed (CycleReport)."""
        from graphmem import lifecycle

        return lifecycle.run_cycle(self)

    def pattern_scores(self, query_embedding: Any, user: str | None = None) -> dict[str, float]:
        """Per-pattern effectiveness (seed 002): ``{learning_id: helpful/(helpful+harmful)}`` in
        the stored Pattern nearest the query embedding (cosine >= Settings.pattern_similarity),
        {} when none is near. Ranking adds ``Settings.pattern_boost * value``."""
        from graphmem import outcomes

        return outcomes.pattern_scores(self, np.asarray(query_embedding, dtype=np.float32), user)

    def _after_event(self, event: Event) -> None:
        """The implicit outcome tracker (seed 003): tool results become outcomes of recent contexts."""
        from graphmem import outcomes

        if event.kind in ("tool_call", "tool_result") and event.tool_name:
            outcomes.after_event(self, event)


    # --- promotion, insights, export (issue 6) ----------------------------------------------
    def promote(self, path: str | os.PathLike[str], *, min_confidence: float | None = None) -> PromoteReport:
        """Write this user's pinned, high-confidence, active learnings into the marked section
        of an instruction file (AGENTS.md, CLAUDE.md...); idempotent. Returns a PromoteReport."""
        from graphmem import promote

        return promote.promote(self, path, min_confidence=min_confidence)

    def sweep(self, paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> SweepReport:
        """Remove promoted lines whose learnings were since contradicted, went stale or were
        retired; archive and log them; keep hand-written lines. Returns a SweepReport."""
        from graphmem import promote

        targets = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        return promote.sweep(self, targets)

    def insights(self, *, timeline: int = 50) -> Insights:
        """Acceptance, pass/fallback/retry rates, rating coverage, per-learning standing,
        counts per status and tier, active canaries and the latest transitions (Insights)."""
        from graphmem import insights

        return insights.compute(self, timeline=timeline)

    def training_pairs(self, *, min_confidence: float = 0.0, feedback: str = "any") -> list[dict[str, Any]]:
        """Successful episodes as chat-format training records (seed 004)."""
        from graphmem import export

        return export.training_pairs(self, min_confidence=min_confidence, feedback=feedback)[0]

    def export_jsonl(
        self, path: str | os.PathLike[str], *, min_confidence: float = 0.0, feedback: str = "any"
    ) -> ExportReport:
        """Write :meth:`training_pairs` to a JSONL file. Returns an ExportReport."""
        from graphmem import export

        return export.export_jsonl(self, path, min_confidence=min_confidence, feedback=feedback)

    def export_graphml(self, path: str | os.PathLike[str]) -> ExportReport:
        """Write the whole graph as GraphML through networkx. Returns an ExportReport."""
        from graphmem import export

        return export.export_graphml(self, path)

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


def _scaled(hits: list[Hit], over: str) -> list[Hit]:
    """For over="all": scores divided by the list's best, so learnings and events compare."""
    if over != "all" or not hits:
        return hits
    top = max(h.score for h in hits) or 1.0
    return [h.model_copy(update={"score": h.score / top}) for h in hits]


def _default_llm() -> Any:
    from graphmem.llm import OfflineLLM

    return OfflineLLM()
