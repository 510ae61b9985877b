"""The learnings service: add, merge, update, retire, supersede and list learnings.

``Memory.add_learning(...)`` etc. delegate here; other services (feedback, objectives,
reflection, lifecycle, promotion...) build learnings and apply changes through the same
:class:`LearningService`. Every write goes through one transaction together with its edges and
the learnings-changed hook (:meth:`graphmem.deps.Deps.on_learnings_changed`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.embed import embed_with_progress
from graphmem.embed_workers import embed_one_beside
from graphmem.errors import InvalidInputError
from graphmem.inputs import (
    model_errors,
    names,
    optional_id,
    optional_string,
    optional_text,
    require_bool,
    require_choice,
    require_count,
    require_id,
    require_items,
    require_text,
    require_time,
    require_ttl,
    require_unit,
)
from graphmem.learn.screening import classify_text
from graphmem.models import (
    LEARNING_KINDS,
    SENTIMENTS,
    SOURCE_TYPES,
    STATUSES,
    TIERS,
    Learning,
    LearningLinks,
    Transition,
)
from graphmem.store.text import content_key
from graphmem.trust import own_event, own_objective, visible_learning, writable_learning

if TYPE_CHECKING:
    from graphmem.deps import Deps

log = logging.getLogger("graphmem.learn")

_UPDATABLE = {
    "content", "recommendation", "applies_when", "kind", "sentiment", "confidence", "score",
    "status", "canary_allocation", "tier", "helpful", "harmful", "validations", "contradictions",
    "ttl_days", "shared", "source_type",
}


class LearningService:
    """add_learning, add_learnings, get/update/retire_learning, supersede, learnings, and the
    write steps other services share (make_learning, apply_changes, archive_superseded)."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps

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
        The learning and its edges are written in one transaction. Its text is screened for
        injected instructions (:mod:`graphmem.learn.screening`, classifier only): an ``active`` or
        ``canary`` learning the screen doubts or refuses is stored as ``candidate`` instead, with a
        logged warning; nothing a developer adds is ever dropped.
        """
        learning, links = self.make_learning(
            content, kind=kind, tool=tool, entities=entities, topics=topics,
            objective_type=objective_type, recommendation=recommendation, applies_when=applies_when,
            sentiment=sentiment, source_type=source_type, confidence=confidence, status=status,
            tier=tier, shared=shared, ttl_days=ttl_days, source_event_id=source_event_id,
            objective_id=objective_id, created_at=created_at,
        )
        learning = self.screened(learning)
        text = _embedding_text(learning)
        # computed on a worker while the rest is written, unless the store asks for it first
        # (an in-memory Kùzu database: store.embed_first)
        if self.deps.settings.embed_beside_writes and not self.deps.store.embed_first:
            vector: np.ndarray | Callable[[], np.ndarray] = embed_one_beside(self.deps.embedder, text)
        else:
            vector = self.deps.embed_one(text)
        return self.store_learning(learning, links, vector)

    def add_learnings(
        self, items: Sequence[Mapping[str, Any]], *, progress: Callable[[int, int], None] | None = None
    ) -> list[Learning]:
        """Add many learnings at once: all validated first, embedded in one batch, one transaction.

        Each item holds add_learning's arguments (``content`` required). Nothing is written if
        any item is invalid. ``progress``, if given, is called with (items embedded so far, total)
        as the embedding proceeds (the slow part), e.g. to drive a progress bar.
        """
        prepared = []
        for i, item in enumerate(require_items("items", items)):
            if not isinstance(item, Mapping) or "content" not in item:
                raise InvalidInputError(f"item {i} must be a dict with at least 'content'")
            args = dict(item)
            try:
                made, made_links = self.make_learning(args.pop("content"), **args)
                prepared.append((self.screened(made), made_links))
            except TypeError as e:
                raise InvalidInputError(f"item {i}: {e}") from e
            except InvalidInputError as e:
                raise type(e)(f"item {i}: {e}") from e
        if not prepared:
            return []
        vectors = embed_with_progress(self.deps.embedder, [_embedding_text(l) for l, _ in prepared], progress)
        fresh: dict[tuple[str, str], tuple[Learning, LearningLinks, np.ndarray]] = {}
        merges: list[tuple[int, str | tuple[str, str], Learning, LearningLinks]] = []  # (position, into, new)
        out: list[Learning | tuple[str, str] | None] = []  # a new learning's key, or None until merged
        with self.deps.store.transaction():
            for (learning, links), vector in zip(prepared, vectors):
                key = (learning.user_id, content_key(learning.content))
                existing_id = None if key in fresh else self.deps.store.learning_catalog.find_exact(*key)
                if key in fresh or existing_id is not None:  # a duplicate: merged into the first below
                    merges.append((len(out), key if existing_id is None else existing_id, learning, links))
                    out.append(key if existing_id is None else None)
                    continue
                fresh[key] = (learning, links, np.asarray(vector, dtype=np.float32))
                out.append(key)
            # the new learnings first (their edges in one COPY per edge table)
            self.deps.store.insert_learnings([(l, v, k) for l, k, v in fresh.values()])
            if fresh:
                self.deps.on_learnings_changed([l for l, _, _ in fresh.values()], change="created")
            # then, as if added one by one: each duplicate counts a validation and adds new links
            final = {key: learning for key, (learning, _, _) in fresh.items()}
            for position, into, learning, links in merges:
                if isinstance(into, tuple):
                    final[into] = self.merge_into(final[into], learning, links)
                else:
                    out[position] = self.merge_into(self.deps.store.get_learning(into), learning, links)
        self.deps.after_write()
        return [final[item] if isinstance(item, tuple) else item for item in out if item is not None]

    def screened(self, learning: Learning) -> Learning:
        """``learning``, kept as a candidate when the injection screen doubts or refuses it."""
        if learning.status not in ("active", "canary"):
            return learning
        text = " ".join(p for p in (_embedding_text(learning), learning.applies_when) if p)
        found = classify_text(text, self.deps.settings)
        if found.decision == "pass":
            return learning
        log.warning("graphmem: add_learning keeps %.80r as a candidate instead of %s (%s)",
                    learning.content, learning.status, found.summary)
        return learning.model_copy(update={"status": "candidate", "canary_allocation": 1.0})

    def make_learning(
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
        limit = self.deps.settings.max_content_chars
        text = require_text("content", content, max_chars=limit)
        if ttl_days is None:
            ttl_days = self.deps.settings.ttl_days.get(kind) if kind in LEARNING_KINDS else None
        else:
            ttl_days = require_ttl("ttl_days", ttl_days)
        when = require_time("created_at", created_at) or self.deps.now().astimezone(UTC)
        shared = require_bool("shared", shared)
        objective_id = optional_id("objective_id", objective_id)
        if objective_id is not None:
            own_objective(self.deps, objective_id)  # another user's objective: NotFoundError
        source_event_id = optional_id("source_event_id", source_event_id)
        if source_event_id is not None:
            own_event(self.deps, source_event_id)  # unknown or another user's: NotFoundError
        with model_errors("learning"):
            learning = Learning(
                user_id=self.deps.user,
                shared=shared,
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
                canary_allocation=self.deps.settings.canary_min_allocation if status == "canary" else 1.0,
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

    def store_learning(self, learning: Learning, links: LearningLinks,
                       embedding: np.ndarray | Callable[[], np.ndarray]) -> Learning:
        """Insert, or merge into an existing exact duplicate.

        The duplicate check runs inside the write transaction, so threads adding the same
        content at once store one learning (the others count validations on it). ``embedding``
        may be a function returning the vector (being computed meanwhile): the store calls it
        just before the commit. An embedder error rolls the write back, a merge's too.
        """
        with self.deps.store.transaction():
            existing_id = self.deps.store.learning_catalog.find_exact(learning.user_id, content_key(learning.content))
            if existing_id is not None:
                if callable(embedding):
                    embedding()  # a merge keeps the stored vector, but an embedder error still refuses the write
                stored = self.merge_into(self.deps.store.get_learning(existing_id), learning, links)
            else:
                with self.deps.store.joined_writes():  # the CREATE and the summary bump: one statement
                    self.deps.store.insert_learning(learning, embedding, links)
                    self.deps.on_learnings_changed([learning], change="created")
                stored = learning
        self.deps.after_write()
        return stored

    def merge_into(self, existing: Learning, new: Learning, links: LearningLinks) -> Learning:
        """Count a validation on ``existing`` and add the new learning's links to it."""
        with self.deps.store.transaction():  # joins the caller's: ``existing`` is re-read under the lock
            existing = self.deps.store.get_learning(existing.id)
            return self._merge_in_transaction(existing, new, links)

    def _merge_in_transaction(self, existing: Learning, new: Learning, links: LearningLinks) -> Learning:
        merged = merged_learning(existing, new, self.deps.now())
        extra = LearningLinks(
            tool=new.tool if new.tool and new.tool != existing.tool else None,
            topics=[t for t in new.topics if t not in existing.topics],
            entities=[e for e in new.entities if e not in existing.entities],
            objective_type=new.objective_type if new.objective_type != existing.objective_type else None,
            objective_id=links.objective_id,
            source_event_id=links.source_event_id,
        )
        self.deps.store.save_learning(merged)
        self.deps.store.add_links(merged.id, extra)
        self.deps.on_learnings_changed([merged], change="merged")
        return merged

    def get_learning(self, learning_id: str) -> Learning:
        """One of this user's (or a shared) learning by id; another user's private learning is
        NotFoundError, exactly like an unknown id."""
        return visible_learning(self.deps, require_id("learning_id", learning_id))

    def update_learning(self, learning_id: str, **changes: Any) -> Learning:
        """Change fields of a learning; status and tier changes bump ``version`` and are logged.

        Updatable: content, recommendation, applies_when, kind, sentiment, confidence, score,
        status, canary_allocation, tier, helpful, harmful, validations, contradictions,
        ttl_days, shared, source_type. Only the owner (or an ``admin`` Memory) may change a
        learning: another user's shared one raises PermissionDeniedError.
        """
        unknown = sorted(set(changes) - _UPDATABLE)
        if unknown:
            raise InvalidInputError(
                f"cannot update {', '.join(unknown)}; updatable fields: {', '.join(sorted(_UPDATABLE))}"
            )
        if not changes:
            raise InvalidInputError("nothing to update; pass fields such as status='canary' or helpful=3")
        current = writable_learning(self.deps, learning_id)
        clean = self._validate_changes(changes)
        return self.apply_changes(current, clean, reason="update_learning")

    def _validate_changes(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        limit = self.deps.settings.max_content_chars
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
                clean[key] = None if value is None else require_ttl("ttl_days", value)
            elif key == "shared":
                clean[key] = require_bool("shared", value)
        return clean

    def apply_changes(self, current: Learning, clean: Mapping[str, Any], *, reason: str) -> Learning:
        """Write validated changes; log status/tier transitions; re-embed changed text.

        The learning is re-read inside the write transaction and the changes applied to that
        copy, so a concurrent write (an outcome, a merge) is never overwritten with stale fields.
        """
        now = self.deps.now()
        text_changed = any(f in clean for f in ("content", "recommendation", "applies_when"))
        planned = self._changed_learning(current, clean, now)
        embedding = self.deps.embed_one(_embedding_text(planned)) if text_changed else None
        with self.deps.store.transaction():
            fresh = self.deps.store.get_learning(current.id)
            updated = self._changed_learning(fresh, clean, now)
            if text_changed and _embedding_text(updated) != _embedding_text(planned):
                embedding = self.deps.embed_one(_embedding_text(updated))
            self.deps.store.save_learning(updated, embedding)
            for field in ("status", "tier"):
                old, new = str(getattr(fresh, field)), str(getattr(updated, field))
                if old != new:
                    self.deps.store.log_transition(
                        Transition(learning_id=updated.id, field=field, old=old, new=new, reason=reason,
                                   version=updated.version, created_at=now)
                    )
            self.deps.on_learnings_changed([updated], change="retired" if updated.status == "disabled" else "updated")
        self.deps.after_write()
        return updated

    def _changed_learning(self, current: Learning, clean: Mapping[str, Any], now: datetime) -> Learning:
        """``current`` with the validated changes applied (version bumped on a status/tier change)."""
        moved = any(f in clean and clean[f] != getattr(current, f) for f in ("status", "tier"))
        update = dict(clean)
        update["updated_at"] = now
        if moved:
            update["version"] = current.version + 1
        if clean.get("status") == "canary" and "canary_allocation" not in clean and current.status != "canary":
            update["canary_allocation"] = self.deps.settings.canary_min_allocation
        if clean.get("status") == "active" and "canary_allocation" not in clean:
            update["canary_allocation"] = 1.0
        updated = current.model_copy(update=update)
        with model_errors("learning update"):
            Learning.model_validate(updated.model_dump())  # re-check the combined result
        return updated

    def retire_learning(self, learning_id: str, *, reason: str = "retired") -> Learning:
        """Take a learning out of use for good: status disabled, tier archive. Kept (delete it
        with :meth:`forget_learning`). Only the owner (or an ``admin`` Memory) may retire it."""
        reason = require_text("reason", reason, max_chars=1000)
        current = writable_learning(self.deps, learning_id)
        return self.apply_changes(current, {"status": "disabled", "tier": "archive"}, reason=reason)

    def supersede(self, new_id: str, old_id: str, *, reason: str = "superseded") -> Learning:
        """Mark ``old_id`` as replaced by ``new_id``: a SUPERSEDES edge, the older one archived.

        Nothing is deleted: the older learning keeps its history, gets ``superseded_by`` and tier
        archive (a logged transition), and is never returned by context() again. Returns it.
        Both must be this user's (or the Memory an ``admin``): PermissionDeniedError otherwise.
        """
        reason = require_text("reason", reason, max_chars=1000)
        new, old = writable_learning(self.deps, new_id), writable_learning(self.deps, old_id)
        if new.id == old.id:
            raise InvalidInputError("a learning cannot supersede itself; pass two different ids")
        if old.superseded_by == new.id:
            return old
        with self.deps.store.transaction():
            updated = self.archive_superseded(old, new.id, reason)
            self.deps.on_learnings_changed([updated], change="retired")
        self.deps.after_write()
        return updated

    def archive_superseded(self, old: Learning, new_id: str, reason: str) -> Learning:
        """Inside a transaction: archive ``old``, link new SUPERSEDES old, log the transition."""
        now = self.deps.now()
        updated = old.model_copy(update={
            "tier": "archive", "superseded_by": new_id, "updated_at": now, "version": old.version + 1,
        })
        self.deps.store.save_learning(updated)
        self.deps.store.link_conflict("SUPERSEDES", new_id, old.id, reason, now)
        self.deps.store.log_transition(Transition(
            learning_id=old.id, field="tier", old=old.tier, new="archive",
            reason=f"superseded by {new_id}: {reason}", version=updated.version, created_at=now,
        ))
        return updated

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
        tool, topic = optional_string("tool", tool), optional_string("topic", topic)
        entity = optional_string("entity", entity)
        if status is not None:
            require_choice("status", status, STATUSES)
        if tier is not None:
            require_choice("tier", tier, TIERS)
        if kind is not None:
            require_choice("kind", kind, LEARNING_KINDS)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
            raise InvalidInputError(f"limit must be a whole number > 0, got {limit!r}")
        return self.deps.store.find_learnings(
            user_id=self.deps.user, status=status, tier=tier, tool=tool, topic=topic, entity=entity,
            kind=kind, limit=limit,
        )


def merged_learning(existing: Learning, new: Learning, now: datetime) -> Learning:
    """``existing`` after ``new`` repeated it: a validation, and any detail it lacked."""
    return existing.model_copy(
        update={
            "validations": existing.validations + 1,
            "last_validated_at": now,
            "updated_at": now,
            "confidence": max(existing.confidence, new.confidence),
            "recommendation": existing.recommendation or new.recommendation,
            "applies_when": existing.applies_when or new.applies_when,
            "tool": existing.tool or new.tool,
            "objective_type": existing.objective_type or new.objective_type,
            "topics": existing.topics + [t for t in new.topics if t not in existing.topics],
            "entities": existing.entities + [e for e in new.entities if e not in existing.entities],
        }
    )


def _embedding_text(learning: Learning) -> str:
    parts = [learning.content]
    if learning.recommendation and learning.recommendation not in learning.content:
        parts.append(learning.recommendation)
    return " ".join(parts)


def _union_links(a: LearningLinks, b: LearningLinks) -> LearningLinks:
    """The edges of two learnings folded into one."""
    return LearningLinks(
        tool=a.tool or b.tool, topics=_union(a.topics, b.topics), entities=_union(a.entities, b.entities),
        objective_type=a.objective_type or b.objective_type, objective_id=a.objective_id or b.objective_id,
        source_event_id=a.source_event_id or b.source_event_id,
    )


def _union(a: Sequence[str], b: Sequence[str]) -> list[str]:
    return list(a) + [x for x in b if x not in a]
