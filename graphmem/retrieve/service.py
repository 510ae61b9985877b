"""The retrieval service: context() and search() over one user's learnings and events.

``Memory.context`` / ``Memory.search`` delegate here; the ranking itself lives in the other
modules of :mod:`graphmem.retrieve`.
"""

from __future__ import annotations

import concurrent.futures
import copy
import functools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.errors import InvalidInputError
from graphmem.inputs import names, optional_string, optional_text, query_text, require_choice
from graphmem.models import new_id
from graphmem.retrieve import AssembledContext, Retriever, ScoredLearning, learned
from graphmem.retrieve.context import pack
from graphmem.retrieve.search import EventSearch, Hit

if TYPE_CHECKING:
    from graphmem.deps import Deps


class RetrievalService:
    """context and search for ``deps.user``.

    Args:
        deps: the dependencies.
        preferences: returns the text of the user's ``user_preferences`` summary ("" until one exists).
        retriever: retrieval state to reuse (name index, user column cache, seeded RNG); made
            on first use otherwise.
        aside: the helper thread to reuse (a Memory rebuilding its services keeps its own).
    """

    def __init__(
        self, deps: Deps, preferences: Callable[[], str], retriever: Retriever | None = None, aside: Aside | None = None,
    ) -> None:
        self.deps = deps
        self.preferences = preferences
        self._state = retriever
        self._features = learned.FeatureCache()
        self._fusion: dict[str, Any] | None = None  # the user's learned fusion state, read on first use
        self._aside = aside or Aside()  # runs ranking's vector-free part while context() embeds the query

    def close(self) -> None:
        """Stop the helper thread (``Settings.context_overlap_embedding``); a later context()
        runs everything in the caller's thread."""
        self._aside.close()

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
        with self.deps.store.hold_writer():
            return self._context(
                query, tool=tool, entities=entities, topics=topics, objective_type=objective_type,
                limit=limit, token_budget=token_budget, session_id=session_id,
            )

    def _context(
        self, query: str, *, tool: str | None, entities: Iterable[str], topics: Iterable[str],
        objective_type: str | None, limit: int, token_budget: int | None, session_id: str | None,
    ) -> AssembledContext:
        t0 = time.perf_counter()
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise InvalidInputError(f"limit must be a whole number > 0, got {limit!r}")
        if token_budget is not None and (
            isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget <= 0
        ):
            raise InvalidInputError(f"token_budget must be a whole number of tokens > 0, got {token_budget!r}")
        text = query_text("query", query, max_chars=self.deps.settings.max_query_chars)
        tool = optional_text("tool", tool, max_chars=200)
        objective_type = optional_text("objective_type", objective_type, max_chars=200)
        entity_names, topic_names = names("entity", entities), names("topic", topics)
        session_id = optional_string("session_id", session_id)
        now = self.deps.now()
        t1 = t2 = time.perf_counter()
        items = self.rank_learnings(  # embeds the query itself, after the full-text query
            text, tool=tool, entities=entity_names, topics=topic_names,
            objective_type=objective_type, limit=limit, now=now,
        )
        budget = token_budget or self.deps.settings.budget_learnings
        shown = pack(items, budget)
        for rank, item in enumerate(shown, start=1):
            item.rank = rank
        t3 = time.perf_counter()
        app_id = new_id()
        if not self.deps.store.read_only:
            record = functools.partial(
                self.deps.store.record_application,
                application_id=app_id, user_id=self.deps.user, query=text, tool=tool, created_at=now,
                reasons=[f"{len(shown)} of {len(items)} ranked learnings fit {budget} tokens"],
                session_id=session_id,
                shown=[(i.id, i.rank, i.score, list(i.reasons)) for i in shown],
            )
            if self.deps.settings.defer_application_writes:
                self.deps.store.defer_write(record)  # flushed before anything reads Applications
            else:
                record()
        if self.deps.settings.fusion_learning and shown:
            k = float(self.deps.settings.rrf_k)
            self._features.put(app_id, {i.id: learned.features(i.signals, k) for i in shown})
        t4 = time.perf_counter()
        prefs = self.preferences()
        timings = {"validate": (t1 - t0) * 1e3, "embed": (t2 - t1) * 1e3}
        timings.update(self.retriever().timings_ms)
        timings.update({"rank_total": (t3 - t2) * 1e3, "record": (t4 - t3) * 1e3, "total": (time.perf_counter() - t0) * 1e3})
        return AssembledContext(
            id=app_id, query=text, tool=tool, user_preferences=prefs, learnings=shown,
            budget_user_preferences=self.deps.settings.budget_user_preferences, budget_learnings=budget,
            timings_ms=timings,
        )

    def retriever(self) -> Retriever:
        """The retrieval state (name index, user column cache, seeded RNG), remade when the
        store or the settings changed."""
        retriever = self._state
        if retriever is None or retriever.store is not self.deps.store or retriever.settings is not self.deps.settings:
            retriever = Retriever(self.deps.store, self.deps.settings)
            self._state = retriever
        return retriever

    def rank_learnings(
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

        ``query_vector`` None with non-empty ``query`` embeds it during ranking; with
        ``Settings.context_overlap_embedding`` the filters and the full-text search run meanwhile
        in this service's helper thread (the same results; see :class:`Aside`).
        """
        vector: np.ndarray | Callable[[], np.ndarray] | None = query_vector
        if vector is None and query.strip():
            vector = functools.partial(self.deps.embed_one, query)
        aside = self._aside.submit if self.deps.settings.context_overlap_embedding else None
        with self.deps.store.snapshot():  # the mirrors and the rows fetched agree
            return self.retriever().rank(
                user=self.deps.user, query=query, query_vector=vector, now=now or self.deps.now(),
                limit=limit, tool=tool, entities=entities, topics=topics, objective_type=objective_type,
                fusion=self.fusion_weights() if self.deps.settings.fusion_learning else None, aside=aside,
            )

    # --- learned fusion (graphmem/retrieve/learned.py) ----------------------------------------
    def fusion_state(self) -> dict[str, Any]:
        """The user's learned fusion state: ``weights`` (multiplier per signal), ``best``,
        ``examples``, ``updates``, ``rollbacks`` (defaults until an outcome moved them)."""
        return copy.deepcopy(self._fusion_current())

    def _fusion_current(self) -> dict[str, Any]:
        if self._fusion is None:
            self._fusion = self.deps.store.fusion_state(self.deps.user) or learned.new_state()
        return self._fusion

    def fusion_weights(self) -> dict[str, float]:
        """The learned multiplier of every signal (1.0: the Settings weight unchanged)."""
        return {**learned.default_weights(), **self._fusion_current()["weights"]}

    def learn_fusion(
        self, context_id: str, verdict: str, *, used: Sequence[str] | None, helpful: Sequence[str],
        harmful: Sequence[str],
    ) -> str:
        """Move the user's fusion multipliers by one outcome of a context this service served
        (``Settings.fusion_learning``); returns "off", "unknown_context", "no_signal", "kept" or
        "rolled_back" (the ratchet, see :mod:`graphmem.retrieve.learned`)."""
        settings = self.deps.settings
        if not settings.fusion_learning:
            return "off"
        shown = self._features.pop(context_id)
        if not shown:
            return "unknown_context"
        ys = learned.labels(list(shown), verdict, used, helpful, harmful)
        ids = [i for i in shown if i in ys]
        state, status = learned.learn(self._fusion_current(), [shown[i] for i in ids], [ys[i] for i in ids], settings)
        if status == "no_signal":
            return status
        self._fusion = state
        if not self.deps.store.read_only:
            with self.deps.store.transaction():
                self.deps.store.set_fusion_state(self.deps.user, state, self.deps.now())
        return status

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
        text = query_text("query", query).strip()[: self.deps.settings.max_query_chars]
        tool_name = optional_text("tool", tool, max_chars=200)
        entity_names = tuple(names("entity", entities))
        topic_names = tuple(names("topic", topics))
        if not text and not tool_name and not entity_names and not topic_names:
            raise InvalidInputError("search needs query text, or a tool, entities or topics to anchor on")
        if over in ("events", "all") and self.deps.store.pending_embeddings():
            from graphmem.events import embedding_of  # events recorded with event_embed_later

            self.deps.store.drain_event_embeddings(embedding_of(self.deps.embedder))
        with self.deps.store.hold_writer():
            return self._search(text, k, over, tool_name, entity_names, topic_names)

    def _search(
        self, text: str, k: int, over: str, tool_name: str | None, entity_names: tuple[str, ...],
        topic_names: tuple[str, ...],
    ) -> list[Hit]:
        hits: list[Hit] = []
        if over in ("events", "all"):
            searcher = EventSearch(self.deps.store, self.deps.embedder, self.deps.settings, self.deps.user)
            with self.deps.store.snapshot():
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
        scored = self.rank_learnings(text, tool=tool, entities=entities, topics=topics, limit=k)
        return [
            Hit(id=s.learning.id, kind="learning", node=s.learning, score=float(s.score), reasons=list(s.reasons))
            for s in scored
        ]


class Aside:
    """One helper thread that runs a callable while the caller does something else (context()
    embeds the query meanwhile: torch releases the GIL inside its operators).

    ``submit`` returns None when the thread is busy with another call's work (concurrent
    context() calls on one Memory) or after ``close``: the caller then runs the work itself, so
    a call never waits behind another. The thread is started on first use.
    """

    def __init__(self) -> None:
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._free = threading.Lock()  # held while the thread runs a call's work
        self._guard = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any] | None:
        """``fn`` started in the helper thread, or None (run it yourself)."""
        if self._closed or not self._free.acquire(blocking=False):
            return None
        try:
            with self._guard:
                if self._closed:
                    raise RuntimeError("closed")
                if self._pool is None:
                    self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="graphmem-context")
                future = self._pool.submit(fn)
        except RuntimeError:  # closed meanwhile (or the interpreter is shutting down)
            self._free.release()
            return None
        future.add_done_callback(lambda _f: self._free.release())
        return future

    def close(self) -> None:
        """Stop the thread (after the work it runs); later ``submit`` calls return None."""
        with self._guard:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


def _real(hits: list[Hit]) -> list[Hit]:
    """The hits something found: a row with score 0 and no reason is padding, not a hit."""
    return [h for h in hits if h.score > 0 or h.reasons]


def _scaled(hits: list[Hit], over: str) -> list[Hit]:
    """For over="all": scores divided by the list's best, so learnings and events compare."""
    if over != "all" or not hits:
        return hits
    top = max(h.score for h in hits) or 1.0
    return [h.model_copy(update={"score": h.score / top}) for h in hits]
