"""Facts about the owner and the people and things they deal with, with their history.

``observe_message`` hands the facts the LLM found in an owner message (:class:`UserFact`:
subject, attribute, value) to :func:`store_facts`. Each becomes a ``fact`` (or ``preference``)
learning linked (MENTIONS) to the entities it is about, with a *fact key*
``"<subject>|<attribute>"`` (multi-valued attributes such as allergies add ``"|<value>"``) and a
validity interval, like Graphiti's bi-temporal edges:

- ``valid_from``: when the owner said it (the message's time);
- ``valid_to``: when a newer value for the same key replaced it; ``None`` while current.

The same value again reinforces the current fact (validations + 1). A new value for a
single-valued key ("I moved to Berlin" after "I live in Paris") supersedes the old learning (tier
archive, SUPERSEDES edge, a Transition) and closes its interval; the history stays queryable with
:func:`fact_history` (``Memory.facts(history=True)``). Facts never go through the near-duplicate
merge: "The user lives in Paris" and "The user lives in Berlin" are alike in words, not in meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel

from graphmem.errors import InvalidInputError
from graphmem.learn.curator import Curator, looks_like_injection
from graphmem.learnings import LearningService
from graphmem.llm.schemas import UserFact
from graphmem.models import Learning

if TYPE_CHECKING:
    from graphmem.deps import Deps


class FactRecord(BaseModel):
    """A fact learning with its key and validity interval."""

    learning: Learning
    fact_key: str
    valid_from: datetime | None = None
    valid_to: datetime | None = None

    @property
    def current(self) -> bool:
        """True while no newer value replaced it."""
        return self.valid_to is None


def fact_key(fact: UserFact) -> str:
    """``"<subject>|<attribute>"``, plus ``"|<value>"`` for a multi-valued attribute; lower case."""
    key = f"{fact.subject.strip().lower()}|{fact.attribute.strip().lower()}"
    return key if fact.single_valued else f"{key}|{fact.value.strip().lower()}"


def store_facts(
    deps: Deps, facts: Sequence[UserFact], *, source_event_id: str, at: datetime, trusted_text: str,
    objective_id: str | None = None,
) -> list[Learning]:
    """Store each fact (new, reinforced, or superseding the old value); returns the learnings."""
    out: list[Learning] = []
    for fact in facts:
        if looks_like_injection(fact.statement) and not looks_like_injection(trusted_text):
            continue
        try:
            learning, links = LearningService(deps).make_learning(
                fact.statement, kind=fact.kind, entities=fact.entities, topics=["about the user"] if
                fact.subject.lower() == "user" else [f"about {fact.subject}"], source_type="user_feedback",
                sentiment="neutral", confidence=0.9, source_event_id=source_event_id, objective_id=objective_id,
            )
        except InvalidInputError:
            continue
        key = fact_key(fact)
        store = deps.store
        current_id = store.current_fact(deps.user, key)
        current = store.get_learning(current_id) if current_id else None
        if current is not None and current.content.strip().lower() == learning.content.strip().lower():
            result = Curator(deps).curate(learning, links, trusted_text=trusted_text)  # an exact repeat: merged
            if result.learning is not None:
                out.append(result.learning)
            continue
        embedding = np.asarray(deps.embedder.embed([learning.content])[0], dtype=np.float32)
        with store.transaction():
            store.insert_learning(learning, embedding, links.model_copy(update={"source_event_id": None,
                                                                                "objective_id": None}))
            store.link_derived(learning.id, "Event", source_event_id)
            if objective_id:
                store.link_objective(learning.id, objective_id)
            store.set_fact(learning.id, key, at)
            deps.on_learnings_changed([learning], change="created")
            if current is not None:
                reason = f"the owner's newer fact {learning.content[:80]!r} replaces it"
                retired = LearningService(deps).archive_superseded(current, learning.id, reason)
                store.end_fact(current.id, at)
                deps.on_learnings_changed([retired], change="retired")
        deps.after_write()
        out.append(learning)
    return out


def fact_history(deps: Deps, *, about: str | None = None, history: bool = False) -> list[FactRecord]:
    """The user's facts (``about``: a subject such as ``"user"`` or ``"Dana"``), current only unless
    ``history``; ordered by key, then valid_from."""
    prefix = f"{about.strip().lower()}|" if about else None
    rows = deps.store.fact_rows(deps.user, prefix)
    learnings = {l.id: l for l in deps.store.get_learnings([str(r["id"]) for r in rows])}
    out = [
        FactRecord(learning=learnings[str(r["id"])], fact_key=str(r["fact_key"]), valid_from=r["valid_from"],
                   valid_to=r["valid_to"])
        for r in rows if str(r["id"]) in learnings
    ]
    return out if history else [f for f in out if f.current]


__all__ = ["FactRecord", "fact_history", "fact_key", "store_facts"]
