"""Memory: the one public facade of graphmem.

``Memory`` opens the store (Kùzu), the embedder and the LLM, bundles them into one
:class:`~graphmem.deps.Deps` and hands it to the services that do the work: learnings
(graphmem/learnings.py), events (graphmem/events.py), retrieval (graphmem/retrieve/service.py),
summaries, outcomes, the lifecycle, prompt versions and distillation (graphmem/improve.py)...
It holds no logic of its own beyond argument checks: each method delegates to one service.
Every public method validates its input and raises a :class:`~graphmem.errors.GraphmemError`
subclass that says what to do; writes are transactional.

>>> mem = Memory(None, user="alice", embedder=HashEmbedder())   # None: in-memory database
>>> l = mem.add_learning("Keep emails under 3 paragraphs", tool="send_email")
>>> [x.content for x in mem.learnings(tool="send_email")]
['Keep emails under 3 paragraphs']
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from graphmem.config import Settings
from graphmem.deps import Deps
from graphmem.embed import Embedder, HashEmbedder, default_embedder
from graphmem.errors import InvalidInputError
from graphmem.events import EventService
from graphmem.export import ExportReport
from graphmem.improve import ImproveService
from graphmem.inputs import (
    check_string,
    cypher_params,
    require_bool,
    require_choice,
    require_count,
    require_items,
    require_path,
    require_text,
    require_unit,
)
from graphmem.insights import Insights
from graphmem.learn.facts import FactRecord
from graphmem.learn.judges import TraceResult, TrainReport
from graphmem.learn.reflection import ReflectionRecord
from graphmem.learnings import LearningService
from graphmem.lifecycle import CycleReport
from graphmem.models import Learning, LearningLinks, Objective, Summary, utcnow
from graphmem.outcomes import OutcomeReport
from graphmem.promote import PromoteReport, SweepReport
from graphmem.retrieve.service import Aside, RetrievalService
from graphmem.store import open_store, release_store
from graphmem.store.health import DoctorReport
from graphmem.summaries import SummaryService
from graphmem.trust import own_objective
from graphmem.tuning import TuneReport, TuningService, TuningSnapshot, effective_settings
from graphmem.watch import WatchService

if TYPE_CHECKING:
    from graphmem.retrieve import Retriever
    from graphmem.store import KuzuGraphStore

__all__ = ["HashEmbedder", "Memory"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")


def _delegate(service: str, method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[Memory, P], R]:
    """A Memory method that calls ``method`` on the service held in ``self.<service>``, with the
    service method's signature and docstring (``help(Memory.add_learning)`` shows them)."""

    @functools.wraps(method)
    def call(self: Memory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(getattr(self, service), *args, **kwargs)

    return call


class _Dep(Generic[T]):
    """A Memory attribute kept in its :class:`Deps` (``mem.store``, ``mem.settings``...);
    assigning one rebuilds the services on the new Deps."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> _Dep[T]: ...
    @overload
    def __get__(self, obj: Memory, owner: type) -> T: ...
    def __get__(self, obj: Memory | None, owner: type) -> T | _Dep[T]:
        return self if obj is None else getattr(obj.deps, self.name)  # type: ignore[no-any-return]

    def __set__(self, obj: Memory, value: T) -> None:
        changes: dict[str, Any] = {self.name: value}
        obj._wire(replace(obj.deps, **changes), retriever=obj._retrieval._state, summaries=obj._summaries)


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
        admin: may change other users' shared learnings and forget any user (see README,
            "Users and privacy"); a plain Memory changes and forgets only its own user's memory.
        bolt_auth: (user, password) when ``path`` is a ``bolt://host:port/database`` URL (a graph
            server: ArcadeDB, Neo4j, Memgraph; see graphmem.store.bolt).
    """

    store: _Dep[KuzuGraphStore] = _Dep()
    settings: _Dep[Settings] = _Dep()
    embedder: _Dep[Embedder] = _Dep()
    llm: _Dep[Any] = _Dep()
    clock: _Dep[Callable[[], datetime]] = _Dep()
    user: _Dep[str] = _Dep()
    admin: _Dep[bool] = _Dep()
    _owns_aside = True  # False for for_user copies: they borrow their creator's helper thread

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
        admin: bool = False,
        bolt_auth: tuple[str, str] | None = None,
    ) -> None:
        require_path("path", path, allow_none=True)
        read_only = require_bool("read_only", read_only)
        if settings is not None and not isinstance(settings, Settings):
            raise InvalidInputError(f"settings must be a graphmem Settings, got {type(settings).__name__}")
        settings = settings or Settings()
        user = require_text("user", user, max_chars=200)
        embedder = embedder or default_embedder(settings.embed_query_threads, settings.embed_batch_threads,
                                                settings.embed_passive_omp, settings.embed_int8)
        store = open_store(
            path, dim=embedder.dim, embedder_name=embedder.name, read_only=read_only,
            vector_storage=settings.vector_storage, vector_int8_min_rows=settings.vector_int8_min_rows,
            vector_ann_min_rows=settings.vector_ann_min_rows,
            bolt_auth=bolt_auth, buffer_pool_mb=settings.kuzu_buffer_pool_mb,
            mirror_snapshot=settings.mirror_snapshot, mirror_snapshot_min_rows=settings.mirror_snapshot_min_rows,
        )
        if hasattr(store, "fulltext_at_close"):
            store.fulltext_at_close = settings.fulltext_index_at_close
        self._wire(Deps(store=store, embedder=embedder, llm=llm if llm is not None else _default_llm(),
                        settings=settings, clock=clock or utcnow, user=user, admin=bool(admin)))
        self._closed = False
        self._base_settings = self.settings  # Settings(auto_tune=True): the user's tuned values overlay it
        self.settings = effective_settings(self.store, self.user, self.settings)

    def _wire(
        self, deps: Deps, *, retriever: Retriever | None = None, summaries: SummaryService | None = None,
        aside: Aside | None = None,
    ) -> None:
        """Build the services on ``deps``. The summary service (this Memory's own, never shared
        with for_user copies) keeps summaries in step: its hooks go into the Deps of the others."""
        self._summaries = summaries or SummaryService(deps)
        self._summaries.deps = deps
        self.deps = replace(deps, changed_hook=self._summaries.on_learnings_changed, write_hook=self._summaries.after_write)
        self._learnings = LearningService(self.deps)
        self._events = EventService(self.deps)
        previous = self.__dict__.get("_retrieval")  # rebuilt services keep the helper thread
        aside = aside or (previous._aside if previous is not None else None)
        self._retrieval = RetrievalService(self.deps, self._summaries.user_preferences_text, retriever, aside)
        self._improve = ImproveService(self.deps)
        self._watch = WatchService(self.deps)

    # --- lifecycle of the object -----------------------------------------------------------
    def close(self) -> None:
        """Release the database file (closed when the last Memory on it in this process closes)."""
        if not self._closed:
            self._closed = True
            if self._owns_aside:
                self._retrieval.close()
            release_store(self.store)

    def for_user(self, user: str) -> Memory:
        """Another Memory on the same database for another user, sharing this one's store."""
        other = Memory.__new__(Memory)
        deps = self.deps.for_user(require_text("user", user, max_chars=200))  # admin rights are never handed on
        if self.store.path is not None:
            deps = replace(deps, store=open_store(
                self.store.path, dim=self.embedder.dim, embedder_name=self.embedder.name, read_only=self.store.read_only
            ))
        other._owns_aside = False  # one helper thread for this Memory and its copies (a server's users)
        other._wire(deps, retriever=self._retrieval._state, aside=self._retrieval._aside)
        other._closed = self.store.path is None  # an in-memory store belongs to its creator
        if self.settings.auto_tune:  # the other user's own tuned values
            other.settings = effective_settings(other.store, other.user, self.__dict__.get("_base_settings", self.settings))
        return other

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> datetime:
        """The current time from the injected clock, aware UTC."""
        return self.deps.now()

    # --- learnings (graphmem/learnings.py) ------------------------------------------------------
    add_learning = _delegate("_learnings", LearningService.add_learning)
    add_learnings = _delegate("_learnings", LearningService.add_learnings)
    get_learning = _delegate("_learnings", LearningService.get_learning)
    update_learning = _delegate("_learnings", LearningService.update_learning)
    retire_learning = _delegate("_learnings", LearningService.retire_learning)
    supersede = _delegate("_learnings", LearningService.supersede)
    learnings = _delegate("_learnings", LearningService.learnings)

    # --- events (graphmem/events.py) and retrieval (graphmem/retrieve/service.py) ---------------
    record_event = _delegate("_events", EventService.record_event)
    record_events = _delegate("_events", EventService.record_events)
    context = _delegate("_retrieval", RetrievalService.context)
    search = _delegate("_retrieval", RetrievalService.search)
    fusion_weights = _delegate("_retrieval", RetrievalService.fusion_weights)  # Settings.fusion_learning
    fusion_state = _delegate("_retrieval", RetrievalService.fusion_state)

    # --- prompt versions, distillation, evolution, tests (graphmem/improve.py) -----------------
    add_prompt = _delegate("_improve", ImproveService.add_prompt)
    prompts = _delegate("_improve", ImproveService.prompts)
    active_prompt = _delegate("_improve", ImproveService.active_prompt)
    prompt_for = _delegate("_improve", ImproveService.prompt_for)
    prompt_test = _delegate("_improve", ImproveService.prompt_test)
    propose_prompt = _delegate("_improve", ImproveService.propose_prompt)
    distill = _delegate("_improve", ImproveService.distill)
    export_tests = _delegate("_improve", ImproveService.export_tests)
    evolve = _delegate("_improve", ImproveService.evolve)

    # --- how it watches itself: weak domains, domains, sessions, tuning (graphmem/watch.py) -----
    weaknesses = _delegate("_watch", WatchService.weaknesses)
    domains = _delegate("_watch", WatchService.domains)
    session_metrics = _delegate("_watch", WatchService.session_metrics)
    tuning_snapshots = _delegate("_watch", WatchService.tuning_snapshots)

    # --- learning from experience ---------------------------------------------------
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
            self.deps, content, tool=tool, is_owner=is_owner, role=role, session_id=session_id,
            objective_id=objective_id, entities=entities,
        )

    def facts(self, *, about: str | None = None, history: bool = False) -> list[FactRecord]:
        """Facts the owner stated about themselves (``about="user"``) or someone/something (a name),
        each with its ``valid_from``/``valid_to``; current ones only unless ``history=True``."""
        from graphmem.learn.facts import fact_history

        return fact_history(self.deps, about=about, history=history)

    def start_objective(self, goal: str, objective_type: str | None = None) -> Objective:
        """Start a long-running goal; record its steps with ``record_event(..., objective_id=obj.id)``."""
        from graphmem.learn.objectives import start_objective

        return start_objective(self.deps, goal, objective_type)

    def end_objective(
        self, objective_id: str, status: str = "completed", result: str | None = None, *, reflect: bool = True
    ) -> list[Learning]:
        """End an objective (completed | failed | cancelled): self-evaluate it (seed 001), update the
        tools' success/error counters, store what is worth remembering, and (``reflect``) reflect on
        the episode (seed 004; its rules become candidate learnings). Returns the learnings.
        Unknown id: NotFoundError; ended already: InvalidInputError."""
        from graphmem.learn.objectives import end_objective

        return end_objective(self.deps, objective_id, status, result, reflect_episode=require_bool("reflect", reflect))

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
        context_id: str | None = None,
    ) -> ReflectionRecord:
        """Reflect on one episode (seed 004): a Reflection node REFLECTS_ON the objective/event; its
        rules become learnings with status ``Settings.new_reflection_status`` (candidate). With
        ``context_id`` the reflector also tags which of that context's learnings helped or hurt,
        recorded as the context's outcome (per-learning credit)."""
        from graphmem.learn.reflection import reflect

        return reflect(
            self.deps, user_text, assistant_text, success=success, tools_used=tools_used, feedback=feedback,
            objective_id=objective_id, event_id=event_id, context_id=context_id,
        )

    def add_judge(self, name: str, criteria: str, node: str | None = None) -> dict[str, Any]:
        """Configure a named LLM judge with its own criteria, for ``node`` or every node (seed 002)."""
        from graphmem.learn.judges import add_judge

        return add_judge(self.deps, name, criteria, node)

    def trace(
        self,
        input_text: str,
        output: str,
        *,
        node: str,
        ground_truth: str | None = None,
        reasoning: str | None = None,
        mode: str = "online",
        session_id: str | None = None,
    ) -> TraceResult:
        """Judge one output with the node's judges, store the Trace and Verdicts, and (unless
        ``mode="vanilla"``) let the reflector turn failures into learnings (seed 002)."""
        from graphmem.learn.judges import trace

        return trace(self.deps, input_text, output, node=node, ground_truth=ground_truth, reasoning=reasoning, mode=mode,
                     session_id=session_id)

    def train(self, examples: Sequence[Mapping[str, Any]], *, node: str = "default") -> TrainReport:
        """Offline mode (seed 002) over a dataset of dicts (input_text, output, ground_truth...)."""
        from graphmem.learn.judges import train

        return train(self.deps, examples, node=node)

    def curate(self, learning: Learning, links: LearningLinks, *, trusted_text: str | None = None) -> Learning | None:
        """Store a learning through the curator (merge, supersede, contradict, classify, refuse).

        The learning is stored as this Memory's user's, whatever its ``user_id`` says, and the
        objective/event ids in ``links`` must be this user's (NotFoundError otherwise)."""
        from graphmem.learn.curator import Curator
        from graphmem.trust import own_event

        if learning.user_id != self.user:
            learning = learning.model_copy(update={"user_id": self.user})
        if links.objective_id is not None:
            own_objective(self.deps, links.objective_id)
        if links.source_event_id is not None:
            own_event(self.deps, links.source_event_id)
        return Curator(self.deps).curate(learning, links, trusted_text=trusted_text).learning

    # --- summaries -------------------------------------------------------------------
    def refresh_summaries(self, force: bool = False, *, all_users: bool = False) -> list[Summary]:
        """Refresh the summaries whose staleness reached their threshold; return the refreshed ones.

        Incremental: the summarizer gets the previous text and only the learnings written since
        (corrections first, then newest), plus those that no longer apply. ``force`` rebuilds every
        summary of this user from scratch. Nothing stale: no LLM call, returns ``[]``.
        ``all_users`` refreshes every user's due summaries (the background refresher).
        """
        return self._summaries.refresh(force=require_bool("force", force), all_users=require_bool("all_users", all_users))

    def summary(self, key: str) -> Summary:
        """One of this user's summaries by key: ``"user_preferences"``, ``"learning:tool:<name>"``,
        ``"learning:topic:<name>"`` or ``"learning:objective_type:<type>"``."""
        return self._summaries.get(require_text("key", key, max_chars=500))

    def summaries(self) -> list[Summary]:
        """All of this user's summaries, by key."""
        return self._summaries.list()

    # --- outcomes and lifecycle ------------------------------------------------------
    def record_outcome(
        self,
        context_id: str,
        *,
        success: bool | None = None,
        rating: str | None = None,
        reasons: Iterable[str] | str = (),
        used: Iterable[str] | None = None,
        helpful: Iterable[str] = (),
        harmful: Iterable[str] = (),
    ) -> OutcomeReport:
        """Credit or blame exactly the learnings shown in one context (``ctx.id``).

        ``used`` (learning ids from the context) limits the credit or blame to the learnings the
        agent acted on; ``helpful`` / ``harmful`` tag learnings individually (accepted / rejected
        whatever the outcome). Without them the outcome is shared by rank (``Settings.credit_rank_power``,
        ``credit_min_share``; ``OutcomeReport.shares``): see graphmem/outcomes.py.

        ``rating`` good|okay|bad decides when given (okay: neutral, counts as applied only),
        else ``success``. Accepted: helpful+1, validations+1, score+0.03, confidence+0.015;
        rejected: harmful+1, score-0.05, confidence-0.025 (clamped to [0, 1]). ``reasons`` are
        tags (fallback, retry, regenerate... feed the lifecycle windows). The query's Pattern
        gets per-learning EFFECTIVE_FOR counts. One transaction. A second outcome for the same
        context raises InvalidInputError (an implicit one may be replaced once); an unknown
        context raises NotFoundError.
        """
        from graphmem import outcomes

        used, helpful, harmful = None if used is None else list(used), list(helpful), list(harmful)
        report = outcomes.record_outcome(self.deps, context_id, success=success, rating=rating, reasons=reasons,
                                         used=used, helpful=helpful, harmful=harmful)
        self._improve.credit_prompts(report.context_id, report.verdict)  # the prompt version served there
        self._retrieval.learn_fusion(report.context_id, report.verdict, used=used, helpful=helpful,
                                     harmful=harmful)  # Settings.fusion_learning
        return report

    def run_cycle(self) -> CycleReport:
        """Run the lifecycle once: windows and status transitions, hypothesis → belief,
        TTL pruning, tiers, confidence decay, prompt A/B tests and distillation. Returns what
        changed (CycleReport)."""
        from graphmem import lifecycle

        return lifecycle.run_cycle(self.deps)

    def pattern_scores(self, query_embedding: Any, user: str | None = None) -> dict[str, float]:
        """Per-pattern effectiveness (seed 002): ``{learning_id: helpful/(helpful+harmful)}`` in
        the stored Pattern nearest the query embedding (cosine >= Settings.pattern_similarity),
        {} when none is near. Ranking adds ``Settings.pattern_boost * value``. Another
        ``user``'s patterns need an ``admin`` Memory (PermissionDeniedError otherwise)."""
        from graphmem import outcomes

        return outcomes.checked_pattern_scores(self.deps, query_embedding, user)

    # --- promotion, insights, export ----------------------------------------------
    def promote(self, path: str | os.PathLike[str], *, min_confidence: float | None = None) -> PromoteReport:
        """Write this user's pinned, high-confidence, active learnings into the marked section
        of an instruction file (AGENTS.md, CLAUDE.md...); idempotent. Returns a PromoteReport."""
        from graphmem import promote

        require_path("path", path)
        min_confidence = None if min_confidence is None else require_unit("min_confidence", min_confidence)
        return promote.promote(self.deps, path, min_confidence=min_confidence)

    def sweep(self, paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> SweepReport:
        """Remove promoted lines whose learnings were since contradicted, went stale or were
        retired; archive and log them; keep hand-written lines. Returns a SweepReport."""
        from graphmem import promote

        targets = [paths] if isinstance(paths, (str, os.PathLike)) else list(require_items("paths", paths))
        for target in targets:
            require_path("paths", target)
        return promote.sweep(self.deps, targets)

    def insights(self, *, timeline: int = 50) -> Insights:
        """Acceptance, pass/fallback/retry rates, rating coverage, per-learning standing,
        counts per status and tier, active canaries and the latest transitions (Insights)."""
        from graphmem import insights

        return insights.compute(self.deps, timeline=require_count("timeline", timeline))

    def training_pairs(self, *, min_confidence: float = 0.0, feedback: str = "any") -> list[dict[str, Any]]:
        """Successful episodes as chat-format training records (seed 004)."""
        from graphmem import export

        min_confidence, feedback = require_unit("min_confidence", min_confidence), require_choice("feedback", feedback, ("any", "positive"))
        return export.training_pairs(self.deps, min_confidence=min_confidence, feedback=feedback)[0]

    def export_jsonl(
        self, path: str | os.PathLike[str], *, min_confidence: float = 0.0, feedback: str = "any"
    ) -> ExportReport:
        """Write :meth:`training_pairs` to a JSONL file. Returns an ExportReport."""
        from graphmem import export

        require_path("path", path)
        min_confidence, feedback = require_unit("min_confidence", min_confidence), require_choice("feedback", feedback, ("any", "positive"))
        return export.export_jsonl(self.deps, path, min_confidence=min_confidence, feedback=feedback)

    def export_graphml(self, path: str | os.PathLike[str], *, scope: str = "user") -> ExportReport:
        """Write the graph as GraphML through networkx: this user's view (``scope="user"``, the
        default, as :meth:`cypher`) or the whole file (``scope="all"``). Returns an ExportReport."""
        from graphmem import export

        require_path("path", path)
        return export.export_graphml(self.deps, path, scope=scope)

    def export_memory(self, path: str | os.PathLike[str], *, progress: Callable[[int, int], None] | None = None) -> Any:
        """Write this user's whole memory (learnings with their counters, edges, transitions,
        events, objectives, outcomes...) to a JSONL file that :meth:`import_memory` reads back.
        Returns a :class:`graphmem.transfer.TransferReport`."""
        from graphmem import transfer

        require_path("path", path)
        return transfer.export_memory(self.deps, path, progress=progress)

    def import_memory(self, path: str | os.PathLike[str], *, progress: Callable[[int, int], None] | None = None) -> Any:
        """Read a file written by :meth:`export_memory` into this database, as this Memory's user.
        All or nothing: bad input (a malformed line, another format version or embedder, an id
        this file already holds) raises InvalidInputError and writes nothing. ``progress(done,
        total)`` is called while writing. Returns a :class:`graphmem.transfer.TransferReport`."""
        from graphmem import transfer

        require_path("path", path)
        return transfer.import_memory(self.deps, path, progress=progress)

    # --- analysts ------------------------------------------------------------------------------
    def cypher(
        self,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        write: bool = False,
        force: bool = False,
        scope: str = "user",
        timeout_ms: int | None = None,
    ) -> list[dict[str, Any]]:
        """Run Cypher over the graph; rows as dicts.

        ``scope="user"`` (the default) runs the query over this user's view of the file: their
        own nodes, shared learnings and what those link to (other users' rows are not there).
        ``scope="all"`` runs it over the whole file (an analyst or admin). Read-only unless
        ``write=True``, which needs ``scope="all"``; ``force=True`` also lets a write change
        graphmem's bookkeeping (the Meta table, the schema). A read-only query running longer
        than ``timeout_ms`` is stopped (CypherError). See README "Analyst queries".
        """
        from graphmem.store import analyst

        write, force = require_bool("write", write), require_bool("force", force)
        query, params = check_string("query", query), cypher_params(params)
        if scope not in ("user", "all"):
            raise InvalidInputError(f"scope must be 'user' or 'all', got {scope!r}")
        if write and scope != "all":
            raise InvalidInputError(
                "a write query runs over the whole file: pass scope='all' with write=True (CLI: --all-users --write)"
            )
        if scope == "user":
            return analyst.user_cypher(self.store, self.user, query, params, timeout_ms=timeout_ms)
        rows = self.store.cypher(query, params, write=write, force=force, timeout_ms=timeout_ms)
        if write:
            self.store.reload_catalogs()  # a raw write may have changed learnings behind our back
        return rows

    def doctor(self, repair: bool = False) -> DoctorReport:
        """Check the file for problems: values graphmem cannot use, missing Meta bookkeeping,
        links to nodes that are gone, catalogs out of step with the file. ``repair=True`` fixes
        what can be fixed (see :func:`graphmem.store.health.repair`). Returns a DoctorReport."""
        from graphmem.store import health

        return health.doctor(self.store, repair_it=bool(repair), embed=self.embedder.embed)

    def stats(self, *, all_users: bool = False) -> dict[str, int]:
        """This user's node counts per table and edge counts per type (the rows they own and the
        edges leaving them); ``all_users=True``: the whole file."""
        if all_users:
            return self.store.stats()
        return self.store.user_stats(self.user)

    # --- users and privacy ------------------------------------------------------------------------
    def forget(self, user: str | None = None) -> dict[str, int]:
        """Erase a user's memory for good: every learning, event, objective, summary, context,
        pattern, trace (with its verdicts), reflection and judge they own, with all their edges,
        their co-occurrence counts, and the tool/topic/entity/objective-type names only they
        used. One transaction; the in-memory indexes are rebuilt. Returns counts per table.

        ``user`` defaults to this Memory's user; forgetting another user needs ``admin=True``
        (else PermissionDeniedError).
        """
        from graphmem.errors import PermissionDeniedError

        target = self.user if user is None else require_text("user", user, max_chars=200)
        if target != self.user and not self.admin:
            raise PermissionDeniedError(
                f"only an admin Memory may forget another user; open Memory(..., user={target!r}) "
                "and call forget(), or Memory(..., admin=True)"
            )
        counts = self.store.forget_user(target)
        self._wire(self.deps, retriever=self._retrieval._state)  # a fresh summary service
        return counts

    def forget_learning(self, learning_id: str) -> dict[str, int]:
        """Delete one learning for good, with its edges, transitions and co-occurrence counts
        (and names only it used). Only its owner (or an admin) may; another user's private id
        is NotFoundError, a shared one PermissionDeniedError. Returns counts per table."""
        from graphmem.trust import writable_learning

        learning = writable_learning(self.deps, learning_id)
        counts = self.store.forget_learnings([learning.id])
        return counts

    # --- auto-tuning and session metrics (graphmem/tuning.py, graphmem/sessions.py) ------------
    def tune(self, *, dry_run: bool = False, evaluator: Any = None) -> TuneReport:
        """One auto-tuning step (README "Auto-tuning"): measure health, move a few settings one step,
        keep them unless the retrieval guard got worse. Returns a :class:`graphmem.tuning.TuneReport`."""
        report = TuningService(self.deps, evaluator).tune(dry_run=require_bool("dry_run", dry_run))
        self.settings = effective_settings(self.store, self.user, self.settings)
        return report

    def rollback_tuning(self, snapshot_id: str | None = None) -> TuningSnapshot:
        """Restore the tuned values of a TuningSnapshot (the latest when None); returns the snapshot."""
        snap = TuningService(self.deps).rollback(snapshot_id)
        self.settings = effective_settings(self.store, self.user, self.settings)
        return snap


def _default_llm() -> Any:
    from graphmem.llm import OfflineLLM

    return OfflineLLM()
