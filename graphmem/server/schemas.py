"""Request bodies of the server's endpoints: Memory's arguments as pydantic models.

Responses are graphmem's own models (Learning, Event, OutcomeReport...). Unknown fields are
refused (``extra="forbid"``) so a typo is an error that names the field, not a silent default.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AddLearning(_Body):
    """``Memory.add_learning``'s arguments."""

    content: str
    kind: str = "rule"
    tool: str | None = None
    entities: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    objective_type: str | None = None
    recommendation: str | None = None
    applies_when: str | None = None
    sentiment: str = "neutral"
    source_type: str = "observation"
    confidence: float = 0.5
    status: str = "active"
    tier: str = "active"
    shared: bool = False
    ttl_days: int | None = None
    source_event_id: str | None = None
    objective_id: str | None = None
    created_at: datetime | None = None


class AddLearnings(_Body):
    """``Memory.add_learnings``: each item holds add_learning's arguments."""

    items: list[AddLearning]


class UpdateLearning(_Body):
    """``Memory.update_learning``'s changes (only the fields given are changed)."""

    changes: dict[str, Any]


class Retire(_Body):
    """``Memory.retire_learning``'s reason."""

    reason: str = "retired"


class Supersede(_Body):
    """``Memory.supersede(new_id, old_id)``: the learning in the path supersedes ``old_id``."""

    old_id: str
    reason: str = "superseded"


class RecordEvent(_Body):
    """``Memory.record_event``'s arguments."""

    kind: str
    content: str = ""
    tool: str | None = None
    role: str | None = None
    objective_id: str | None = None
    session_id: str | None = None
    created_at: datetime | None = None
    entities: list[str] = Field(default_factory=list)
    success: bool | None = None
    metadata: dict[str, Any] | None = None
    direction: str | None = None
    is_owner: bool = False


class RecordEvents(_Body):
    """``Memory.record_events``: each item holds record_event's arguments."""

    items: list[RecordEvent]


class ObserveMessage(_Body):
    """``Memory.observe_message``'s arguments."""

    content: str
    tool: str | None = None
    is_owner: bool = True
    role: str = "user"
    session_id: str | None = None
    objective_id: str | None = None
    entities: list[str] = Field(default_factory=list)


class StartObjective(_Body):
    """``Memory.start_objective``'s arguments."""

    goal: str
    objective_type: str | None = None


class EndObjective(_Body):
    """``Memory.end_objective``'s arguments."""

    status: str = "completed"
    result: str | None = None
    reflect: bool = True


class ContextRequest(_Body):
    """``Memory.context``'s arguments."""

    query: str = ""
    tool: str | None = None
    entities: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    objective_type: str | None = None
    limit: int = 8
    token_budget: int | None = None


class SearchRequest(_Body):
    """``Memory.search``'s arguments."""

    query: str = ""
    k: int = 10
    over: str = "learnings"
    tool: str | None = None
    entities: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)


class OutcomeRequest(_Body):
    """``Memory.record_outcome``'s arguments."""

    context_id: str
    success: bool | None = None
    rating: str | None = None
    reasons: list[str] = Field(default_factory=list)
    used: list[str] | None = None  # the learnings acted on (None: credit shared by rank)
    helpful: list[str] = Field(default_factory=list)
    harmful: list[str] = Field(default_factory=list)


class RefreshRequest(_Body):
    """``Memory.refresh_summaries``'s arguments (``all_users`` needs an admin key)."""

    force: bool = False
    all_users: bool = False


class PromoteRequest(_Body):
    """``Memory.promote``: a file path on the server's machine."""

    path: str
    min_confidence: float | None = None


class SweepRequest(_Body):
    """``Memory.sweep``: file paths on the server's machine."""

    paths: list[str]


class ExportRequest(_Body):
    """``Memory.export_jsonl`` / ``export_graphml`` to a path on the server's machine."""

    path: str
    format: str = "jsonl"
    min_confidence: float = 0.0
    feedback: str = "any"


class CypherRequest(_Body):
    """A read-only Cypher query and its parameters."""

    query: str
    params: dict[str, Any] = Field(default_factory=dict)
    scope: Literal["user", "all"] = "user"  # the key's user's view, or the whole file (admin / all-users analyst)


class JudgeRequest(_Body):
    """``Memory.add_judge``'s arguments."""

    name: str
    criteria: str
    node: str | None = None


class TraceRequest(_Body):
    """The trace endpoint's body (online mode): an output to judge and learn from."""

    input_text: str
    output: str
    node: str = "default"
    ground_truth: str | None = None
    reasoning: str | None = None
    mode: str = "online"


class TrainExample(_Body):
    """One historical example of the train endpoint."""

    input_text: str
    output: str
    ground_truth: str | None = None
    reasoning: str | None = None
    node: str | None = None


class TrainRequest(_Body):
    """The train endpoint's body (offline mode): a dataset of examples."""

    dataset: list[TrainExample]
    node: str = "default"


class SeedContextRequest(_Body):
    """The seed-style context endpoint's body."""

    input_text: str
    node: str = "default"
    max_bullets_per_evaluator: int = 10
