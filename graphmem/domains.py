"""What a *domain* is: one area of the agent's work, the unit the weakness trainer and domain
evolution measure (:mod:`graphmem.weakness`, :mod:`graphmem.domain_evolution`).

A domain is a tool (``tool:send_email``), a topic (``topic:email style``) or an objective type
(``objective_type:research``): the names learnings are linked to (``ABOUT_TOOL``, ``ABOUT_TOPIC``,
``FOR_OBJECTIVE_TYPE``). A learning belongs to every domain it is linked to; a learning linked to
none belongs to ``general:general``. A context that showed a learning counts in that learning's
domains, so "how advice works in a domain" means how the domain's learnings fared where they were
shown. This module is the one place that says so; both services call :func:`domains_of`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict

from graphmem.errors import InvalidInputError

if TYPE_CHECKING:
    from graphmem.store import KuzuGraphStore

DomainKind = Literal["tool", "topic", "objective_type", "general"]
DOMAIN_KINDS: tuple[str, ...] = get_args(DomainKind)
#: the name node a domain kind covers (``general`` covers none)
NAME_TABLES = {"tool": "Tool", "topic": "Topic", "objective_type": "ObjectiveType"}


class DomainRef(BaseModel):
    """One domain: its kind and name; ``key`` ("kind:name") identifies it."""

    model_config = ConfigDict(frozen=True)

    kind: DomainKind
    name: str

    @property
    def key(self) -> str:
        """``kind:name``, e.g. ``tool:send_email``."""
        return f"{self.kind}:{self.name}"

    def __str__(self) -> str:
        return self.key


GENERAL = DomainRef(kind="general", name="general")


def domains_of(tool: str | None, topics: Iterable[str] | None, objective_type: str | None) -> list[DomainRef]:
    """The domains of a learning with these links (``general`` when it has none), in a stable order."""
    out: list[DomainRef] = []
    if tool:
        out.append(DomainRef(kind="tool", name=tool))
    for topic in dict.fromkeys(t for t in topics or () if t):
        out.append(DomainRef(kind="topic", name=topic))
    if objective_type:
        out.append(DomainRef(kind="objective_type", name=objective_type))
    return out or [GENERAL]


def parse_domain(text: object) -> DomainRef:
    """A domain from its key (``tool:send_email``); InvalidInputError saying the form otherwise."""
    if not isinstance(text, str) or ":" not in text:
        raise InvalidInputError(
            f"a domain is written kind:name (kind one of {', '.join(DOMAIN_KINDS)}), e.g. tool:send_email; got {text!r}"
        )
    kind, name = text.split(":", 1)
    kind, name = kind.strip(), name.strip()
    if kind not in DOMAIN_KINDS or not name:
        raise InvalidInputError(
            f"a domain is written kind:name (kind one of {', '.join(DOMAIN_KINDS)}), e.g. tool:send_email; got {text!r}"
        )
    return DomainRef(kind=kind, name=name)  # type: ignore[arg-type]


def domain_id(user: str, ref: DomainRef) -> str:
    """The Domain node's id for one user: ``user|kind:name``."""
    return f"{user}|{ref.key}"




# --- showings: where a domain's learnings were shown and how it went ---------------------------
class Showing(BaseModel):
    """One learning shown in one context whose outcome credited it."""

    learning_id: str
    content: str
    source_type: str | None = None
    confidence: float  # the learning's confidence when shown (its current one for older contexts)
    verdict: str  # accepted | rejected | neutral: the learning's own verdict on that outcome
    application_id: str
    query: str = ""
    reasons: list[str] = []
    entities: list[str] = []
    outcome_at: datetime | None = None
    domains: list[DomainRef] = []

    @property
    def outcome_value(self) -> float | None:
        """1 when the outcome accepted the learning, 0 when it rejected it, None when neutral."""
        return {"accepted": 1.0, "rejected": 0.0}.get(self.verdict)

    @property
    def gap(self) -> float | None:
        """The confidence gap |confidence - outcome| (None for a neutral outcome)."""
        value = self.outcome_value
        return None if value is None else round(abs(self.confidence - value), 6)


def _verdict(row: dict[str, Any]) -> str:
    if row.get("verdict") in ("accepted", "rejected", "neutral"):
        return str(row["verdict"])
    rating = row.get("rating")
    if rating is not None:
        return {"good": "accepted", "bad": "rejected"}.get(rating, "neutral")
    return {"success": "accepted", "failure": "rejected"}.get(row.get("outcome") or "", "neutral")


def load_showings(store: KuzuGraphStore, user: str) -> list[Showing]:
    """Every judged showing of ``user``'s learnings, oldest outcome first, with its domains."""
    out = []
    for r in store.judged_showings(user):
        out.append(Showing(
            learning_id=r["learning_id"], content=r["content"] or "", source_type=r["source_type"],
            confidence=float(r["confidence"] if r["confidence"] is not None else 0.5), verdict=_verdict(r),
            application_id=r["application_id"], query=r["query"] or "", reasons=[str(x) for x in r["reasons"]],
            entities=r["entities"], outcome_at=r["outcome_at"],
            domains=domains_of(r["tool"], r["topics"], r["objective_type"]),
        ))
    return out


def domain_label(ref: DomainRef) -> str:
    """How a domain reads in a sentence: "the send_email tool", "the topic 'email style'"..."""
    if ref.kind == "tool":
        return f"the {ref.name} tool"
    if ref.kind == "topic":
        return f"the topic '{ref.name}'"
    if ref.kind == "objective_type":
        return f"{ref.name} objectives"
    return "general work"


__all__ = ["DOMAIN_KINDS", "GENERAL", "NAME_TABLES", "DomainKind", "DomainRef", "Showing", "domain_id", "domain_label",
           "domains_of", "load_showings", "parse_domain"]
