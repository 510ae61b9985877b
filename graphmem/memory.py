"""Memory: the one public facade of graphmem.

It wires the store (Kùzu), the embedder, the LLM and the learning, retrieval, summary and
lifecycle services together. The learnings methods (add/update/retire/list) live in
memory_learnings.py and context()/search() in memory_retrieval.py, inherited here only to keep
each file short: every public method is used as ``mem.<method>``. Every public method validates its input and raises a
:class:`~graphmem.errors.GraphmemError` subclass that says what to do; writes are transactional.

>>> mem = Memory(None, user="alice", embedder=HashEmbedder())   # None: in-memory database
>>> l = mem.add_learning("Keep emails under 3 paragraphs", tool="send_email")
>>> [x.content for x in mem.learnings(tool="send_email")]
['Keep emails under 3 paragraphs']
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from graphmem.config import Settings
from graphmem.embed import Embedder, HashEmbedder, default_embedder
from graphmem.errors import InvalidInputError
from graphmem.export import ExportReport
from graphmem.inputs import (
    check_string,
    cypher_params,
    json_object,
    model_errors,
    names,
    optional_bool,
    optional_id,
    optional_string,
    optional_text,
    require_bool,
    require_choice,
    require_count,
    require_items,
    require_path,
    require_text,
    require_time,
    require_unit,
)
from graphmem.insights import Insights
from graphmem.learn.facts import FactRecord  # facts about the user
from graphmem.learn.judges import TraceResult, TrainReport  # learning (issue 3)
from graphmem.learn.reflection import ReflectionRecord  # learning (issue 3)
from graphmem.lifecycle import CycleReport  # outcomes and lifecycle (issue 6)
from graphmem.memory_evolve import EvolveAPI  # prompt versions, distillation
from graphmem.memory_learnings import LearningsAPI
from graphmem.memory_retrieval import RetrievalAPI
from graphmem.models import (
    EVENT_KINDS,
    Event,
    Learning,
    LearningLinks,
    Objective,  # learning (issue 3)
    Summary,
    utcnow,
)
from graphmem.outcomes import OutcomeReport  # outcomes and lifecycle (issue 6)
from graphmem.promote import PromoteReport, SweepReport
from graphmem.store import open_store, release_store
from graphmem.store.health import DoctorReport
from graphmem.summaries import SummaryService
from graphmem.trust import own_objective

__all__ = ["HashEmbedder", "Memory"]

_OUTBOUND_ROLES = frozenset({"assistant", "agent", "tool", "system"})
_UPDATABLE = {
    "content", "recommendation", "applies_when", "kind", "sentiment", "confidence", "score",
    "status", "canary_allocation", "tier", "helpful", "harmful", "validations", "contradictions",
    "ttl_days", "shared", "source_type",
}


class Memory(LearningsAPI, RetrievalAPI, EvolveAPI):
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
        self.settings = settings or Settings()
        self.user = require_text("user", user, max_chars=200)
        self.admin = bool(admin)
        self.embedder: Embedder = embedder or default_embedder(
            self.settings.embed_query_threads, self.settings.embed_batch_threads
        )
        self.llm = llm if llm is not None else _default_llm()
        self.clock: Callable[[], datetime] = clock or utcnow
        self.store = open_store(
            path, dim=self.embedder.dim, embedder_name=self.embedder.name, read_only=read_only,
            vector_storage=self.settings.vector_storage, vector_int8_min_rows=self.settings.vector_int8_min_rows,
            bolt_auth=bolt_auth,
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
        other.admin = False  # admin rights are never handed on
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
        return now if now.tzinfo else now.replace(tzinfo=UTC)

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
        from graphmem.retrieve.entities import event_mentions

        found = event_mentions(self.store, self.settings, self.user, [event])
        self.store.insert_event(event, self._embed_one(event.content), found[0] if found else ())
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
            own_objective(self, objective_id)  # NotFoundError, also for another user's objective
        when = created_at or self.now()
        with model_errors("event"):
            return Event(
                user_id=self.user, session_id=session_id, kind=kind, role=role, direction=direction,  # type: ignore[arg-type]
                is_owner=is_owner, content=text, tool_name=optional_text("tool", tool, max_chars=200),
                success=success, objective_id=objective_id, created_at=when.astimezone(UTC),
                metadata=json_object("metadata", metadata), entities=names("entity", entities),
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

    def facts(self, *, about: str | None = None, history: bool = False) -> list[FactRecord]:
        """Facts the owner stated about themselves (``about="user"``) or someone/something (a name),
        each with its ``valid_from``/``valid_to``; current ones only unless ``history=True``."""
        from graphmem.learn.facts import fact_history

        return fact_history(self, about=about, history=history)

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

        return end_objective(self, objective_id, status, result, reflect_episode=require_bool("reflect", reflect))

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
            self, user_text, assistant_text, success=success, tools_used=tools_used, feedback=feedback,
            objective_id=objective_id, event_id=event_id, context_id=context_id,
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
        """Store a learning through the curator (merge, supersede, contradict, classify, refuse).

        The learning is stored as this Memory's user's, whatever its ``user_id`` says, and the
        objective/event ids in ``links`` must be this user's (NotFoundError otherwise)."""
        from graphmem.learn.curator import Curator
        from graphmem.trust import own_event

        if learning.user_id != self.user:
            learning = learning.model_copy(update={"user_id": self.user})
        if links.objective_id is not None:
            own_objective(self, links.objective_id)
        if links.source_event_id is not None:
            own_event(self, links.source_event_id)
        return Curator(self).curate(learning, links, trusted_text=trusted_text).learning


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
        return self._summaries.refresh(force=require_bool("force", force), all_users=require_bool("all_users", all_users))

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

        report = outcomes.record_outcome(self, context_id, success=success, rating=rating, reasons=reasons,
                                         used=None if used is None else list(used), helpful=list(helpful),
                                         harmful=list(harmful))
        self._credit_prompts(report.context_id, report.verdict)  # the prompt version served there
        return report

    def run_cycle(self) -> CycleReport:
        """Run the lifecycle once: windows and status transitions, hypothesis → belief,
        TTL pruning, tiers, confidence decay, prompt A/B tests and distillation. Returns what
        changed (CycleReport)."""
        from graphmem import lifecycle

        return lifecycle.run_cycle(self)

    def pattern_scores(self, query_embedding: Any, user: str | None = None) -> dict[str, float]:
        """Per-pattern effectiveness (seed 002): ``{learning_id: helpful/(helpful+harmful)}`` in
        the stored Pattern nearest the query embedding (cosine >= Settings.pattern_similarity),
        {} when none is near. Ranking adds ``Settings.pattern_boost * value``. Another
        ``user``'s patterns need an ``admin`` Memory (PermissionDeniedError otherwise)."""
        from graphmem import outcomes
        from graphmem.errors import PermissionDeniedError

        if user is not None and user != self.user and not self.admin:
            raise PermissionDeniedError("only an admin Memory may read another user's pattern scores")

        user = optional_text("user", user, max_chars=200)
        try:
            vector = np.asarray(query_embedding, dtype=np.float32).reshape(-1)
        except (TypeError, ValueError) as e:
            raise InvalidInputError(f"query_embedding must be a vector of numbers: {e}") from e
        if vector.shape != (self.embedder.dim,) or not np.all(np.isfinite(vector)):
            raise InvalidInputError(f"query_embedding must be {self.embedder.dim} finite numbers (the embedder's dim)")
        return outcomes.pattern_scores(self, vector, user)

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

        require_path("path", path)
        min_confidence = None if min_confidence is None else require_unit("min_confidence", min_confidence)
        return promote.promote(self, path, min_confidence=min_confidence)

    def sweep(self, paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> SweepReport:
        """Remove promoted lines whose learnings were since contradicted, went stale or were
        retired; archive and log them; keep hand-written lines. Returns a SweepReport."""
        from graphmem import promote

        targets = [paths] if isinstance(paths, (str, os.PathLike)) else list(require_items("paths", paths))
        for target in targets:
            require_path("paths", target)
        return promote.sweep(self, targets)

    def insights(self, *, timeline: int = 50) -> Insights:
        """Acceptance, pass/fallback/retry rates, rating coverage, per-learning standing,
        counts per status and tier, active canaries and the latest transitions (Insights)."""
        from graphmem import insights

        return insights.compute(self, timeline=require_count("timeline", timeline))

    def training_pairs(self, *, min_confidence: float = 0.0, feedback: str = "any") -> list[dict[str, Any]]:
        """Successful episodes as chat-format training records (seed 004)."""
        from graphmem import export

        min_confidence, feedback = require_unit("min_confidence", min_confidence), require_choice("feedback", feedback, ("any", "positive"))
        return export.training_pairs(self, min_confidence=min_confidence, feedback=feedback)[0]

    def export_jsonl(
        self, path: str | os.PathLike[str], *, min_confidence: float = 0.0, feedback: str = "any"
    ) -> ExportReport:
        """Write :meth:`training_pairs` to a JSONL file. Returns an ExportReport."""
        from graphmem import export

        require_path("path", path)
        min_confidence, feedback = require_unit("min_confidence", min_confidence), require_choice("feedback", feedback, ("any", "positive"))
        return export.export_jsonl(self, path, min_confidence=min_confidence, feedback=feedback)

    def export_graphml(self, path: str | os.PathLike[str], *, scope: str = "user") -> ExportReport:
        """Write the graph as GraphML through networkx: this user's view (``scope="user"``, the
        default, as :meth:`cypher`) or the whole file (``scope="all"``). Returns an ExportReport."""
        from graphmem import export

        require_path("path", path)
        return export.export_graphml(self, path, scope=scope)

    def export_memory(self, path: str | os.PathLike[str], *, progress: Callable[[int, int], None] | None = None) -> Any:
        """Write this user's whole memory (learnings with their counters, edges, transitions,
        events, objectives, outcomes...) to a JSONL file that :meth:`import_memory` reads back.
        Returns a :class:`graphmem.transfer.TransferReport`."""
        from graphmem import transfer

        require_path("path", path)
        return transfer.export_memory(self, path, progress=progress)

    def import_memory(self, path: str | os.PathLike[str], *, progress: Callable[[int, int], None] | None = None) -> Any:
        """Read a file written by :meth:`export_memory` into this database, as this Memory's user.
        All or nothing: bad input (a malformed line, another format version or embedder, an id
        this file already holds) raises InvalidInputError and writes nothing. ``progress(done,
        total)`` is called while writing. Returns a :class:`graphmem.transfer.TransferReport`."""
        from graphmem import transfer

        require_path("path", path)
        return transfer.import_memory(self, path, progress=progress)

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
        self.__dict__.pop("_summary_service", None)
        return counts

    def forget_learning(self, learning_id: str) -> dict[str, int]:
        """Delete one learning for good, with its edges, transitions and co-occurrence counts
        (and names only it used). Only its owner (or an admin) may; another user's private id
        is NotFoundError, a shared one PermissionDeniedError. Returns counts per table."""
        from graphmem.trust import writable_learning

        learning = writable_learning(self, learning_id)
        counts = self.store.forget_learnings([learning.id])
        return counts


def _default_llm() -> Any:
    from graphmem.llm import OfflineLLM

    return OfflineLLM()
