"""The labelled retrieval benchmark: file format, loader, validation and noise sets.

``benchmarks/data/learnings.json`` holds learnings for three users (alice, bob, carol, plus a few
``shared`` learnings every user sees) and queries labelled with graded relevance
(2 = directly answers, 1 = useful; everything not listed is grade 0).

Some learnings are *noise*: a correct retriever must never return them to the querying user.
For a user, noise is (see :func:`noise_keys`):

- status ``disabled``, ``shadow`` or ``candidate`` (not in the advice pool);
- tier ``archive``;
- superseded: another learning's ``supersedes`` points at it (whatever its own status and tier);
- TTL expired: ``age_days`` beyond the kind's TTL (``DEFAULT_TTL_DAYS`` mirrors the defaults of
  ``graphmem.config.Settings.ttl_days``: observation 90 days, hypothesis 180 days);
- another user's learning that is not ``shared``.

``canary`` learnings are eligible but sampled (DESIGN.md "Retrieval"), so they are neither noise
nor ever labelled relevant: returning one costs precision, missing one costs nothing.

:func:`load_dataset` checks the file's integrity (unique keys, references that exist, relevant
keys visible to the querying user and never noise). :func:`check_labels` checks the labelling
rules of each query kind (e.g. a ``graph_tool`` query shares no content word with its relevant
learnings); the tests require it to report nothing for the shipped file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from graphmem.config import Settings

DEFAULT_PATH = Path(__file__).resolve().parent / "data" / "learnings.json"

LearningKind = Literal["rule", "preference", "checklist", "bug_fix", "prompt", "observation", "hypothesis"]
Status = Literal["active", "canary", "candidate", "shadow", "disabled"]
Tier = Literal["pinned", "active", "archive"]
Sentiment = Literal["positive", "negative", "neutral"]
SourceType = Literal["user_feedback", "self_evaluation", "observation", "reflection", "offline", "online", "evolution"]
QueryKind = Literal[
    "lexical",
    "paraphrase",
    "graph_tool",
    "graph_entity",
    "tool_only",
    "isolation",
    "conflict",
    "no_answer",
]

QUERY_KINDS: tuple[str, ...] = (
    "lexical",
    "paraphrase",
    "graph_tool",
    "graph_entity",
    "tool_only",
    "isolation",
    "conflict",
    "no_answer",
)
#: The fewest queries of each kind the shipped file must hold.
MIN_QUERIES_PER_KIND: Mapping[str, int] = {k: (4 if k == "no_answer" else 6) for k in QUERY_KINDS}
#: Statuses that keep a learning out of the advice pool entirely.
NOISE_STATUSES: frozenset[str] = frozenset({"disabled", "shadow", "candidate"})
#: Time to live per learning kind in days (None or absent = never expires); mirrors the
#: graphmem's per-kind TTL defaults (seed 004), read from Settings so the two never drift apart.
DEFAULT_TTL_DAYS: Mapping[str, int | None] = Settings().ttl_days

Grade = Annotated[int, Field(ge=1, le=2)]


class DatasetError(ValueError):
    """The benchmark file is missing, is not JSON, or breaks the format's rules."""


class BenchLearning(BaseModel):
    """One learning as stored in the benchmark file (the loader turns it into a graphmem Learning).

    ``key`` is the benchmark's own id (``L001``…), not graphmem's id: the runner maps one to the
    other when it inserts the learnings. ``age_days`` says how long ago it was created.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(min_length=1)
    user: str = Field(min_length=1)
    content: str = Field(min_length=1)
    kind: LearningKind
    tool: str | None = None
    entities: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    objective_type: str | None = None
    recommendation: str | None = None
    applies_when: str | None = None
    sentiment: Sentiment = "neutral"
    source_type: SourceType = "observation"
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    status: Status = "active"
    tier: Tier = "active"
    helpful: int = Field(default=0, ge=0)
    harmful: int = Field(default=0, ge=0)
    validations: int = Field(default=0, ge=0)
    shared: bool = False
    supersedes: str | None = None
    age_days: int = Field(default=0, ge=0)

    def created_at(self, now: datetime | None = None) -> datetime:
        """When the learning was created: ``now`` (default: the current UTC time) minus ``age_days``."""
        return (now or datetime.now(UTC)) - timedelta(days=self.age_days)

    def expired(self, ttl_days: Mapping[str, int | None] = DEFAULT_TTL_DAYS) -> bool:
        """True when ``age_days`` exceeds the TTL of this learning's kind (None: never expires)."""
        ttl = ttl_days.get(self.kind)
        return ttl is not None and self.age_days > ttl

    def text(self) -> str:
        """Every searchable text field joined: content, recommendation, applies_when."""
        return " ".join(t for t in (self.content, self.recommendation, self.applies_when) if t)


