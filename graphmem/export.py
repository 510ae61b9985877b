"""Exports: chat-format training pairs and the whole graph as GraphML (networkx).

Training pairs. An *episode* is the events of one objective (events with ``objective_id``) or,
for events outside any objective, of one session (``session_id``). Inside an episode, a *pair* is
an inbound user message, the tool calls and results after it, and the assistant's next outbound
message (the answer). Each pair becomes one JSON line, in the OpenAI chat format with tools::

    {"messages": [{"role": "user", "content": ...},
                  {"role": "assistant", "content": null, "tool_calls": [{"id", "type": "function",
                   "function": {"name": ..., "arguments": ...}}]},
                  {"role": "tool", "tool_call_id": ..., "name": ..., "content": ...},
                  {"role": "assistant", "content": ...}],
     "metadata": {"episode_id": ..., "episode_kind": "objective"|"session", "confidence": ...,
                  "feedback": "positive"|"negative"|null, ...}}

An episode's signals: its objective's status (completed +, failed/cancelled −) and score, the
outcomes of the Applications its events name in ``metadata["context_id"]`` (or, when none is
named, the user's Applications created during the episode), ``tool_result`` events with
success=False (−) and ``feedback`` events with ``metadata["sentiment"]``. An episode is
*successful* when it has a positive signal and no negative one. ``confidence`` is the objective's
score when it has one, else the share of positive signals. ``feedback="positive"`` keeps only
episodes with explicit positive feedback (a rating "good", or a positive feedback event).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from graphmem.errors import InvalidInputError
from graphmem.insights import outcome_success
from graphmem.models import Event, Objective

if TYPE_CHECKING:
    from graphmem.deps import Deps

FeedbackFilter = Literal["any", "positive"]
_CONTEXT_KEYS = ("context_id", "application_id")


class Episode(BaseModel):
    """One episode with the signals that judge it."""

    id: str
    kind: Literal["objective", "session"]
    events: list[Event] = Field(default_factory=list)
    objective: Objective | None = None
    positive: int = 0
    negative: int = 0
    explicit_positive: int = 0
    confidence: float = 0.0

    @property
    def successful(self) -> bool:
        """A positive signal and no negative one."""
        return self.positive > 0 and self.negative == 0

    @property
    def feedback(self) -> str | None:
        """"negative" if anything went wrong, "positive" on explicit praise, else None."""
        if self.negative:
            return "negative"
        return "positive" if self.explicit_positive else None


class ExportReport(BaseModel):
    """What an export wrote."""

    path: str
    format: Literal["jsonl", "graphml"]
    episodes: int = 0
    episodes_kept: int = 0
    records: int = 0
    nodes: int = 0
    edges: int = 0


def _group(events: Sequence[Event]) -> dict[tuple[str, str], list[Event]]:
    groups: dict[tuple[str, str], list[Event]] = {}
    for e in events:
        if e.objective_id:
            key = ("objective", e.objective_id)
        elif e.session_id:
            key = ("session", e.session_id)
        else:
            continue
        groups.setdefault(key, []).append(e)
    return groups


def _in_window(created: datetime | None, start: datetime, end: datetime) -> bool:
    return created is not None and start <= created <= end


def episodes(deps: Deps) -> list[Episode]:
    """The user's episodes, each with its signals counted (see the module docstring)."""
    events = deps.store.episode_events(deps.user)
    objectives = {o.id: o for o in deps.store.user_objectives(deps.user)}
    apps = deps.store.application_outcomes(deps.user)
    apps_by_id = {a["id"]: a for a in apps}
    out: list[Episode] = []
    for (kind, ident), evs in _group(events).items():
        ep = Episode(id=ident, kind=kind, events=evs, objective=objectives.get(ident) if kind == "objective" else None)  # type: ignore[arg-type]
        if ep.objective is not None:
            if ep.objective.status == "completed":
                ep.positive += 1
            elif ep.objective.status in ("failed", "cancelled"):
                ep.negative += 1
        named = {str(e.metadata[k]) for e in evs for k in _CONTEXT_KEYS if e.metadata.get(k)}
        linked = [apps_by_id[i] for i in named if i in apps_by_id]
        if not named:
            start, end = evs[0].created_at, evs[-1].created_at
            linked = [a for a in apps if _in_window(a["created_at"], start, end)]
        for a in linked:
            success = outcome_success(a["outcome"], a["rating"])
            if success is True:
                ep.positive += 1
            elif success is False:
                ep.negative += 1
            if a["rating"] == "good":
                ep.explicit_positive += 1
        for e in evs:
            if e.kind == "tool_result" and e.success is False:
                ep.negative += 1
            if e.kind == "feedback":
                sentiment = str(e.metadata.get("sentiment", "")).lower()
                if sentiment == "positive":
                    ep.positive += 1
                    ep.explicit_positive += 1
                elif sentiment == "negative":
                    ep.negative += 1
        signals = ep.positive + ep.negative
        if ep.objective is not None and ep.objective.score is not None:
            ep.confidence = float(ep.objective.score)
        else:
            ep.confidence = ep.positive / signals if signals else 0.0
        out.append(ep)
    out.sort(key=lambda ep: (ep.events[0].created_at, ep.id))
    return out


