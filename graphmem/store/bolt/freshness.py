"""Freshness of a Bolt store's in-memory mirrors when several processes write one database.

Every write transaction moves one of the shared counter shards (and, when it changed what the
mirrors hold, writes a change record; see :mod:`.connection` and :mod:`.changes`). Before ranking
(``snapshot()``) and before a read outside a snapshot or transaction, :meth:`ensure_fresh` compares
the counters with the values the mirrors include and applies the other processes' records.
:meth:`BoltFreshness.rerun_on_conflict` runs a caller's work again when the engine refused its
transaction for a conflict that a replay could not resolve.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, cast

from graphmem.errors import StoreError
from graphmem.store.bolt.changes import changes_of
from graphmem.store.bolt.connection import (
    _GEN_READ,
    GEN_KEYS,
    BoltConnection,
    BoltQueryError,
    ConflictRetry,
    is_conflict,
)
from graphmem.store.kuzu_store import KuzuBase


class BoltFreshness(KuzuBase):
    """The shared write counter, change records and conflict reruns of :class:`BoltBase`."""

    _main: BoltConnection
    _gen_lock: threading.Lock
    conflict_retry: ConflictRetry
    seen: dict[int, int]
    db_generation: int
    freshness_seconds: float
    _checked_at: float
    _reloading: bool

    def _committed_generation(self, shard: int, n: int) -> None:
        """After our own commit: the mirrors are current for that shard if nobody else moved it
        in between (else the next check reads the others' change records)."""
        if self.seen.get(shard, 0) == n - 1:
            self.seen[shard] = n
            self.db_generation = sum(self.seen.values())

    # --- freshness of the mirrors across processes ------------------------------------------
    def counters(self) -> dict[int, tuple[int, int]]:
        """Per counter shard: (the write counter, the oldest change record kept)."""
        rows = cast(BoltConnection, self._conn()).execute(_GEN_READ, {"keys": GEN_KEYS})
        out: dict[int, tuple[int, int]] = {}
        for r in rows:
            out[int(str(r["key"]).rsplit(":", 1)[1])] = (int(r["n"] or 0), int(r["floor"] or 0))
        return out

    def database_generation(self) -> int:
        """The shared write counter (0 on a database nobody wrote to yet)."""
        return sum(n for n, _ in self.counters().values())

    def set_seen(self, counters: dict[int, tuple[int, int]]) -> None:
        """The mirrors now include every change up to these counters."""
        self.seen = {k: n for k, (n, _) in counters.items()}
        self.db_generation = sum(self.seen.values())

    def _behind(self, counters: dict[int, tuple[int, int]]) -> bool:
        return any(n != self.seen.get(k, 0) for k, (n, _) in counters.items())

    def ensure_fresh(self, *, force: bool = False) -> bool:
        """Catch up with other processes' writes when the write counter moved: apply their change
        records (re-read only the rows they name), or rebuild the mirrors in full when the
        records needed were pruned or a change cannot be applied row by row. True if it did."""
        if self._closed or self._reloading or self._lock.owned_shared() or self.in_transaction():
            return False
        now = time.monotonic()
        if not force and self.freshness_seconds > 0 and now - self._checked_at < self.freshness_seconds:
            return False
        self._checked_at = now
        try:
            counters = self.counters()
            if self._behind(counters):  # maybe our own commit, its counter not yet recorded:
                with self._gen_lock:  # wait for the commit in flight, then look again
                    counters = self.counters()
        except BoltQueryError as e:
            raise StoreError(f"query failed: {e}") from e
        if not self._behind(counters):
            return False
        catch_up = getattr(self, "catch_up", None)
        if catch_up is None:
            return False
        self._reloading = True
        try:
            catch_up()  # under the exclusive lock; records the counters it caught up to
        finally:
            self._reloading = False
        return True

    def on_commit(self, fn: Callable[[], None]) -> None:
        """KuzuBase.on_commit, noting what ``fn`` will change in the mirrors in the open
        transaction's change record (other processes read it to refresh only that)."""
        changes = changes_of(self, fn)
        if changes and self.in_transaction():
            self._main.note(changes)
        elif changes and not self.read_only:  # the write committed already: its own record
            with self.transaction():
                self._main.note(changes)
        super().on_commit(fn)

    def note_changes(self, changes: list[str]) -> None:
        """Record mirror changes in the open write transaction's change record."""
        if self.in_transaction():
            self._main.note(changes)

    def _resync_mirrors(self) -> None:
        """After a failed commit: catch up from the change records (our own hooks did not run;
        if the commit did reach the server, its record says what it changed)."""
        with suppress(Exception):
            self.ensure_fresh(force=True)

    def rerun_on_conflict(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` (work that opens its own write transaction); when the server refused that
        transaction for a conflict with another process's and replaying its statements did not
        hold (they read other rows the second time), run ``fn`` again from the start, so it
        re-reads and decides on the current data. Inside a transaction, ``fn`` runs once (the
        outermost caller's transaction is the unit that can be run again)."""
        if self.in_transaction():
            return fn()
        attempts = self.conflict_retry.reruns
        for attempt in range(1, attempts + 1):
            try:
                return fn()
            except StoreError as e:
                if attempt == attempts or not is_conflict(e):
                    raise
                self.conflict_retry.reran += 1
                self.conflict_retry.wait(attempt + 2)
        raise AssertionError("unreachable")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """KuzuBase.snapshot, after catching up with other processes' writes."""
        self.ensure_fresh()
        with self._lock.shared():
            yield