class BenchQuery(BaseModel):
    """One labelled query: what the agent is about to do, and which learnings should come back.

    ``relevant`` maps learning keys to grades (2 = directly answers, 1 = useful); every other
    learning is grade 0. ``no_answer`` queries have an empty ``relevant``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    user: str = Field(min_length=1)
    text: str
    tool: str | None = None
    entities: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    objective_type: str | None = None
    kind: QueryKind
    relevant: dict[str, Grade] = Field(default_factory=dict)


class BenchDataset(BaseModel):
    """The whole file. Constructing one validates it (see :func:`integrity_problems`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1]
    users: tuple[str, ...] = Field(min_length=1)
    learnings: tuple[BenchLearning, ...]
    queries: tuple[BenchQuery, ...]

    _by_key: dict[str, BenchLearning] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _validate(self) -> BenchDataset:
        problems = integrity_problems(self)
        if problems:
            raise ValueError(
                f"{len(problems)} problem(s): " + "; ".join(problems[:20]) + (" …" if len(problems) > 20 else "")
            )
        self._by_key = {l.key: l for l in self.learnings}
        return self

    def learning(self, key: str) -> BenchLearning:
        """The learning with this benchmark key (KeyError if there is none)."""
        return self._by_key[key]

    def queries_of_kind(self, kind: str) -> list[BenchQuery]:
        """The queries of one kind, in file order."""
        return [q for q in self.queries if q.kind == kind]


def load_dataset(path: str | Path | None = None) -> BenchDataset:
    """Read and validate the benchmark file (default: ``benchmarks/data/learnings.json``).

    Raises :class:`DatasetError` naming the file and every problem found.
    """
    p = Path(path) if path is not None else DEFAULT_PATH
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"cannot read benchmark file {p}: {exc}") from exc
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{p} is not valid JSON: {exc}") from exc
    try:
        return BenchDataset.model_validate(data)
    except ValidationError as exc:
        raise DatasetError(f"{p} is not a valid benchmark file: {exc}") from exc


# --------------------------------------------------------------------------------------------
# visibility and noise


def _superseded_keys(learnings: Iterable[BenchLearning]) -> set[str]:
    return {l.supersedes for l in learnings if l.supersedes is not None}


def _is_noise(
    l: BenchLearning,
    user: str,
    superseded: set[str],
    ttl_days: Mapping[str, int | None],
) -> bool:
    return (
        (l.user != user and not l.shared)
        or l.status in NOISE_STATUSES
        or l.tier == "archive"
        or l.key in superseded
        or l.expired(ttl_days)
    )


def noise_keys(
    dataset: BenchDataset,
    user: str,
    *,
    ttl_days: Mapping[str, int | None] = DEFAULT_TTL_DAYS,
) -> set[str]:
    """Keys that must never be returned to ``user``.

    Disabled/shadow/candidate status, archive tier, superseded by another learning, TTL expired,
    and other users' learnings that are not shared.
    """
    superseded = _superseded_keys(dataset.learnings)
    return {l.key for l in dataset.learnings if _is_noise(l, user, superseded, ttl_days)}


def eligible_keys(
    dataset: BenchDataset,
    user: str,
    *,
    ttl_days: Mapping[str, int | None] = DEFAULT_TTL_DAYS,
) -> set[str]:
    """Keys a correct retriever may return to ``user``: visible and not noise (canaries included)."""
    return {l.key for l in dataset.learnings} - noise_keys(dataset, user, ttl_days=ttl_days)


def noise_reasons(l: BenchLearning, user: str, dataset: BenchDataset) -> list[str]:
    """Why a learning is noise for ``user`` (empty if it is not): for reports and debugging."""
    reasons: list[str] = []
    if l.user != user and not l.shared:
        reasons.append(f"belongs to {l.user}")
    if l.status in NOISE_STATUSES:
        reasons.append(f"status {l.status}")
    if l.tier == "archive":
        reasons.append("tier archive")
    by = [o.key for o in dataset.learnings if o.supersedes == l.key]
    if by:
        reasons.append(f"superseded by {', '.join(by)}")
    if l.expired():
        reasons.append(f"TTL expired ({l.kind}, {l.age_days} days)")
    return reasons


