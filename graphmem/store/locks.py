"""The store's reader–writer lock: many readers at once, or one writer alone.

Kùzu 0.11.3 lets reads and a write overlap (MVCC), but three things go wrong when they do in one
process: a full-text query running while another connection writes the indexed table aborts the
process; a commit that triggers a checkpoint while a read transaction is open fails with
"Timeout waiting for active transactions to leave the system before checkpointing" (after the
data was in fact committed); and the in-memory mirrors (embedding matrix, columns) change under a
ranking that is reading them. So graphmem never lets them overlap: every read holds the lock
shared, every write transaction (and the mirror updates that follow its commit) holds it
exclusively. Reads still run concurrently with each other.

Both modes are re-entrant per thread, and the writer may read. A thread that holds the lock shared
and asks for it exclusively would wait for itself forever: that raises at once instead.

Neither side starves the other (phase-fair): a waiting writer holds back readers that arrive after
it, so a stream of reads cannot starve a write; and when a writer releases the lock, the readers
that were already waiting go before the next writer, so a stream of writes (several threads
writing back to back) cannot starve a read either: a reader waits for at most one write (the one
holding the lock, or the one already waiting when it came), besides the reads ahead of it. A
thread that already reads may read again even while a writer waits (no self-deadlock).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class LockUpgradeError(RuntimeError):
    """A thread holding the lock shared asked for it exclusively (a programming error)."""


class ReadWriteLock:
    """A re-entrant, phase-fair reader–writer lock (see the module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers: dict[int, int] = {}  # thread id -> shared depth
        self._writer: int | None = None
        self._writer_depth = 0
        self._writers_waiting = 0
        self._readers_waiting = 0
        self._phase = 0  # + 1 at every full release by a writer
        self._admitted = 0  # readers that were waiting at the last writer's release and have not entered yet

    # --- shared ---------------------------------------------------------------------------
    def acquire_shared(self) -> None:
        """Hold the lock shared (a no-op count when this thread is the writer)."""
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:
                self._writer_depth += 1
                return
            depth = self._readers.get(me, 0)
            if depth == 0 and (self._writer is not None or self._writers_waiting):
                phase = self._phase
                self._readers_waiting += 1
                try:
                    # after a writer's release this reader goes before the writers waiting then
                    while self._writer is not None or (self._writers_waiting and self._phase == phase):
                        self._cond.wait()
                finally:
                    self._readers_waiting -= 1
                    if self._phase != phase and self._admitted:
                        self._admitted -= 1
                        if not self._admitted:
                            self._cond.notify_all()
            self._readers[me] = depth + 1

    def release_shared(self) -> None:
        """Release one shared hold."""
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:
                self._writer_depth -= 1
                return
            depth = self._readers[me] - 1
            if depth:
                self._readers[me] = depth
            else:
                del self._readers[me]
                if not self._readers:
                    self._cond.notify_all()

    # --- exclusive ------------------------------------------------------------------------
    def acquire_exclusive(self) -> None:
        """Hold the lock alone: waits until no other thread reads or writes."""
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:
                self._writer_depth += 1
                return
            if me in self._readers:
                raise LockUpgradeError(
                    "a write was started while this thread holds a read of the same store; "
                    "finish the read first"
                )
            self._writers_waiting += 1
            acquired = False
            try:
                while self._writer is not None or self._readers or self._admitted:
                    self._cond.wait()
                acquired = True
            finally:
                self._writers_waiting -= 1
                if not acquired:  # interrupted while waiting: readers held back by it may go
                    self._cond.notify_all()
            self._writer = me
            self._writer_depth = 1

    def release_exclusive(self) -> None:
        """Release one exclusive hold."""
        with self._cond:
            self._writer_depth -= 1
            if self._writer_depth == 0:
                self._writer = None
                self._phase += 1
                self._admitted = self._readers_waiting  # they go first (the next writer waits for them)
                self._cond.notify_all()

    # --- queries and context managers -------------------------------------------------------
    def owned_exclusive(self) -> bool:
        """True when the calling thread is the writer."""
        return self._writer == threading.get_ident()

    def owned_shared(self) -> bool:
        """True when the calling thread holds the lock shared (not as the writer)."""
        return threading.get_ident() in self._readers

    @contextmanager
    def shared(self) -> Iterator[None]:
        """``with lock.shared():`` around a read."""
        self.acquire_shared()
        try:
            yield
        finally:
            self.release_shared()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """``with lock.exclusive():`` around a write."""
        self.acquire_exclusive()
        try:
            yield
        finally:
            self.release_exclusive()
