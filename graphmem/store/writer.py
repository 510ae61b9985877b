"""The background writer: deferred writes (Application records) committed off the caller's path.

:class:`DeferredWriter` is a mixin of :class:`graphmem.store.kuzu_store.KuzuBase` (and so of the
Bolt store's base): the queue, the writer thread, the batches it writes beside readers, and the
drains every write transaction, flush and close run first. It uses the base's lock,
connection and transactions (declared below for type checkers only).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import TYPE_CHECKING, Any

from graphmem.errors import ReadOnlyError, StoreError

log = logging.getLogger("graphmem.store")

if TYPE_CHECKING:
    from graphmem.store.locks import ReadWriteLock


class DeferredWriter:
    """Deferred writes and the background writer thread (a mixin of ``KuzuBase``)."""

    # A deferred write beside context() slows its query embedding (Kùzu leaves the GIL while it
    # executes, but the two compete for the cores: MiniLM ran ~17 -> ~24 ms beside a Kùzu
    # write statement, measured for add_learning): the background writer waits while
    # a caller is inside ``hold_writer()``, at most ``deferred_max_delay_s`` (class defaults, so
    # stores with their own ``__init__`` have them too).
    _hot = 0
    deferred_max_delay_s = 0.25
    _tx_serial = 0  # +1 at every BEGIN (batch writes tell their own transaction's nodes by it)
    _settle_due = False  # a side batch was rolled back: checkpoint before the next write

    if TYPE_CHECKING:  # provided by KuzuBase
        path: Any
        read_only: bool
        generation: int
        deferred_batch: int
        deferred_retries: int
        checkpoint_bytes: int
        _lock: ReadWriteLock
        _conn_main: Any
        _closed: bool
        _deferred: deque[Callable[[], None]]
        _deferred_cond: threading.Condition
        _writer: threading.Thread | None
        _stopping: bool
        _draining: bool
        _side_lock: threading.Lock
        _side_thread: int | None
        _checkpoint_due: bool
        _after_commit: list[Callable[[], None]]

        def transaction(self) -> AbstractContextManager[None]: ...
        def in_transaction(self) -> bool: ...
        def _maybe_checkpoint(self) -> None: ...
        def _wal_bytes(self) -> int: ...

    def defer_write(self, fn: Callable[[], None]) -> None:
        """Queue the write ``fn`` for a background writer thread, off the caller's path.

        Used for Application records, which context() must write but no caller waits for.
        Anything that reads what a deferred write wrote waits for it first: every read whose
        Cypher names an Application, analyst Cypher, every new write transaction, and close().
        A deferred write that fails is retried (``deferred_retries`` times); if it still fails it
        stays queued and the next flush raises StoreError: it is never dropped silently.
        """
        if self.read_only:
            raise ReadOnlyError("this database was opened with read_only=True; writes are refused")
        with self._deferred_cond:
            if self._closed:
                raise StoreError("this Memory is closed; open a new one")
            self._deferred.append(fn)
            if self._writer is None:
                self._writer = threading.Thread(target=self._writer_loop, name="graphmem-writer", daemon=True)
                self._writer.start()
            self._deferred_cond.notify()

    @contextmanager
    def hold_writer(self) -> Iterator[None]:
        """Keep the background writer from starting a batch while the block runs (a latency-
        sensitive read such as context()); it starts anyway after ``deferred_max_delay_s``."""
        with self._deferred_cond:
            self._hot += 1
        try:
            yield
        finally:
            with self._deferred_cond:
                self._hot -= 1
                if not self._hot:
                    self._deferred_cond.notify_all()

    def _writer_loop(self) -> None:
        while True:
            with self._deferred_cond:
                while not self._deferred and not self._stopping:
                    self._deferred_cond.wait()
                if self._stopping:
                    return
                deadline = time.monotonic() + self.deferred_max_delay_s
                while self._hot and not self._stopping and (left := deadline - time.monotonic()) > 0:
                    self._deferred_cond.wait(left)
            try:
                if not self._drain_beside_readers():
                    with self._lock.exclusive():
                        if not self._closed:
                            self._drain_deferred()
                elif self._checkpoint_due:
                    with self._lock.exclusive():
                        if not self._closed:
                            self._maybe_checkpoint()
            except StoreError:
                with self._deferred_cond:  # failing: wait for the next flush or a new write
                    self._deferred_cond.wait(timeout=1.0)

    def _side_batches_allowed(self) -> bool:
        """Whether deferred writes may be written beside readers: on a writable file (an
        in-memory database drains them under the exclusive lock)."""
        return self.path is not None and not self.read_only

    def _drain_beside_readers(self) -> bool:
        """Write a batch of deferred writes in one transaction while readers go on; False when
        it could not (nothing written: the caller drains under the exclusive lock instead).

        A deferred write that wants an after-commit step (a mirror change) needs the exclusive
        lock, so such a batch is rolled back and left to the caller."""
        if not self._side_batches_allowed():
            return False
        with self._lock.shared(), self._side_lock:
            with self._deferred_cond:
                batch = list(self._deferred)[: self.deferred_batch]
            if self._closed or not batch:
                return True
            conn = self._conn_main
            self._after_commit = []
            self._side_thread = threading.get_ident()
            self._tx_serial += 1
            ok = False
            try:
                conn.execute("BEGIN TRANSACTION")
                for fn in batch:
                    fn()
                if not self._after_commit:
                    conn.execute("COMMIT")
                    ok = True
            except Exception:
                ok = False
            finally:
                if not ok:
                    _rollback(conn)
                    self._settle_due = True  # checkpointed under the exclusive lock (_settle_after_rollback)
                self._side_thread = None
                self._after_commit = []
            if not ok:
                return False
            self.generation += 1
            with self._deferred_cond:
                for _ in batch:
                    self._deferred.popleft()
            if self._wal_bytes() > self.checkpoint_bytes:
                self._checkpoint_due = True
            return True

    def _drain_deferred(self) -> None:
        """Write every queued deferred write, oldest first (caller holds the lock exclusively,
        outside any transaction). A failing one is retried, then left queued and reported."""
        if self._draining:
            return  # a deferred write's own transaction
        self._draining = True
        try:
            self._drain_queue()
        finally:
            self._draining = False

    def _drain_queue(self) -> None:
        self._drain_batch()
        while True:
            with self._deferred_cond:
                if not self._deferred:
                    return
                fn = self._deferred[0]
            error: Exception | None = None
            for attempt in range(self.deferred_retries + 1):
                try:
                    fn()
                    error = None
                    break
                except Exception as e:
                    error = e
                    if attempt < self.deferred_retries:
                        time.sleep(0.01 * (attempt + 1))
            if error is not None:
                raise StoreError(f"a deferred write failed and is kept to retry: {error}") from error
            with self._deferred_cond:
                self._deferred.popleft()

    def _drain_batch(self) -> None:
        """Write the queued deferred writes together in one transaction (one commit for many
        Applications instead of one each). If the batch fails it is rolled back and the writes
        are then written one by one, with retries, by the caller."""
        with self._deferred_cond:
            batch = list(self._deferred)[: self.deferred_batch]
        if len(batch) < 2:
            return
        try:
            with self.transaction():
                for fn in batch:
                    fn()
        except Exception:
            return  # rolled back: the one-by-one loop writes (or reports) them
        with self._deferred_cond:
            for _ in batch:
                self._deferred.popleft()

    def _settle_after_rollback(self) -> None:
        """Checkpoint after a write transaction was rolled back (the caller holds the store
        exclusively, outside any transaction).

        Kùzu 0.11.3 can refuse every later update of a row that a rolled-back transaction had
        updated ("Write-write conflict of updating the same row"): an add whose embedder failed
        made the next adds on the same summaries fail, and a few such failures later the process
        crashed inside Kùzu. A checkpoint clears that state (tests/test_memory_core.py); rollbacks
        are rare, so their checkpoint costs little. A file opened read-only is left alone. An
        in-memory database is left alone too: Kùzu 0.11.3 crashed the process on that checkpoint,
        so there ``add_learning`` embeds before it writes (``embed_first``) and the state stays
        only after other failed writes (see the README's "Errors, concurrency and files")."""
        self._settle_due = False
        if self.path is None or self.read_only:
            return
        try:
            self._conn_main.execute("CHECKPOINT")
        except RuntimeError as e:  # the write's own error is what the caller reports
            log.warning("graphmem: the checkpoint after a rolled-back write failed: %s", e)

    def flush_deferred(self) -> None:
        """Wait until every deferred write is in the file; raises StoreError if one fails."""
        if not self._deferred:
            return
        if self.in_transaction():
            return  # drained when this transaction began; later ones belong to other threads
        if self._lock.owned_shared():
            raise StoreError("cannot wait for deferred writes inside a read snapshot")
        with self._lock.exclusive():
            self._drain_deferred()

    def _wait_if_needed(self, cypher: str) -> None:
        if self._deferred and "Application" in cypher:
            self.flush_deferred()

    def _stop_writer(self) -> None:
        """Write what is deferred, then stop the background writer (first step of closing)."""
        try:
            self.flush_deferred()
        finally:
            with self._deferred_cond:
                self._stopping = True
                self._deferred_cond.notify_all()
            if self._writer is not None and self._writer is not threading.current_thread():
                self._writer.join(timeout=30)
            self._writer = None


def _rollback(conn: Any) -> None:
    with suppress(RuntimeError):
        conn.execute("ROLLBACK")