# --------------------------------------------------------------------------------------------
# integrity (run on every load)


def integrity_problems(dataset: BenchDataset) -> list[str]:
    """Structural problems of a dataset; empty when the file is usable.

    Unique users, learning keys and query ids; every learning and query names a listed user;
    ``supersedes`` points at an existing, older learning of the same user; query text is empty
    exactly for ``tool_only`` (which needs a tool); ``no_answer`` queries label nothing and every
    other query labels something; each relevant key exists, is visible to the querying user
    (own or shared) and is not noise for that user, nor a canary.
    """
    problems: list[str] = []
    users = set(dataset.users)
    if len(users) != len(dataset.users):
        problems.append("users are not unique")

    by_key: dict[str, BenchLearning] = {}
    for l in dataset.learnings:
        if l.key in by_key:
            problems.append(f"duplicate learning key {l.key}")
        by_key[l.key] = l
        if l.user not in users:
            problems.append(f"{l.key}: unknown user {l.user!r}")
    for l in dataset.learnings:
        if l.supersedes is None:
            continue
        old = by_key.get(l.supersedes)
        if old is None:
            problems.append(f"{l.key}: supersedes unknown learning {l.supersedes}")
        elif old.key == l.key:
            problems.append(f"{l.key}: supersedes itself")
        elif old.user != l.user:
            problems.append(f"{l.key}: supersedes {old.key} of another user ({old.user})")
        elif old.age_days <= l.age_days:
            problems.append(f"{l.key}: supersedes {old.key}, which is not older")

    superseded = _superseded_keys(dataset.learnings)
    seen_ids: set[str] = set()
    for q in dataset.queries:
        if q.id in seen_ids:
            problems.append(f"duplicate query id {q.id}")
        seen_ids.add(q.id)
        if q.user not in users:
            problems.append(f"{q.id}: unknown user {q.user!r}")
        if q.kind == "tool_only":
            if q.text.strip():
                problems.append(f"{q.id}: tool_only query must have empty text")
            if q.tool is None:
                problems.append(f"{q.id}: tool_only query needs a tool")
        elif not q.text.strip():
            problems.append(f"{q.id}: empty text is only for tool_only queries")
        if q.kind == "no_answer" and q.relevant:
            problems.append(f"{q.id}: no_answer query must have an empty 'relevant'")
        if q.kind != "no_answer" and not q.relevant:
            problems.append(f"{q.id}: {q.kind} query labels no relevant learning")
        for key in q.relevant:
            rl = by_key.get(key)
            if rl is None:
                problems.append(f"{q.id}: relevant key {key} does not exist")
                continue
            if rl.user != q.user and not rl.shared:
                problems.append(f"{q.id}: relevant {key} belongs to {rl.user}, not {q.user}")
            elif _is_noise(rl, q.user, superseded, DEFAULT_TTL_DAYS):
                problems.append(f"{q.id}: relevant {key} is noise for {q.user}")
            if rl.status == "canary":
                problems.append(f"{q.id}: relevant {key} is a canary (sampled, never labelled)")
    return problems


# --------------------------------------------------------------------------------------------
# labelling rules per query kind (checked by the tests on the shipped file)

_STOPWORD_TEXT = """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing don down during each few for
    from further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not now of off on once only or other
    our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself
    yourselves e g eg ok s t"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+")


def _stem(word: str) -> str:
    """A deliberately crude stemmer: enough to make 'meetings'/'meeting'/'meet' collide."""
    w = word
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("es") and w[-3] in "sxz":
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    for suffix in ("ing", "ed", "ly"):
        if len(w) - len(suffix) >= 3 and w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def content_words(text: str) -> set[str]:
    """Lower-cased, stemmed words of ``text`` without stopwords or single characters."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1}


def shared_words(query: BenchQuery, learning: BenchLearning) -> set[str]:
    """Content words the query's text has in common with the learning's searchable text."""
    return content_words(query.text) & content_words(learning.text())


