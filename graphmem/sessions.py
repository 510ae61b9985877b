"""Session metrics: what happened in each session of a user, computed from the graph on demand.

A session is the ``session_id`` that events (``record_event`` / ``observe_message``), contexts
(``context(session_id=...)``) and traces (``trace(session_id=...)``) carry. Nothing is counted on
the write path: each call runs the MATCH queries of :meth:`graphmem.store.tuning.TuningStore.session_rows`
over the user's Event, Application, Trace and Verdict nodes, so the figures always agree with the
graph (also after ``forget``, imports or raw Cypher writes).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from graphmem.errors import InvalidInputError

if TYPE_CHECKING:
    from graphmem.deps import Deps


class SessionMetrics(BaseModel):
    """The figures of one session."""

    session_id: str
    started_at: datetime | None = None
    last_at: datetime | None = None
    events: int = 0
    contexts: int = Field(0, description="contexts served (Applications) in the session")
    outcomes: int = Field(0, description="contexts that got an outcome")
    accepted: int = 0
    rejected: int = 0
    success_rate: float | None = Field(None, description="accepted / (accepted + rejected); None without any")
    learnings_created: int = Field(0, description="learnings derived from the session's events or traces")
    learnings_shown: int = Field(0, description="distinct learnings shown in the session's contexts")
    learnings_used: int = Field(0, description="distinct learnings credited by an outcome in the session")
    traces: int = 0
    trace_pass_rate: float | None = Field(None, description="traces every judge passed / traces")
    judge_pass_rates: dict[str, float] = Field(default_factory=dict, description="per judge: verdicts passed / verdicts")


def session_metrics(deps: Deps, session_id: str | None = None, limit: int = 20) -> list[SessionMetrics]:
    """The metrics of one session (``session_id``) or of the user's ``limit`` latest sessions, latest first.

    An unknown ``session_id`` gives a row of zeros (a session exists once something carries its id).
    """
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise InvalidInputError("session_id must be a non-empty string (or None for the latest sessions)")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise InvalidInputError(f"limit must be a whole number > 0, got {limit!r}")
    store, user = deps.store, deps.user
    sids = [session_id] if session_id is not None else store.recent_sessions(user, limit)
    rows = store.session_rows(user, sids)
    out: list[SessionMetrics] = []
    for sid in sids:
        r = rows[sid]
        rated = r["accepted"] + r["rejected"]
        out.append(SessionMetrics(
            session_id=sid, started_at=r["first"], last_at=r["last"], events=r["events"], contexts=r["contexts"],
            outcomes=rated + r["neutral"], accepted=r["accepted"], rejected=r["rejected"],
            success_rate=r["accepted"] / rated if rated else None,
            learnings_created=len(r["created"]), learnings_shown=len(r["shown"]), learnings_used=len(r["used"]),
            traces=r["traces"], trace_pass_rate=r["traces_passed"] / r["traces"] if r["traces"] else None,
            judge_pass_rates={j: passed / n for j, (passed, n) in sorted(r["judges"].items()) if n},
        ))
    return out


__all__ = ["SessionMetrics", "session_metrics"]
