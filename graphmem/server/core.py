"""The owner process's state: one Memory on the file, one per user, the write gate, the workers.

Kùzu lets one process open a file for writing, so the server is the one owner: every client
process talks to it. Inside, one :class:`~graphmem.Memory` per user shares one store
(``Memory.for_user``). Reads run concurrently on FastAPI's thread pool; writes are serialised by
the store's write lock, and admitted through a bounded gate (:class:`WriteGate`): when
``Settings.server_write_queue`` writes are already running or waiting, the next one is refused
with 503 and ``Retry-After`` instead of queueing without bound (it is never dropped silently:
the client is told it was not written).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from graphmem.config import Settings
from graphmem.embed import Embedder
from graphmem.embed_batching import coalescing
from graphmem.errors import GraphmemError
from graphmem.memory import Memory
from graphmem.server.auth import KeyStore
from graphmem.server.metrics import Metrics

log = logging.getLogger("graphmem.server")


class BusyError(GraphmemError):
    """The server's write queue is full: retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class WriteGate:
    """At most ``capacity`` writes admitted at once (running or waiting for the write lock)."""

    def __init__(self, capacity: int, retry_after: int) -> None:
        self.capacity = max(1, capacity)
        self.retry_after = retry_after
        self._sem = threading.BoundedSemaphore(self.capacity)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.rejected = 0

    @contextmanager
    def admit(self) -> Iterator[None]:
        """Hold a slot for one write; BusyError when every slot is taken."""
        if not self._sem.acquire(blocking=False):
            with self._lock:
                self.rejected += 1
            raise BusyError(
                f"the server has {self.capacity} writes in progress; retry in {self.retry_after} s "
                "(or raise Settings.server_write_queue)",
                self.retry_after,
            )
        with self._lock:
            self.in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1
            self._sem.release()


class Owner:
    """The process that owns the database file and serves every other."""

    def __init__(
        self,
        db: str | Path | None,
        *,
        keys: KeyStore,
        embedder: Embedder,
        llm: Any = None,
        settings: Settings | None = None,
        background: bool = True,
        clock: Callable[[], datetime] | None = None,
        bolt_auth: tuple[str, str] | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.keys = keys
        if self.settings.server_embed_batch > 1:  # concurrent queries share an embedding pass
            embedder = coalescing(embedder, self.settings.embed_query_threads, self.settings.server_embed_batch)
        self.root = Memory(db, user="graphmem-server", embedder=embedder, llm=llm, settings=self.settings,
                           clock=clock, bolt_auth=bolt_auth)
        self._users: dict[str, Memory] = {}
        self._users_lock = threading.Lock()
        self.gate = WriteGate(self.settings.server_write_queue, self.settings.server_retry_after_s)
        self.metrics = Metrics(self)
        self.last_refresh: float | None = None
        self.last_cycle: float | None = None
        self._stop = threading.Event()
        self._wake_refresh = threading.Event()
        self._worker: threading.Thread | None = None
        self.background = background
        self.started = time.time()

    # --- memories -----------------------------------------------------------------------------
    def memory(self, user: str) -> Memory:
        """The Memory of ``user`` (created on first use, sharing the one store)."""
        with self._users_lock:
            mem = self._users.get(user)
            if mem is None:
                mem = self.root.for_user(user)
                self._users[user] = mem
            return mem

    def known_users(self) -> list[str]:
        """Users with a key or a Memory opened since start."""
        users = {e["user"] for e in self.keys.entries}
        with self._users_lock:
            users |= set(self._users)
        return sorted(users)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Around a read: nothing to wait for (the store runs reads concurrently and keeps
        them apart from its writer)."""
        yield

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Around a write: admitted through the bounded gate (BusyError when full); the store
        serialises the writes themselves."""
        with self.gate.admit():
            yield

    # --- background work ------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Load what the first request would otherwise wait for (the embedder's model, the
        vector kernels) with one search that records nothing."""
        try:
            self.root.search("warm up", k=1)
        except GraphmemError:  # an empty or unusual file: the first request pays instead
            log.info("graphmem server: warm-up search failed", exc_info=True)

    def start(self) -> None:
        """Start the background refresher / cycle thread (if enabled in Settings)."""
        if not self.background or self._worker is not None:
            return
        if self.settings.server_refresh_interval_s <= 0 and self.settings.server_cycle_interval_s <= 0:
            return
        self._worker = threading.Thread(target=self._loop, name="graphmem-server-worker", daemon=True)
        self._worker.start()

    def _loop(self) -> None:
        refresh_every = self.settings.server_refresh_interval_s
        cycle_every = self.settings.server_cycle_interval_s
        next_cycle = time.monotonic() + cycle_every if cycle_every > 0 else None
        while not self._stop.is_set():
            wait = refresh_every if refresh_every > 0 else 60.0
            if next_cycle is not None:
                wait = min(wait, max(0.0, next_cycle - time.monotonic()))
            self._wake_refresh.wait(timeout=wait)
            self._wake_refresh.clear()
            if self._stop.is_set():
                break
            try:
                if refresh_every > 0:
                    self.refresh_all()
                if next_cycle is not None and time.monotonic() >= next_cycle:
                    self.cycle_all()
                    next_cycle = time.monotonic() + cycle_every
            except Exception:  # the worker must outlive one failed pass; the error is logged
                log.exception("graphmem server: background pass failed")

    def refresh_all(self, force: bool = False) -> list[Any]:
        """Refresh every user's due summaries (the background refresher's pass)."""
        with self.writing():
            done = self.root.refresh_summaries(force=force, all_users=True)
        self.last_refresh = time.time()
        self.metrics.summaries_refreshed.inc(len(done))
        return done

    def cycle_all(self) -> dict[str, Any]:
        """run_cycle for every known user; returns the reports by user."""
        reports = {}
        for user in self.known_users():
            with self.writing():
                reports[user] = self.memory(user).run_cycle()
        self.last_cycle = time.time()
        self.metrics.cycles.inc()
        return reports

    def mark_cycled(self) -> None:
        """Record that a cycle ran (one user's, through the API)."""
        self.last_cycle = time.time()
        self.metrics.cycles.inc()

    def mark_refreshed(self, count: int) -> None:
        """Record that summaries were refreshed through the API."""
        self.last_refresh = time.time()
        self.metrics.summaries_refreshed.inc(count)

    # --- shutdown -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the worker and release the file."""
        self._stop.set()
        self._wake_refresh.set()
        if self._worker is not None:
            self._worker.join(timeout=30)
            self._worker = None
        with self._users_lock:
            users, self._users = list(self._users.values()), {}
        for mem in users:
            mem.close()
        self.root.close()
