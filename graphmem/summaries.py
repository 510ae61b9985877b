"""Pre-computed summaries of learnings (seed 001 PreferenceSummarizer), refreshed incrementally.

Keys (one Summary node per user and key, id ``user_id|key``):

- ``user_preferences``: the user's preferences and standing rules (:func:`feeds_user_preferences`:
  the owner's feedback and facts, rules added by hand, and general rules the agent derived
  itself once they are at least ``Settings.user_preferences_min_confidence`` sure; tool advice
  stays in the tool summaries), ranked by :func:`preference_rank`, cut to whole bullets within
  ``Settings.budget_user_preferences``; always in context. It is refreshed at once when the first
  preference arrives and when one of its learnings leaves use (superseded, retired), else at its
  staleness threshold.
- ``learning:tool:<name>``, ``learning:topic:<name>``, ``learning:objective_type:<type>``: the
  eligible learnings about that tool / topic / objective type (observations included).

Eligible means status active or canary, tier not archive, not superseded; hypotheses never feed
a summary. Every write of a learning adds 1 to the staleness of exactly the summaries it feeds,
or fed until this write (a retired learning counts once more, to be dropped), inside the writer's
transaction, and records the learning id in the summary's ``pending`` list. A summary whose
staleness reaches its kind's threshold (``Settings.summary_thresholds``) is due. Refreshing it
hands the summarizer the previous text, the pending learnings that still feed it (corrections
first, then newest) and those that no longer do (to drop): cost follows the change, not the
memory. Without previous text, or with ``force``, the summary is rebuilt from the
``summary_max_learnings`` best covered learnings.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from graphmem.errors import GraphmemError, InvalidInputError, NotFoundError
from graphmem.llm.prompts import summary_request
from graphmem.llm.schemas import SummaryOutput
from graphmem.models import Learning, Summary
from graphmem.store.summaries import SummaryFeed, SummaryRefresh, SummaryState, summary_id

if TYPE_CHECKING:
    from graphmem.config import Settings
    from graphmem.deps import Deps

log = logging.getLogger(__name__)

USER_PREFERENCES = "user_preferences"
SCOPED_KINDS: tuple[str, ...] = ("tool", "topic", "objective_type")
"""Summary kinds scoped to one tool / topic / objective type (key ``learning:<kind>:<name>``)."""
ELIGIBLE_STATUSES: tuple[str, ...] = ("active", "canary")
PREFERENCE_KINDS: tuple[str, ...] = ("rule", "preference", "checklist", "bug_fix", "prompt")
"""Learning kinds that feed ``user_preferences`` (instructions, not raw observations)."""
SCOPED_LEARNING_KINDS: tuple[str, ...] = (*PREFERENCE_KINDS, "observation")
"""Learning kinds that feed tool / topic / objective-type summaries."""
USER_PREFERENCE_KINDS: tuple[str, ...] = (*PREFERENCE_KINDS, "fact")
"""Learning kinds that may feed ``user_preferences`` (see :func:`feeds_user_preferences`)."""
SELF_LEARNED_SOURCES = frozenset({"self_evaluation", "reflection", "offline", "online", "evolution"})
"""Sources of rules the agent derived itself (not the owner's words)."""


# --- keys ------------------------------------------------------------------------------------
def summary_key(kind: str, name: str | None = None) -> str:
    """The key of a summary: ``user_preferences`` or ``learning:<kind>:<name>``."""
    if kind == USER_PREFERENCES:
        return USER_PREFERENCES
    if kind not in SCOPED_KINDS or not name:
        raise InvalidInputError(f"a summary kind is user_preferences, tool, topic or objective_type (with a name), got {kind!r}")
    return f"learning:{kind}:{name}"


def parse_key(key: str) -> tuple[str, str | None]:
    """``(kind, name)`` of a summary key; InvalidInputError saying the valid forms otherwise."""
    if key == USER_PREFERENCES:
        return USER_PREFERENCES, None
    parts = key.split(":", 2) if isinstance(key, str) else []
    if len(parts) == 3 and parts[0] == "learning" and parts[1] in SCOPED_KINDS and parts[2]:
        return parts[1], parts[2]
    raise InvalidInputError(
        f"unknown summary key {key!r}; keys are 'user_preferences', 'learning:tool:<name>', "
        "'learning:topic:<name>' and 'learning:objective_type:<type>'"
    )


def learning_kinds_for(kind: str) -> tuple[str, ...]:
    """The learning kinds a summary kind covers."""
    return USER_PREFERENCE_KINDS if kind == USER_PREFERENCES else SCOPED_LEARNING_KINDS


def is_eligible(learning: Learning) -> bool:
    """Whether a learning may feed any summary (in use, not archived, not superseded)."""
    return (
        learning.status in ELIGIBLE_STATUSES
        and learning.tier != "archive"
        and learning.superseded_by is None
        and learning.kind in (*SCOPED_LEARNING_KINDS, "fact")
    )


def feeds_user_preferences(learning: Learning, settings: Settings) -> bool:
    """Whether an eligible learning belongs in ``user_preferences``: the user's preferences and
    standing rules. The owner's feedback and facts, and rules added by hand, always do; a rule the
    agent derived itself (self-evaluation, reflection, offline/online training) only when it is
    general (no tool: tool advice stays in the tool summaries and in retrieval) and at least
    ``Settings.user_preferences_min_confidence`` sure."""
    if not is_eligible(learning) or learning.kind not in USER_PREFERENCE_KINDS:
        return False
    if learning.source_type not in SELF_LEARNED_SOURCES:
        return True
    return learning.tool is None and learning.confidence >= settings.user_preferences_min_confidence


def preference_rank(learning: Learning) -> tuple[int, int, float, float]:
    """Sort key for ``user_preferences``: the owner's words first (corrections first), then facts,
    then the rest by confidence; newest first within each."""
    owner = 0 if learning.source_type == "user_feedback" else 1
    return (owner, 0 if learning.sentiment == "negative" else 1, -learning.confidence, -learning.updated_at.timestamp())


def feeds_of(learning: Learning, settings: Settings) -> list[SummaryFeed]:
    """The summaries a learning feeds in its current state (none when it is not eligible)."""
    if not is_eligible(learning):
        return []
    wanted: list[tuple[str, str | None]] = []
    if feeds_user_preferences(learning, settings):
        wanted.append((USER_PREFERENCES, None))
    if learning.tool:
        wanted.append(("tool", learning.tool))
    wanted.extend(("topic", t) for t in learning.topics)
    if learning.objective_type:
        wanted.append(("objective_type", learning.objective_type))
    out: dict[str, SummaryFeed] = {}
    for kind, name in wanted:
        key = summary_key(kind, name)
        out[key] = SummaryFeed(summary_id(learning.user_id, key), key, learning.user_id, kind, threshold_for(kind, settings))
    return list(out.values())


def threshold_for(kind: str, settings: Settings) -> int:
    """The staleness at which a summary of ``kind`` is due (Settings.summary_thresholds)."""
    return max(1, int(settings.summary_thresholds.get(kind, 5)))


def prioritise(learnings: Iterable[Learning]) -> list[Learning]:
    """Corrections (negative sentiment) first, then most recently updated (seed 001)."""
    return sorted(learnings, key=lambda l: (l.sentiment != "negative", -l.updated_at.timestamp()))


def removed_texts(learnings: Iterable[Learning]) -> list[str]:
    """What the summary may say for learnings that no longer apply: content and recommendation."""
    out: list[str] = []
    for l in learnings:
        for text in (l.content, l.recommendation):
            if text and text not in out:
                out.append(text)
    return out


def learning_items(learnings: Iterable[Learning]) -> list[dict[str, Any]]:
    """Learnings in the shape ``prompts.summary_request`` takes."""
    return [
        {"content": l.content, "recommendation": l.recommendation, "sentiment": l.sentiment, "kind": l.kind, "tool": l.tool}
        for l in learnings
    ]


def fit_bullets(text: str, budget_tokens: int) -> str:
    """``text`` cut to whole lines (bullets) that fit ``budget_tokens`` (~4 characters a token)."""
    out: list[str] = []
    used = 0
    for line in text.splitlines():
        cost = len(line) // 4 + 1
        if used + cost > budget_tokens:
            break
        out.append(line)
        used += cost
    return "\n".join(out)


# --- summarizers -----------------------------------------------------------------------------
@runtime_checkable
class Summarizer(Protocol):
    """Turns a previous summary and what changed beneath it into the new summary text."""

    def summarize(self, previous: str, changed: list[Learning], removed: list[Learning], max_bullets: int) -> str:
        """The new text: ``previous`` updated with ``changed`` (already prioritised), minus ``removed``."""
        ...


class LLMSummarizer:
    """Seed 001's SUMMARY_PROMPT through an :class:`~graphmem.llm.base.LLM` (5–10 actionable bullets)."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def summarize(self, previous: str, changed: list[Learning], removed: list[Learning], max_bullets: int) -> str:
        """One LLM call; the answer's bullets as a markdown list."""
        request = summary_request(previous, learning_items(changed), removed_texts(removed), max(0, min(10, max_bullets)))
        output = self.llm.generate(request, SummaryOutput)
        return output.text


class ExtractiveSummarizer:
    """No LLM: previous bullets minus the removed ones, plus one bullet per changed learning.

    Deterministic; corrections first, near-duplicates merged (graphmem.llm.offline.summarize).
    """

    def summarize(self, previous: str, changed: list[Learning], removed: list[Learning], max_bullets: int) -> str:
        """The extractive text as a markdown list."""
        from graphmem.llm.offline import summarize

        return summarize(previous, learning_items(changed), removed_texts(removed), max(0, min(10, max_bullets))).text


# --- the service -----------------------------------------------------------------------------
class SummaryService:
    """Staleness bookkeeping and the incremental refresher for ``deps.user``.

    ``Memory`` makes one per user and points the :class:`~graphmem.deps.Deps` hooks of every
    other service at :meth:`on_learnings_changed` and :meth:`after_write`.
    """

    def __init__(self, deps: Deps, summarizer: Summarizer | None = None) -> None:
        self.deps = deps
        self._summarizer = summarizer
        self._due: set[str] = set()
        self._urgent: set[str] = set()  # due at once, below their threshold too
        self._lock = threading.Lock()

    @property
    def summarizer(self) -> Summarizer:
        """The summarizer given, else one on the current LLM of ``deps``."""
        return self._summarizer or LLMSummarizer(self.deps.llm)

    # --- write side --------------------------------------------------------------------------
    def on_learnings_changed(self, learnings: Sequence[Learning], change: str) -> None:
        """Inside the writer's transaction: count the change on every summary each learning feeds."""
        store, settings = self.deps.store, self.deps.settings
        due: list[str] = []
        urgent: list[str] = []  # due whatever their staleness
        if change == "created" and len(learnings) > 1:  # a batch of new learnings: counted at once
            states = store.bump_summaries_created([(l.id, feeds_of(l, settings)) for l in learnings])
            due += [s.id for s in states if s.summary.staleness >= s.summary.threshold
                    or (s.summary.kind == USER_PREFERENCES and s.summary.refreshed_at is None)]
            learnings = ()
        for learning in learnings:
            feeds = feeds_of(learning, settings)
            linked = [] if change == "created" else store.linked_summaries(learning.id)
            keep = {f.id for f in feeds}
            dropped = [
                SummaryFeed(f.id, f.key, f.user_id, f.kind, threshold_for(f.kind, settings))
                for f in linked if f.id not in keep
            ]
            linked_ids = {f.id for f in linked}
            states = store.bump_summaries(
                learning.id, feeds + dropped,
                link=[f.id for f in feeds if f.id not in linked_ids], unlink=[f.id for f in dropped],
            )
            due += [s.id for s in states if s.summary.staleness >= s.summary.threshold
                    or (s.summary.kind == USER_PREFERENCES and s.summary.refreshed_at is None)]
            # a preference that left use (superseded by a correction or a newer fact, retired)
            # leaves user_preferences at once: the context must not show it beside its replacement
            urgent += [f.id for f in dropped if f.kind == USER_PREFERENCES]
        if due or urgent:
            store.on_commit(lambda: self._mark_due(due, urgent))

    def _mark_due(self, ids: Iterable[str], urgent: Iterable[str] = ()) -> None:
        with self._lock:
            self._due.update(ids)
            self._urgent.update(urgent)

    def after_write(self) -> None:
        """After a commit: in inline mode, refresh the summaries the write made due."""
        store = self.deps.store
        if store.in_transaction():
            return  # a batch is still open; its caller calls again after the commit
        with self._lock:
            if not (self._due or self._urgent):
                return
            if self.deps.settings.summary_refresh != "inline":
                self._due.clear()
                self._urgent.clear()
                return
            ids, urgent = sorted(self._due | self._urgent), sorted(self._urgent)
            self._due, self._urgent = set(), set()
        try:
            self.refresh(ids=ids, all_users=True, urgent=urgent)
        except GraphmemError as e:  # the write itself committed; the summary stays stale
            log.warning("inline summary refresh failed (will retry after the next write): %s", e)
            self._mark_due(ids, urgent)
        except Exception as e:  # a summarizer/LLM that is not a graphmem LLM: never fail the committed write
            log.warning("inline summary refresh failed (%s: %s); the summary stays stale", type(e).__name__, e)
            self._mark_due(ids, urgent)

    # --- refresher -----------------------------------------------------------------------------
    def refresh(self, *, force: bool = False, all_users: bool = False, ids: Sequence[str] | None = None,
                urgent: Sequence[str] = ()) -> list[Summary]:
        """Refresh due summaries (all of the user's with ``force``); returns the refreshed ones.
        ``urgent``: summary ids refreshed below their threshold too (when anything is pending)."""
        store, user = self.deps.store, self.deps.user
        if force:
            self._ensure_all(user)
        states = store.summary_states(None if all_users else user, due_only=not force, ids=ids)
        if urgent and not force:
            have = {st.id for st in states}
            states += [st for st in store.summary_states(None if all_users else user, ids=list(urgent))
                       if st.id not in have and st.summary.staleness > 0]
        if not states:
            return []
        # the pending learnings of every incremental refresh read once, and the summaries each
        # feeds worked out once (a learning is pending in each summary it feeds)
        fulls = [force or not state.summary.text for state in states]
        wanted = list(dict.fromkeys(i for st, full in zip(states, fulls) if not full for i in st.pending))
        inputs = {l.id: l for l in store.summary_inputs(wanted)} if wanted else {}
        keys_of = {lid: {f.key for f in feeds_of(l, self.deps.settings)} for lid, l in inputs.items()}
        texts = [self._compose(state, full=full, inputs=inputs, keys_of=keys_of) for state, full in zip(states, fulls)]
        # one embedder call for the texts that changed; an unchanged text keeps its stored vector
        changed = [i for i, (st, text) in enumerate(zip(states, texts))
                   if force or not text or st.summary.refreshed_at is None or text != st.summary.text]
        vectors: list[Any] = [None] * len(states)
        for i, vector in zip(changed, self.deps.embedder.embed([texts[i] for i in changed]) if changed else []):
            vectors[i] = vector
        now = self.deps.now()
        refreshes = [
            SummaryRefresh(st.summary.user_id, st.summary.key, text, vector, st.summary.staleness, st.pending)
            for st, text, vector in zip(states, texts, vectors)
        ]
        with store.transaction():  # one commit, two statements for all of them
            return [st.summary for st in store.save_summary_refreshes(refreshes, now)]

    def _ensure_all(self, user: str) -> None:
        """Create the user's summaries that no write has created yet (forced refreshes)."""
        store, settings = self.deps.store, self.deps.settings
        with store.transaction():
            store.ensure_summary(user, USER_PREFERENCES, USER_PREFERENCES, threshold_for(USER_PREFERENCES, settings))
            for kind, names in store.summary_names(user).items():
                for name in names:
                    store.ensure_summary(user, summary_key(kind, name), kind, threshold_for(kind, settings))

    def _compose(self, state: SummaryState, *, full: bool, inputs: dict[str, Learning] | None = None,
                 keys_of: dict[str, set[str]] | None = None) -> str:
        """The new text of one summary: incremental from its pending learnings, or rebuilt.
        ``inputs``: the pending learnings already read (by id); ``keys_of``: the keys of the
        summaries each of them feeds (both worked out here when not given)."""
        store, settings = self.deps.store, self.deps.settings
        s = state.summary
        kind, name = parse_key(s.key)
        kinds = learning_kinds_for(kind)
        limit = max(1, settings.summary_max_learnings)
        if full:
            wide = limit * 4 if kind == USER_PREFERENCES else limit
            changed = store.covered_learnings(s.user_id, kind, name, kinds=kinds, statuses=ELIGIBLE_STATUSES, limit=wide)
            if kind == USER_PREFERENCES:
                changed = sorted((l for l in changed if feeds_user_preferences(l, settings)), key=preference_rank)[:limit]
            removed: list[Learning] = []
            previous = ""
            store.relink_summary(s.user_id, s.key, kind, name, kinds=kinds, statuses=ELIGIBLE_STATUSES)
        else:
            if inputs is None:
                inputs = {l.id: l for l in store.summary_inputs(state.pending)}
            fetched = [inputs[i] for i in state.pending if i in inputs]
            if keys_of is None:
                keys_of = {}
            for l in fetched:  # worked out once per learning (refresh() passes them for all)
                if l.id not in keys_of:
                    keys_of[l.id] = {f.key for f in feeds_of(l, settings)}
            feeding = {l.id for l in fetched if s.key in keys_of[l.id]}
            changed = prioritise(l for l in fetched if l.id in feeding)[:limit]
            if kind == USER_PREFERENCES:
                changed = sorted(changed, key=preference_rank)
            removed = [l for l in fetched if l.id not in feeding]
            previous = s.text
        text = self.summarizer.summarize(previous, changed, removed, settings.summary_max_bullets)
        return fit_bullets(text, settings.budget_user_preferences) if kind == USER_PREFERENCES else text

    # --- reads ---------------------------------------------------------------------------------
    def get(self, key: str) -> Summary:
        """This user's summary ``key``; an empty one for a user_preferences not yet written."""
        kind, _ = parse_key(key)
        state = self.deps.store.get_summary_state(self.deps.user, key)
        if state is not None:
            return state.summary
        if kind == USER_PREFERENCES:
            return Summary(key=key, user_id=self.deps.user, kind=kind, threshold=threshold_for(kind, self.deps.settings))
        raise NotFoundError(
            f"no summary {key!r} for user {self.deps.user!r}: it is created when a learning about it is "
            "written; list the existing ones with Memory.summaries() (CLI: graphmem refresh --force to build all)"
        )

    def list(self) -> list[Summary]:
        """All of this user's summaries, by key."""
        return [st.summary for st in self.deps.store.summary_states(self.deps.user)]

    def user_preferences_text(self) -> str:
        """The text of this user's user_preferences summary, "" until it is first refreshed."""
        return self.deps.store.summary_text(self.deps.user, USER_PREFERENCES)


__all__ = [
    "ELIGIBLE_STATUSES",
    "PREFERENCE_KINDS",
    "SCOPED_KINDS",
    "SCOPED_LEARNING_KINDS",
    "USER_PREFERENCES",
    "USER_PREFERENCE_KINDS",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "Summarizer",
    "SummaryService",
    "feeds_of",
    "feeds_user_preferences",
    "fit_bullets",
    "is_eligible",
    "parse_key",
    "preference_rank",
    "prioritise",
    "summary_key",
    "threshold_for",
]
