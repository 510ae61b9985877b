"""Deps: what a service needs, passed explicitly (never the ``Memory`` facade).

Services (learning, retrieval, summaries, lifecycle, tuning, ...) take one frozen ``Deps`` and
reach the database, the embedder, the LLM, the settings, the clock and the acting user through
it. ``Memory`` builds one per user and hands it down; imports flow downward only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.config import Settings

if TYPE_CHECKING:
    from graphmem.embed import Embedder
    from graphmem.models import Learning
    from graphmem.store import KuzuGraphStore


def _no_change_hook(learnings: Sequence[Learning], change: str) -> None:
    """The default learnings-changed hook: nothing to keep in step."""


def _no_write_hook() -> None:
    """The default after-write hook: nothing to refresh."""


@dataclass(frozen=True)
class Deps:
    """The explicit dependencies of a service.

    Attributes:
        store: the graph store (all Cypher lives behind it).
        embedder: turns text into vectors.
        llm: answers learning requests (:class:`graphmem.llm.base.LLM`).
        settings: every threshold.
        clock: returns "now"; tests inject one.
        user: whose memory is read and written.
        admin: may change other users' shared learnings and forget any user.
        changed_hook: called inside every transaction that writes learnings, with the learnings
            and the change ("created", "merged", "updated", "retired", "outcome", ...); ``Memory``
            points it at its summary service (staleness bookkeeping).
        write_hook: called after a learning write commits; ``Memory`` points it at the summary
            service's inline refresher.
    """

    store: KuzuGraphStore
    embedder: Embedder
    llm: Any
    settings: Settings
    clock: Callable[[], datetime]
    user: str
    admin: bool = False
    changed_hook: Callable[[Sequence[Learning], str], None] = _no_change_hook
    write_hook: Callable[[], None] = _no_write_hook

    def now(self) -> datetime:
        """The current time from the clock, aware UTC."""
        now = self.clock()
        return now if now.tzinfo else now.replace(tzinfo=UTC)

    def embed_one(self, text: str) -> np.ndarray:
        """One text's vector as float32."""
        return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)

    def on_learnings_changed(self, learnings: Sequence[Learning], *, change: str) -> None:
        """Inside a transaction that wrote ``learnings``: run the learnings-changed hook."""
        self.changed_hook(learnings, change)

    def after_write(self) -> None:
        """After a learning write committed: run the after-write hook."""
        self.write_hook()

    def for_user(self, user: str) -> Deps:
        """The same dependencies acting for another (non-admin) user, without the hooks (they
        belong to the services of the user they were made for)."""
        return replace(self, user=user, admin=False, changed_hook=_no_change_hook, write_hook=_no_write_hook)
