"""Deps: what a service needs, passed explicitly (never the ``Memory`` facade).

Services (learning, retrieval, summaries, lifecycle, tuning, ...) take one frozen ``Deps`` and
reach the database, the embedder, the LLM, the settings, the clock and the acting user through
it. ``Memory`` builds one per user and hands it down; imports flow downward only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from graphmem.config import Settings
from graphmem.embed import Embedder

if TYPE_CHECKING:
    from graphmem.store import KuzuGraphStore


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
    """

    store: KuzuGraphStore
    embedder: Embedder
    llm: Any
    settings: Settings
    clock: Callable[[], datetime]
    user: str
    admin: bool = False

    def now(self) -> datetime:
        """The current time from the clock, aware UTC."""
        now = self.clock()
        return now if now.tzinfo else now.replace(tzinfo=UTC)

    def embed_one(self, text: str) -> np.ndarray:
        """One text's vector as float32."""
        return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)

    def for_user(self, user: str) -> Deps:
        """The same dependencies acting for another (non-admin) user."""
        return replace(self, user=user, admin=False)
