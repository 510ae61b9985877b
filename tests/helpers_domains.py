"""Helpers for the weakness-trainer and domain tests: judged showings written with exact figures."""

from __future__ import annotations

from datetime import datetime, timedelta

from graphmem import Memory
from graphmem.models import Application


def showing(mem: Memory, learning_id: str, success: bool, at: datetime, query: str = "a task",
            reasons: tuple[str, ...] = ()) -> str:
    """A finished context that showed one learning with this outcome (the learning's confidence
    stands for its confidence when shown: the record has none of its own)."""
    app = Application(user_id=mem.user, query=query, outcome="success" if success else "failure",
                      reasons=list(reasons), created_at=at - timedelta(seconds=1))
    mem.store.insert_application_record(app, outcome_at=at, ranks=[(learning_id, 1, 1.0)])
    return app.id


def showings(mem: Memory, learning_id: str, outcomes: str, start: datetime) -> list[str]:
    """One showing per character of ``outcomes`` ("s" success, "f" failure), a minute apart."""
    return [showing(mem, learning_id, ch == "s", start + timedelta(minutes=i), query=f"task {i}")
            for i, ch in enumerate(outcomes)]