def _is_user(e: Event) -> bool:
    return e.kind == "message" and e.direction == "inbound" and (e.role or "user").lower() in ("user", "human", "owner")


def _is_assistant(e: Event) -> bool:
    return e.kind == "message" and e.direction == "outbound" and (e.role or "assistant").lower() in ("assistant", "agent")


def _arguments(e: Event) -> str:
    """A tool call's arguments as a JSON string: ``metadata["arguments"]`` (or ``"args"``) when
    the call recorded them, else the event's text."""
    for key in ("arguments", "args"):
        if key in e.metadata:
            value = e.metadata[key]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return e.content


def tool_messages(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The tool calls and results between a user message and the answer, as chat messages: an
    assistant message with ``tool_calls`` per call, a ``tool`` message per result.

    A result answers the call named by ``metadata["call_id"]`` (or ``"tool_call_id"``), else the
    oldest unanswered call of the same tool; a result with no call gets one (arguments ""); a
    call with no result gets the result "(no result recorded)", so every call is answered.
    """
    messages: list[dict[str, Any]] = []
    open_calls: list[tuple[str, str | None]] = []  # (call id, tool), oldest first
    for e in events:
        if e.kind == "tool_call":
            call_id = str(e.metadata.get("call_id") or e.metadata.get("tool_call_id") or e.id)
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": e.tool_name or "tool", "arguments": _arguments(e)}}
            ]})
            open_calls.append((call_id, e.tool_name))
        elif e.kind == "tool_result":
            named = e.metadata.get("call_id") or e.metadata.get("tool_call_id")
            match = next((c for c in open_calls if named and c[0] == str(named)), None)
            match = match or next((c for c in open_calls if c[1] == e.tool_name), None)
            if match is None:
                call_id = f"call-{e.id}"
                messages.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": e.tool_name or "tool", "arguments": ""}}
                ]})
                match = (call_id, e.tool_name)
            else:
                open_calls.remove(match)
            messages.append({"role": "tool", "tool_call_id": match[0], "name": e.tool_name or match[1] or "tool",
                             "content": e.content})
    for call_id, tool in open_calls:
        messages.append({"role": "tool", "tool_call_id": call_id, "name": tool or "tool", "content": "(no result recorded)"})
    return messages


def pairs(episode: Episode) -> list[dict[str, Any]]:
    """The episode's training records: a user message, the tool calls and results after it (see
    :func:`tool_messages`), and the assistant's next message, the answer."""
    records: list[dict[str, Any]] = []
    pending: Event | None = None
    between: list[Event] = []
    for e in episode.events:
        if _is_user(e):
            pending, between = e, []
        elif pending is not None and e.kind in ("tool_call", "tool_result"):
            between.append(e)
        elif _is_assistant(e) and pending is not None:
            tools = tool_messages(between)
            metadata: dict[str, Any] = {
                "episode_id": episode.id,
                "episode_kind": episode.kind,
                "objective_id": episode.objective.id if episode.objective else None,
                "goal": episode.objective.goal if episode.objective else None,
                "session_id": e.session_id or pending.session_id,
                "user_id": e.user_id,
                "confidence": round(episode.confidence, 4),
                "feedback": episode.feedback,
                "user_event_id": pending.id,
                "assistant_event_id": e.id,
                "tool_calls": sum(1 for m in tools if m["role"] == "assistant"),
                "created_at": e.created_at.isoformat(),
            }
            for key in ("model", "cost", "latency_ms"):
                if key in e.metadata:
                    metadata[key] = e.metadata[key]
            records.append(
                {
                    "messages": [
                        {"role": "user", "content": pending.content},
                        *tools,
                        {"role": "assistant", "content": e.content},
                    ],
                    "metadata": metadata,
                }
            )
            pending, between = None, []
    return records