def check_labels(dataset: BenchDataset) -> list[str]:
    """Problems with how queries are labelled for their kind; empty when every rule holds.

    - lexical: every grade-2 learning shares at least one content word with the query;
    - paraphrase: every grade-2 learning shares at most one content word with the query;
    - graph_tool: the query has a tool; grade-2 learnings are about that tool; no relevant
      learning shares a content word with the query;
    - graph_entity: the query names entities; grade-2 learnings are tagged with one of them;
      no relevant learning shares a content word with the query;
    - tool_only: the relevant set is exactly the user's eligible, active learnings about the
      tool, with at least one grade 2;
    - isolation: another user holds a non-shared learning about the same tool or entity (the
      temptation the query tests);
    - conflict: a relevant learning supersedes another learning (which is therefore noise);
    - every labelled query has at least one grade-2 learning.
    """
    problems: list[str] = []
    by_key = {l.key: l for l in dataset.learnings}
    superseded = _superseded_keys(dataset.learnings)
    for q in dataset.queries:
        rel = {k: by_key[k] for k in q.relevant}
        top = [by_key[k] for k, g in q.relevant.items() if g == 2]
        if q.relevant and not top:
            problems.append(f"{q.id}: no grade-2 learning")
        if q.kind == "lexical":
            for l in top:
                if not shared_words(q, l):
                    problems.append(f"{q.id} (lexical): {l.key} shares no word with the query")
        elif q.kind == "paraphrase":
            for l in top:
                common = shared_words(q, l)
                if len(common) > 1:
                    problems.append(f"{q.id} (paraphrase): {l.key} shares {sorted(common)}")
        elif q.kind in ("graph_tool", "graph_entity"):
            if q.kind == "graph_tool" and q.tool is None:
                problems.append(f"{q.id} (graph_tool): no tool")
            if q.kind == "graph_entity" and not q.entities:
                problems.append(f"{q.id} (graph_entity): no entities")
            for l in top:
                if q.kind == "graph_tool" and l.tool != q.tool:
                    problems.append(f"{q.id} (graph_tool): {l.key} is not about {q.tool}")
                if q.kind == "graph_entity" and not set(l.entities) & set(q.entities):
                    problems.append(f"{q.id} (graph_entity): {l.key} has none of {q.entities}")
            for l in rel.values():
                common = shared_words(q, l)
                if common:
                    problems.append(f"{q.id} ({q.kind}): {l.key} shares {sorted(common)}")
        elif q.kind == "tool_only":
            expected = {
                l.key
                for l in dataset.learnings
                if l.tool == q.tool and l.status == "active" and not _is_noise(l, q.user, superseded, DEFAULT_TTL_DAYS)
            }
            if set(q.relevant) != expected:
                problems.append(f"{q.id} (tool_only): relevant {sorted(q.relevant)} != eligible {sorted(expected)}")
        elif q.kind == "isolation":
            tempting = [
                l.key
                for l in dataset.learnings
                if l.user != q.user
                and not l.shared
                and ((q.tool is not None and l.tool == q.tool) or set(l.entities) & set(q.entities))
            ]
            if not tempting:
                problems.append(f"{q.id} (isolation): no other user's learning to resist")
        elif q.kind == "conflict" and not any(l.supersedes is not None for l in rel.values()):
            problems.append(f"{q.id} (conflict): no relevant learning supersedes another")
    return problems


def summary(dataset: BenchDataset) -> dict[str, object]:
    """Counts for reports: learnings per user, queries per kind, noise items per reason."""
    per_user: dict[str, int] = {}
    for l in dataset.learnings:
        owner = "shared" if l.shared else l.user
        per_user[owner] = per_user.get(owner, 0) + 1
    per_kind = {k: len(dataset.queries_of_kind(k)) for k in QUERY_KINDS}
    superseded = _superseded_keys(dataset.learnings)
    noise = {
        "status": sum(1 for l in dataset.learnings if l.status in NOISE_STATUSES),
        "archive": sum(1 for l in dataset.learnings if l.tier == "archive"),
        "superseded": len(superseded),
        "superseded_archived": sum(1 for k in superseded if dataset.learning(k).tier == "archive"),
        "superseded_still_active": sum(
            1 for k in superseded if dataset.learning(k).status == "active" and dataset.learning(k).tier != "archive"
        ),
        "ttl_expired": sum(1 for l in dataset.learnings if l.expired()),
    }
    return {
        "learnings": len(dataset.learnings),
        "queries": len(dataset.queries),
        "learnings_per_owner": per_user,
        "queries_per_kind": per_kind,
        "noise": noise,
        "canary": sum(1 for l in dataset.learnings if l.status == "canary"),
        "pinned": sum(1 for l in dataset.learnings if l.tier == "pinned"),
    }
