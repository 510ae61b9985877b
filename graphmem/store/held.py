"""A write statement held back inside a write transaction, so that the next one can join it.

Kùzu 0.11 spends ~1-3 ms of CPU per statement whatever it writes (parsing aside, every execution
binds and plans again), so two writes that always follow each other are cheaper as one. A single
``add_learning`` is such a pair: the CREATE of the learning with its anchors, then the bump of
the summaries it feeds (:meth:`graphmem.store.learnings.LearningStore.joined_create`). The first
is held (:meth:`HeldStatement._hold`) and the second takes it (:meth:`HeldStatement._take_held`)
and runs both as one statement. Anything else that runs on the write connection first runs the
held statement (``KuzuBase._run``), and so does the commit: statements never change order and
none is lost; a rollback drops it with the rest.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from graphmem.errors import StoreError


class HeldStatement:
    """The held write statement of the open transaction (a mixin of ``KuzuBase``)."""

    _held: tuple[str, str, dict[str, Any]] | None = None  # (key, Cypher, parameters)
    _joining = 0  # inside joined_writes(): statements that a following one joins may be held

    if TYPE_CHECKING:  # provided by KuzuBase
        _conn_main: Any

        def _run(self, conn: Any, cypher: str, params: Any, *, cache: bool = True) -> list[dict[str, Any]]: ...

    @contextmanager
    def joined_writes(self) -> Iterator[None]:
        """Inside a write transaction: let the writes of the block that always follow each other
        run as one statement (the CREATE of one new learning and its summary bump); whatever is
        still held when the block ends runs then."""
        self._joining += 1
        try:
            yield
        finally:
            self._joining -= 1
        self._flush_held()

    def _hold(self, key: str, cypher: str, params: dict[str, Any]) -> None:
        """Inside a write transaction: keep the write ``cypher`` for :meth:`_take_held` (under
        ``key``) instead of running it now (a statement held before runs first)."""
        self._flush_held()
        self._held = (key, cypher, params)

    def _take_held(self, key: str) -> tuple[str, dict[str, Any]] | None:
        """The held statement (Cypher, parameters) when it was held under ``key``, now the
        caller's to run, joined with its own; None otherwise (one held under another key stays)."""
        held = self._held
        if held is None or held[0] != key:
            return None
        self._held = None
        return held[1], held[2]

    def _flush_held(self) -> None:
        """Run the held statement, if any (StoreError when it fails)."""
        held = self._held
        if held is None:
            return
        self._held = None
        try:
            self._run(self._conn_main, held[1], held[2])
        except RuntimeError as e:
            raise StoreError(f"write failed: {e}") from e

    def _drop_held(self) -> None:
        """Forget the held statement (its transaction rolls back)."""
        self._held = None
