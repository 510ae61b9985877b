"""Pydantic models for every node and edge of the graph. Data only: no I/O here.

The store (graphmem/store/) converts Kùzu rows to and from these models. Datetimes are
timezone-aware UTC; ids are uuid4 strings.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

LearningKind = Literal[
    "rule", "preference", "checklist", "bug_fix", "prompt", "observation", "hypothesis", "fact"
]
SourceType = Literal[
    "user_feedback",
    "self_evaluation",
    "observation",
    "reflection",
    "offline",
    "online",
    "evolution",
    "distillation",
    "weakness",
]
Sentiment = Literal["positive", "negative", "neutral"]
Status = Literal["shadow", "candidate", "canary", "active", "disabled"]
Tier = Literal["pinned", "active", "archive"]
EventKind = Literal[
    "message",
    "tool_call",
    "tool_result",
    "objective_start",
    "objective_end",
    "feedback",
    "trace",
]
Direction = Literal["inbound", "outbound"]
ObjectiveStatus = Literal["running", "completed", "failed", "cancelled"]
Rating = Literal["good", "okay", "bad"]

LEARNING_KINDS: tuple[str, ...] = get_args(LearningKind)
SOURCE_TYPES: tuple[str, ...] = get_args(SourceType)
SENTIMENTS: tuple[str, ...] = get_args(Sentiment)
STATUSES: tuple[str, ...] = get_args(Status)
TIERS: tuple[str, ...] = get_args(Tier)
EVENT_KINDS: tuple[str, ...] = get_args(EventKind)
OBJECTIVE_STATUSES: tuple[str, ...] = get_args(ObjectiveStatus)
RATINGS: tuple[str, ...] = get_args(Rating)


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def new_id() -> str:
    """A fresh uuid4 string id."""
    return str(uuid.uuid4())


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Learning(_Model):
    """A piece of learned knowledge (seed 001), with lifecycle state (seeds 000, 002, 003)."""

    id: str = Field(default_factory=new_id)
    user_id: str = "default"
    shared: bool = False
    kind: LearningKind = "rule"
    content: str
    recommendation: str | None = None
    applies_when: str | None = None
    source_type: SourceType = "observation"
    source_event_id: str | None = None
    sentiment: Sentiment = "neutral"
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    score: float = Field(default=0.5, ge=0.0, le=1.0)
    status: Status = "active"
    canary_allocation: float = Field(default=1.0, ge=0.0, le=1.0)
    tier: Tier = "active"
    helpful: int = Field(default=0, ge=0)
    harmful: int = Field(default=0, ge=0)
    validations: int = Field(default=0, ge=0)
    contradictions: int = Field(default=0, ge=0)
    times_applied: int = Field(default=0, ge=0)
    last_applied_at: datetime | None = None
    last_validated_at: datetime | None = None
    pass_streak: int = 0
    fail_streak: int = 0
    version: int = 1
    ttl_days: int | None = None
    superseded_by: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    # Associations, denormalised for convenience; the edges in the graph are the truth.
    tool: str | None = None
    objective_type: str | None = None
    topics: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)

    @property
    def success_rate(self) -> float:
        """helpful / (helpful + harmful), 0.5 when never rated (seed 002)."""
        total = self.helpful + self.harmful
        return self.helpful / total if total else 0.5


class Event(_Model):
    """Something that happened: a message, a tool call or result, an objective boundary."""

    id: str = Field(default_factory=new_id)
    user_id: str = "default"
    session_id: str | None = None
    kind: EventKind = "message"
    role: str | None = None
    direction: Direction = "inbound"
    is_owner: bool = False
    content: str = ""
    tool_name: str | None = None
    success: bool | None = None
    objective_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    metadata: dict[str, Any] = Field(default_factory=dict)
    entities: list[str] = Field(default_factory=list)


class Tool(_Model):
    """A tool the agent calls, with its success/error counters (seed 001)."""

    name: str
    success_count: int = 0
    error_count: int = 0


class Topic(_Model):
    """A subject learnings are about."""

    name: str


class Entity(_Model):
    """A person, organisation, project... that learnings and events mention."""

    name: str
    kind: str = "thing"


class Objective(_Model):
    """A long-running goal whose end is self-evaluated (seed 001)."""

    id: str = Field(default_factory=new_id)
    user_id: str = "default"
    goal: str
    objective_type: str | None = None
    status: ObjectiveStatus = "running"
    result: str | None = None
    score: float | None = None
    started_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime | None = None


class Summary(_Model):
    """A pre-computed summary node (seed 001), refreshed when staleness crosses threshold."""

    key: str
    user_id: str = "default"
    kind: str = "user_preferences"
    text: str = ""
    staleness: int = 0
    threshold: int = 3
    refreshed_at: datetime | None = None


class Application(_Model):
    """One context handed to an agent; outcomes credit the learnings it showed."""

    id: str = Field(default_factory=new_id)
    user_id: str = "default"
    query: str = ""
    tool: str | None = None
    pattern_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    outcome: str | None = None
    rating: Rating | None = None
    reasons: list[str] = Field(default_factory=list)
    learning_ids: list[str] = Field(default_factory=list)


class Transition(_Model):
    """One lifecycle change of a learning (seed 000's transition log)."""

    id: str = Field(default_factory=new_id)
    learning_id: str
    field: str
    old: str
    new: str
    reason: str = ""
    version: int = 1
    created_at: datetime = Field(default_factory=utcnow)


class Edge(_Model):
    """A typed edge between two nodes, as returned to analysts."""

    type: str
    src: str
    dst: str
    properties: dict[str, Any] = Field(default_factory=dict)


class LearningLinks(_Model):
    """What a learning is about: the edges written with it, in one transaction."""

    tool: str | None = None
    topics: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    objective_type: str | None = None
    objective_id: str | None = None
    source_event_id: str | None = None
