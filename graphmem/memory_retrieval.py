"""The retrieval part of :class:`graphmem.Memory`: context(), search() and batch events.

Kept apart from memory.py only for size; ``Memory`` inherits these methods. The ranking itself
lives in graphmem/retrieve/.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.embed import embed_with_progress
from graphmem.errors import InvalidInputError
from graphmem.inputs import names, optional_string, optional_text, query_text, require_choice, require_items
from graphmem.models import Event, new_id
from graphmem.retrieve import AssembledContext, Retriever, ScoredLearning
from graphmem.retrieve.context import pack
from graphmem.retrieve.entities import event_mentions
from graphmem.retrieve.search import EventSearch, Hit

if TYPE_CHECKING:
    from graphmem.config import Settings
    from graphmem.embed import Embedder
    from graphmem.store import KuzuGraphStore


class RetrievalAPI:
    """context, search, record_events (mixed into Memory)."""

    store: KuzuGraphStore
    settings: Settings
    embedder: Embedder
    user: str
    now: Callable[[], datetime]
    _embed_one: Callable[[str], np.ndarray]

    def _user_preferences_text(self) -> str:
        raise NotImplementedError  # provided by Memory

    def _make_event(self, *args: Any, **kwargs: Any) -> Event:
        raise NotImplementedError  # provided by Memory

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
        session_id: str | None = None,
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
        ``session_id`` is stored on the Application (session metrics count it).
        Query text beyond ``Settings.max_query_chars`` is ignored (truncated), not an error.
        """


        t0 = time.perf_counter()
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise InvalidInputError(f"limit must be a whole number > 0, got {limit!r}")
        if token_budget is not None and (
            isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget <= 0
        ):
            raise InvalidInputError(f"token_budget must be a whole number of tokens > 0, got {token_budget!r}")
        text = query_text("query", query, max_chars=self.settings.max_query_chars)
        tool = optional_text("tool", tool, max_chars=200)
        objective_type = optional_text("objective_type", objective_type, max_chars=200)
        entity_names, topic_names = names("entity", entities), names("topic", topics)
        session_id = optional_string("session_id", session_id)
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
                session_id=session_id,
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
        if retriever is None or retriever.store is not self.store or retriever.settings is not self.settings:
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
        with self.store.snapshot():  # the mirrors and the rows fetched agree
            return self._retriever().rank(
                user=self.user, query=query, query_vector=vector, now=now or self.now(),
                limit=limit, tool=tool, entities=entities, topics=topics, objective_type=objective_type,
            )

    # search and batch events (issue 4, search) ----------------------------------------------
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
                events.append(self._make_event(kind, content, **defaults))
            except InvalidInputError as e:
                raise type(e)(f"item {i}: {e}") from e
        if not events:
            return []
        vectors = embed_with_progress(self.embedder, [e.content for e in events], progress)
        found = event_mentions(self.store, self.settings, self.user, events)
        self.store.insert_events(list(zip(events, vectors)), found)
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
        text = query_text("query", query).strip()[: self.settings.max_query_chars]
        tool_name = optional_text("tool", tool, max_chars=200)
        entity_names = tuple(names("entity", entities))
        topic_names = tuple(names("topic", topics))
        if not text and not tool_name and not entity_names and not topic_names:
            raise InvalidInputError("search needs query text, or a tool, entities or topics to anchor on")
        hits: list[Hit] = []
        if over in ("events", "all"):
            searcher = EventSearch(self.store, self.embedder, self.settings, self.user)
            with self.store.snapshot():
                found = searcher.search(text, k=k, tool=tool_name, entities=entity_names)
            hits.extend(_scaled(_real(found), over))
        if over in ("learnings", "all"):
            found = self._search_learnings(text, k, tool_name, entity_names, topic_names)
            hits.extend(_scaled(_real(found), over))
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


def _real(hits: list[Hit]) -> list[Hit]:
    """The hits something found: a row with score 0 and no reason is padding, not a hit."""
    return [h for h in hits if h.score > 0 or h.reasons]


def _scaled(hits: list[Hit], over: str) -> list[Hit]:
    """For over="all": scores divided by the list's best, so learnings and events compare."""
    if over != "all" or not hits:
        return hits
    top = max(h.score for h in hits) or 1.0
    return [h.model_copy(update={"score": h.score / top}) for h in hits]
