"""Users and trust: resolve every id a user names within that user.

One user's actions never affect another user's memory. Every id a caller passes (learning ids,
objective ids, event ids, context ids) is resolved here, within the Memory's user: another
user's private id behaves exactly like one that does not exist (the same NotFoundError, the same
message). Shared learnings are readable by everyone and writable only by their owner, or by a
Memory opened with ``admin=True`` (others get a PermissionDeniedError).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from graphmem.errors import InvalidInputError, NotFoundError, PermissionDeniedError

if TYPE_CHECKING:
    from graphmem.deps import Deps
    from graphmem.models import Application, Event, Learning, Objective

LEARNING_MISSING = "no learning with id {!r}; list ids with Memory.learnings() or `graphmem list`"
OBJECTIVE_MISSING = "no objective with id {!r}; start one with Memory.start_objective()"
EVENT_MISSING = "no event with id {!r}; pass the id of an event this user recorded"
CONTEXT_MISSING = "no context with id {!r}; pass the id of a context returned by Memory.context()"


def _text_id(kind: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{kind} must be a non-empty id string, got {value!r}")
    return value


def visible_learning(deps: Deps, learning_id: str) -> Learning:
    """A learning ``deps.user`` may read: their own or a shared one (admins: any)."""
    ident = _text_id("learning_id", learning_id)
    try:
        learning = deps.store.get_learning(ident)
    except NotFoundError:
        raise NotFoundError(LEARNING_MISSING.format(ident)) from None
    if learning.user_id != deps.user and not learning.shared and not getattr(deps, "admin", False):
        raise NotFoundError(LEARNING_MISSING.format(ident))
    return learning


def writable_learning(deps: Deps, learning_id: str) -> Learning:
    """A learning ``deps.user`` may change: their own (admins: any).

    Another user's shared learning is read-only: PermissionDeniedError; another user's private
    one does not exist for them: NotFoundError.
    """
    learning = visible_learning(deps, learning_id)
    if learning.user_id != deps.user and not getattr(deps, "admin", False):
        raise PermissionDeniedError(
            f"learning {learning.id!r} is shared by another user and read-only to you; add your own "
            "learning instead (only its owner or an admin Memory may change it)"
        )
    return learning


def _owned(deps: Deps, name: str, ident: Any, get: Callable[[str], Any], missing: str) -> Any:
    """``get(id)`` when the node belongs to ``deps.user``; unknown or anyone else's: the same
    NotFoundError, so another user's id reveals nothing."""
    text = _text_id(name, ident)
    try:
        node = get(text)
    except NotFoundError:
        raise NotFoundError(missing.format(text)) from None
    if node.user_id != deps.user:
        raise NotFoundError(missing.format(text))
    return node


def own_objective(deps: Deps, objective_id: str) -> Objective:
    """One of ``deps.user``'s objectives; anyone else's is NotFoundError."""
    return _owned(deps, "objective_id", objective_id, deps.store.get_objective, OBJECTIVE_MISSING)  # type: ignore[no-any-return]


def own_event(deps: Deps, event_id: str) -> Event:
    """One of ``deps.user``'s events; anyone else's is NotFoundError."""
    return _owned(deps, "event_id", event_id, deps.store.get_event, EVENT_MISSING)  # type: ignore[no-any-return]


def own_application(deps: Deps, context_id: str) -> Application:
    """One of ``deps.user``'s contexts (Applications); anyone else's is NotFoundError."""
    return _owned(deps, "context_id", context_id, deps.store.get_application, CONTEXT_MISSING)  # type: ignore[no-any-return]


__all__ = [
    "own_application",
    "own_event",
    "own_objective",
    "visible_learning",
    "writable_learning",
]