def training_pairs(deps: Deps, *, min_confidence: float = 0.0, feedback: str = "any") -> tuple[list[dict[str, Any]], int, int]:
    """Training records of successful episodes passing the filters; also (#episodes, #kept)."""
    if feedback not in ("any", "positive"):
        raise InvalidInputError(f"feedback must be 'any' or 'positive', got {feedback!r}")
    if not 0.0 <= float(min_confidence) <= 1.0:
        raise InvalidInputError(f"min_confidence must be between 0 and 1, got {min_confidence}")
    eps = episodes(deps)
    kept = [
        ep for ep in eps
        if ep.successful and ep.confidence >= min_confidence and (feedback == "any" or ep.feedback == "positive")
    ]
    records = [r for ep in kept for r in pairs(ep)]
    return records, len(eps), len(kept)


def export_jsonl(
    deps: Deps, path: str | os.PathLike[str], *, min_confidence: float = 0.0, feedback: str = "any"
) -> ExportReport:
    """Write the training records to ``path``, one JSON object per line."""
    records, total, kept = training_pairs(deps, min_confidence=min_confidence, feedback=feedback)
    target = _target(path)
    with open(target, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
    return ExportReport(path=str(target), format="jsonl", episodes=total, episodes_kept=kept, records=len(records))


def _target(path: str | os.PathLike[str]) -> Path:
    target = Path(path)
    if target.is_dir():
        raise InvalidInputError(f"{target} is a directory; pass a file path")
    if not target.parent.exists():
        raise InvalidInputError(f"the folder {target.parent} does not exist; create it first")
    return target


def _string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _attr(name: str, reserved: str) -> str:
    """A property name that cannot clash with the reserved attribute (``label``/``type``)."""
    return f"{name}_" if name == reserved else name


def graph(deps: Deps, *, scope: str = "user") -> Any:
    """The graph as a ``networkx.MultiDiGraph`` (vectors left out, properties as strings).

    ``scope="user"``: this user's view of the file (as ``Memory.cypher``); ``"all"``: every node.
    Node ids are "Label:key" (the node's primary key); each node has a ``label`` attribute and
    each edge a ``type`` attribute (its Kùzu rel table) plus its properties.
    """
    import networkx as nx

    from graphmem.store import analyst

    if scope == "user":
        nodes, edges = analyst.user_graph(deps.store, deps.user)
    elif scope == "all":
        nodes, edges = deps.store.graph_nodes(), deps.store.graph_edges()
    else:
        raise InvalidInputError(f"scope must be 'user' or 'all', got {scope!r}")
    g = nx.MultiDiGraph()
    names: dict[str, str] = {}
    for node in nodes:
        props = node["properties"]
        pk = props.get("id", props.get("name", props.get("key")))
        ident = f"{node['label']}:{pk if pk is not None else node['key']}"
        names[node["key"]] = ident
        g.add_node(ident, label=node["label"], **{_attr(k, "label"): _string(v) for k, v in props.items()})
    for edge in edges:
        src, dst = names.get(edge["src"]), names.get(edge["dst"])
        if src is None or dst is None:
            continue
        attrs = {_attr(k, "type"): _string(v) for k, v in edge["properties"].items()}
        g.add_edge(src, dst, key=edge["type"] + f":{g.number_of_edges(src, dst)}", type=edge["type"], **attrs)
    return g


def export_graphml(deps: Deps, path: str | os.PathLike[str], *, scope: str = "user") -> ExportReport:
    """Write the graph to ``path`` as GraphML (readable by networkx, Gephi, yEd, Cytoscape):
    this user's view (``scope="user"``) or the whole file (``scope="all"``)."""
    import networkx as nx

    target = _target(path)
    g = graph(deps, scope=scope)
    nx.write_graphml(g, str(target))
    return ExportReport(path=str(target), format="graphml", nodes=g.number_of_nodes(), edges=g.number_of_edges())
