"""Users and trust: resolve every id a user names within that user.

One user's actions never affect another user's memory. Every id a caller passes (learning ids,
objective ids, event ids, context ids) is resolved here, within the Memory's user: another
user's private id behaves exactly like one that does not exist (the same NotFoundError, the same
message). Shared learnings are readable by everyone and writable only by their owner, or by a
Memory opened with ``admin=True`` (others get a PermissionDeniedError).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphmem.errors import InvalidInputError, NotFoundError, PermissionDeniedError

if TYPE_CHECKING:
    from graphmem.models import Application, Event, Learning, Objective

LEARNING_MISSING = "no learning with id {!r}; list ids with Memory.learnings() or `graphmem list`"
OBJECTIVE_MISSING = "no objective with id {!r}; start one with Memory.start_objective()"
EVENT_MISSING = "no event with id {!r}; pass the id of an event this user recorded"
CONTEXT_MISSING = "no context with id {!r}; pass the id of a context returned by Memory.context()"


def _text_id(kind: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{kind} must be a non-empty id string, got {value!r}")
    return value


def visible_learning(mem: Any, learning_id: str) -> Learning:
    """A learning ``mem``'s user may read: their own or a shared one (admins: any)."""
    ident = _text_id("learning_id", learning_id)
    try:
        learning = mem.store.get_learning(ident)
    except NotFoundError:
        raise NotFoundError(LEARNING_MISSING.format(ident)) from None
    if learning.user_id != mem.user and not learning.shared and not getattr(mem, "admin", False):
        raise NotFoundError(LEARNING_MISSING.format(ident))
    return learning


def writable_learning(mem: Any, learning_id: str) -> Learning:
    """A learning ``mem``'s user may change: their own (admins: any).

    Another user's shared learning is read-only: PermissionDeniedError; another user's private
    one does not exist for them: NotFoundError.
    """
    learning = visible_learning(mem, learning_id)
    if learning.user_id != mem.user and not getattr(mem, "admin", False):
        raise PermissionDeniedError(
            f"learning {learning.id!r} is shared by another user and read-only to you; add your own "
            "learning instead (only its owner or an admin Memory may change it)"
        )
    return learning


def own_objective(mem: Any, objective_id: str) -> Objective:
    """One of ``mem``'s user's objectives; anyone else's is NotFoundError."""
    ident = _text_id("objective_id", objective_id)
    try:
        objective = mem.store.get_objective(ident)
    except NotFoundError:
        raise NotFoundError(OBJECTIVE_MISSING.format(ident)) from None
    if objective.user_id != mem.user:
        raise NotFoundError(OBJECTIVE_MISSING.format(ident))
    return objective


def own_event(mem: Any, event_id: str) -> Event:
    """One of ``mem``'s user's events; anyone else's is NotFoundError."""
    ident = _text_id("event_id", event_id)
    try:
        event = mem.store.get_event(ident)
    except NotFoundError:
        raise NotFoundError(EVENT_MISSING.format(ident)) from None
    if event.user_id != mem.user:
        raise NotFoundError(EVENT_MISSING.format(ident))
    return event


def own_application(mem: Any, context_id: str) -> Application:
    """One of ``mem``'s user's contexts (Applications); anyone else's is NotFoundError."""
    ident = _text_id("context_id", context_id)
    try:
        app = mem.store.get_application(ident)
    except NotFoundError:
        raise NotFoundError(CONTEXT_MISSING.format(ident)) from None
    if app.user_id != mem.user:
        raise NotFoundError(CONTEXT_MISSING.format(ident))
    return app


__all__ = [
    "own_application",
    "own_event",
    "own_objective",
    "visible_learning",
    "writable_learning",
]
