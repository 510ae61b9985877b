"""KuzuStore: the connection, transactions, errors and raw Cypher; the base of the store.

Kùzu allows one write transaction at a time and fails a second at once, so every write in this
process goes through one re-entrant lock: threads wait instead of failing. Reads use a
connection per thread. Kùzu's RuntimeErrors are wrapped into graphmem errors where they enter.

Row ↔ model conversion and the per-node-type queries live in the mixin modules next to this one
(``learnings.py``, ``events.py``, ...); :class:`graphmem.store.KuzuGraphStore` combines them.
"""

from __future__ import annotations

import importlib.util  # noqa: F401  -- kuzu's COPY FROM a pyarrow table needs it imported
import json
import os
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kuzu

from graphmem.errors import (
    BufferPoolError,
    DatabaseLockedError,
    EmbedderMismatchError,
    ReadOnlyError,
    StoreError,
)
from graphmem.inputs import check_db_params
from graphmem.store import fulltext, migrations, snapshot
from graphmem.store.catalog import EventCatalog, LearningCatalog
from graphmem.store.fulltext import FulltextIndexes
from graphmem.store.held import HeldStatement
from graphmem.store.locks import ReadWriteLock
from graphmem.store.writer import DeferredWriter, _rollback

POOL_MIN_MB = 1024  # the pool sized from the file (Settings.kuzu_buffer_pool_mb = 0) is at least this
POOL_FILE_FACTOR = 4  # ... and this many times the file (with its write-ahead log)


def is_pool_error(error: BaseException) -> bool:
    """True when ``error`` is Kùzu saying its buffer pool is full."""
    text = str(error).lower()
    return "buffer pool is full" in text or "buffer manager exception" in text


def to_db_time(value: datetime | None) -> datetime | None:
    """A datetime as Kùzu stores it: naive UTC (Kùzu drops the offset without converting)."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def from_db_time(value: Any) -> datetime | None:
    """A datetime read from Kùzu, marked UTC."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value
    raise StoreError(f"expected a timestamp from the database, got {value!r}")


def dumps(value: Any) -> str:
    """JSON text for a JSON-valued property."""
    return json.dumps(value, sort_keys=True, default=str)


def loads(text: str | None, default: Any) -> Any:
    """Parse a JSON-valued property; ``default`` when empty."""
    if not text:
        return default
    return json.loads(text)


class KuzuBase(DeferredWriter, FulltextIndexes, HeldStatement):
    """Connection handling, transactions and raw queries over one Kùzu database.

    The background writer (deferred writes) lives in :mod:`graphmem.store.writer`, the handling
    of Kùzu's full-text indexes in :mod:`graphmem.store.fulltext`, a write statement held back to
    be joined with the next in :mod:`graphmem.store.held`; all are mixins of this class.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        dim: int,
        embedder_name: str,
        read_only: bool = False,
        buffer_pool_mb: int = 0,
    ) -> None:
        self.path = None if path is None else Path(path)
        self.buffer_pool_mb = int(buffer_pool_mb)  # Kùzu's page cache and query memory; 0: sized from the file
        self.buffer_pool_size = 0  # the bytes asked of Kùzu on open (0: its default), see _buffer_pool_bytes
        self.dim = dim
        self.embedder_name = embedder_name
        self.read_only = read_only
        self._lock = ReadWriteLock()  # shared for reads, exclusive for write transactions
        self._local = threading.local()
        self._closed = False
        self._tx_depth = 0
        self._tx_serial = 0
        self._after_commit: list[Callable[[], None]] = []
        self._before_commit: list[Callable[[], None]] = []
        self._deferred: deque[Callable[[], None]] = deque()  # writes queued for the background writer
        self._deferred_cond = threading.Condition()
        self._writer: threading.Thread | None = None
        self._stopping = False
        self._draining = False
        self.generation = 0  # +1 after every write transaction or exclusive block: caches compare it
        # The background writer writes deferred Applications beside readers (they touch no mirror):
        # under the shared lock, one batch at a time, never while a Kùzu full-text query runs
        # (``_side_lock``), and with Kùzu's automatic checkpoint off, because a checkpoint waits for
        # every open read; checkpoints run under the exclusive lock instead (``_checkpoint``).
        self._side_lock = threading.Lock()
        self._side_thread: int | None = None  # the thread inside a side batch, if any
        self._checkpoint_due = False
        self.checkpoint_bytes = 16 << 20  # checkpoint once the write-ahead log is this large
        self.deferred_retries = 3
        self.deferred_batch = 64  # deferred writes committed together at most
        self.learning_catalog = LearningCatalog(dim)
        self.event_catalog = EventCatalog(dim)
        self._db = self._open_database()
        self._conn_main = kuzu.Connection(self._db)  # the one write connection, under the lock
        self.schema_version = self._prepare_schema()
        self.fulltext_at_close = False  # build Kùzu's full-text indexes when closing (store/fulltext.py)
        self._fulltext_built = bool(fulltext.present(self._conn_main))
        self._fulltext_readers = 0  # queries waiting for or reading the full-text indexes: no drop meanwhile
        self._fulltext_count = threading.Lock()

    # --- opening ------------------------------------------------------------------------
    def _open_database(self) -> kuzu.Database:
        where = ":memory:" if self.path is None else str(self.path)
        if self.path is not None:
            if self.path.is_dir():
                raise StoreError(
                    f"{self.path} is a directory; a graphmem database is a single file: "
                    f"pass a file path such as {self.path / 'memory.kuzu'}"
                )
            if self.read_only and not self.path.exists():
                raise StoreError(f"{self.path} does not exist; create it first without read_only=True")
            if not self.path.parent.exists():
                raise StoreError(f"the folder {self.path.parent} does not exist; create it first")
            if not self.read_only and not self.path.exists():  # built aside, then linked in whole
                migrations.create_file(self.path, self.dim, self.embedder_name)
            if snapshot.path_of(self.path).exists():  # the file as the snapshot must find it, before Kùzu opens it
                self._open_print = snapshot.file_print(self.path)
        try:
            return kuzu.Database(where, read_only=self.read_only, max_db_size=migrations.MAX_DB_SIZE,
                                 auto_checkpoint=self.path is None or self.read_only,
                                 buffer_pool_size=self._buffer_pool_bytes())
        except RuntimeError as e:
            msg = str(e)
            if is_pool_error(e):
                raise self._pool_error(e, "opening the file") from e
            if "lock" in msg.lower():
                raise DatabaseLockedError(
                    f"{self.path} is locked by another process (Kùzu: {msg.splitlines()[0]}). "
                    "Only one process may open a graphmem file: close the other one, route "
                    "access through a single owner process, or open it with read_only=True "
                    "once no process holds it for writing."
                ) from e
            raise StoreError(f"could not open {where}: {msg}") from e

    def _buffer_pool_bytes(self) -> int:
        """Kùzu's buffer pool size for this file (0: Kùzu's default, 80 % of the RAM).

        ``buffer_pool_mb`` > 0: that many MB; the catalog load's ranges then shrink to fit (each
        range's result must fit in the pool beside the cached pages). 0: sized from the file,
        ``POOL_FILE_FACTOR`` × its bytes (write-ahead log included), at least ``POOL_MIN_MB``,
        Kùzu's default when that is smaller: the whole file fits with room for queries and
        writes, while Kùzu's per-page state (8 bytes per 4 KiB page of the pool, allocated at
        open) stays small. An in-memory database keeps all its data in the pool: never capped."""
        if self.path is None:
            return 0
        if self.buffer_pool_mb > 0:
            row_bytes = 4 * self.dim + 1024  # an embedding and the scalar columns, roughly
            self.scan_chunk_rows = int(min(16_384, max(256, (self.buffer_pool_mb << 20) // 8 // row_bytes)))
            self.buffer_pool_size = self.buffer_pool_mb << 20
            return self.buffer_pool_size
        on_disk = 0
        for p in (self.path, Path(f"{self.path}.wal")):
            with suppress(OSError):
                on_disk += p.stat().st_size
        want = max(POOL_MIN_MB << 20, POOL_FILE_FACTOR * on_disk)
        want = (want + (1 << 20) - 1) >> 20 << 20
        try:
            ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            ram = 0
        if ram and want >= int(0.8 * ram):
            return 0
        self.buffer_pool_size = want
        return want

    def _pool_error(self, error: BaseException, doing: str) -> BufferPoolError:
        """A :class:`BufferPoolError` for ``error`` that says what to change."""
        size = self.buffer_pool_size
        pool = f"{size >> 20} MB" if size else "Kùzu's default size"
        how = (f"Settings.kuzu_buffer_pool_mb = {self.buffer_pool_mb}" if self.buffer_pool_mb > 0
               else "sized from the file (Settings.kuzu_buffer_pool_mb = 0)")
        return BufferPoolError(
            f"{doing} needed more memory than Kùzu's buffer pool holds ({pool}, {how}); nothing of it "
            "was written. Raise Settings.kuzu_buffer_pool_mb (or set it to 0 to size the pool from "
            f"the file) and open the file again, or write in smaller batches (Kùzu: {error})"
        )

    def _prepare_schema(self) -> int:
        conn = self._conn_main
        meta = migrations.read_meta(conn)
        if meta:
            stored_name, stored_dim = meta.get("embedder", "?"), int(meta.get("dim", "0"))
            if stored_dim != self.dim or stored_name != self.embedder_name:
                raise EmbedderMismatchError(
                    f"{self.path} was built with embedder {stored_name!r} ({stored_dim} dims), "
                    f"but this Memory uses {self.embedder_name!r} ({self.dim} dims): open it with "
                    "the same embedder, or start a new database file"
                )
        if self.read_only:
            version = int(meta.get("schema_version", "0"))
            if version != migrations.latest_version():
                raise StoreError(
                    f"{self.path} has schema version {version}, expected "
                    f"{migrations.latest_version()}; open it once without read_only=True to migrate"
                )
        else:
            with self._lock.exclusive():
                version = migrations.migrate(conn, self.dim, self.embedder_name)
        return version

    # --- connections and transactions -----------------------------------------------------
    def _conn(self) -> kuzu.Connection:
        """This thread's read connection (inside this thread's write transaction: the writer's)."""
        if self._lock.owned_exclusive() or self._side_thread == threading.get_ident():
            return self._conn_main
        if self._closed:
            raise StoreError("this Memory is closed; open a new one")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = kuzu.Connection(self._db)
            self._local.conn = conn
        return conn

    def in_transaction(self) -> bool:
        """True when the calling thread is inside one of this store's write transactions."""
        if self._side_thread is not None and self._side_thread == threading.get_ident():
            return True
        return bool(self._tx_depth) and self._lock.owned_exclusive()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the store alone (no read or write of another thread overlaps), outside Kùzu's
        transactions: bulk COPY statements use it. Waits for deferred writes first."""
        if self.read_only:
            raise ReadOnlyError("this database was opened with read_only=True; writes are refused")
        with self._lock.exclusive():
            self._mirrors_changing()
            try:
                if not self._tx_depth:
                    self._drain_deferred()
                    self._drop_fulltext()
                yield
            except StoreError as e:
                if is_pool_error(e) and not isinstance(e, BufferPoolError):
                    raise self._pool_error(e, "a bulk write") from e
                raise
            finally:
                self.generation += 1
            if not self._tx_depth:
                self._maybe_checkpoint()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Hold the store shared: no write commits (and no mirror changes) until the block ends.

        Ranking reads the in-memory mirrors and then a few rows from the file inside one
        snapshot, so both agree. Do not start a write inside it (that raises LockUpgradeError).
        """
        with self._lock.shared():
            yield

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction; nested uses join the outer one. Rolls back on any error.

        Holds the store exclusively from BEGIN until the mirrors were updated after COMMIT, so
        readers never see the file and the mirrors disagree. Deferred writes queued before it
        are written first (in their own transactions).
        """
        if self.read_only:
            raise ReadOnlyError("this database was opened with read_only=True; writes are refused")
        if self._side_thread is not None and self._side_thread == threading.get_ident():
            yield  # a deferred write inside the background writer's batch joins it
            return
        with self._lock.exclusive():
            conn = self._conn_main
            if self._tx_depth:
                self._tx_depth += 1
                try:
                    yield
                finally:
                    self._tx_depth -= 1
                return
            if self._closed:
                raise StoreError("this Memory is closed; open a new one")
            if self._settle_due:
                self._settle_after_rollback()
            self._drain_deferred()
            self._drop_fulltext()
            try:
                conn.execute("BEGIN TRANSACTION")
            except RuntimeError as e:
                raise StoreError(f"could not start a transaction: {e}") from e
            self._tx_depth = 1
            self._tx_serial += 1  # tells this transaction's batch writes apart (store/learnings.py)
            self._after_commit = []
            self._before_commit = []
            try:
                yield
                self._flush_held()
                while self._before_commit:
                    self._before_commit.pop(0)()
                    self._flush_held()
            except BaseException as e:
                self._tx_depth = 0
                self._after_commit = []
                self._before_commit = []
                self._drop_held()
                _rollback(conn)  # Kùzu may already have rolled back after the failing statement
                self._settle_after_rollback()
                if is_pool_error(e) and not isinstance(e, BufferPoolError):
                    raise self._pool_error(e, "a write") from e
                raise
            self._tx_depth = 0
            pending, self._after_commit = self._after_commit, []
            self.generation += 1
            if pending or not self._draining:  # a deferred Application record changes no mirror
                self._mirrors_changing()
            try:
                conn.execute("COMMIT")
            except RuntimeError as e:
                _rollback(conn)
                self._settle_after_rollback()
                self._resync_mirrors()  # the commit may have reached the file: re-read it
                if is_pool_error(e):
                    raise self._pool_error(e, "committing a write") from e
                raise StoreError(f"commit failed: {e}; the in-memory state was re-read from the file") from e
            for fn in pending:
                fn()
            self._maybe_checkpoint()

    def _wal_bytes(self) -> int:
        if self.path is None:
            return 0
        try:
            return os.stat(f"{self.path}.wal").st_size
        except OSError:
            return 0

    def _maybe_checkpoint(self) -> None:
        """Checkpoint when the write-ahead log has grown past ``checkpoint_bytes`` (caller holds
        the store exclusively, so no read is open)."""
        if self.path is None or self.read_only:
            return
        if self._checkpoint_due or self._wal_bytes() > self.checkpoint_bytes:
            self._checkpoint_due = False
            try:
                self._conn_main.execute("CHECKPOINT")
            except RuntimeError as e:
                raise StoreError(f"checkpoint failed: {e}") from e

    def _resync_mirrors(self) -> None:
        """Rebuild the in-memory mirrors from the file (the full store defines how)."""
        reload = getattr(self, "reload_catalogs", None)
        if reload is not None:
            with suppress(Exception):
                reload()

    def rerun_on_conflict(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` (work that opens its own write transaction). One process owns a Kùzu file,
        so nothing conflicts with it: once. (A Bolt store runs it again after a conflict.)"""
        return fn()

    def on_commit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once the current write transaction commits (now, if there is none).

        In-memory state (the catalogs) is updated this way, so a rollback leaves it untouched.
        """
        if self.in_transaction():
            self._after_commit.append(fn)
        else:
            with self._lock.exclusive():
                fn()

    def before_commit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` at the end of the current write transaction, just before its COMMIT and
        inside it (its writes commit with the rest; an error it raises rolls everything back).

        ``add_learning`` writes a new learning's vector this way, after its node and edges, so
        that the embedding computes on a worker while they are written.
        """
        if not self.in_transaction():
            raise StoreError("before_commit needs an open write transaction")
        self._before_commit.append(fn)

    def _prepared(self, conn: kuzu.Connection, cypher: str) -> Any:
        """A cached prepared statement for one of graphmem's own queries on ``conn``.

        Preparing costs ~1 ms per query in Kùzu 0.11; cached, a point read drops from ~1.5 ms to
        ~0.5 ms. The cache lives on the connection object, so it is per thread like the connection.
        """
        cache: dict[str, Any] | None = getattr(conn, "_graphmem_prepared", None)
        if cache is None:
            cache = {}
            conn._graphmem_prepared = cache  # type: ignore[attr-defined]
        stmt = cache.get(cypher)
        if stmt is None:
            if len(cache) >= 512:
                cache.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                stmt = conn.prepare(cypher)
            cache[cypher] = stmt
        return stmt

    def _run(
        self, conn: kuzu.Connection, cypher: str, params: Mapping[str, Any] | None, *, cache: bool = True
    ) -> list[dict[str, Any]]:
        if self._held is not None and conn is self._conn_main:
            self._flush_held()  # a held write runs before anything that might read what it writes
        check_db_params(params)  # a lone surrogate must never reach Kùzu (it can wedge the row)
        if cache and ";" not in cypher:
            stmt = self._prepared(conn, cypher)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                result = conn.execute(stmt, dict(params or {}))
        else:
            result = conn.execute(cypher, dict(params or {}))
        if isinstance(result, list):  # several statements: the last result counts
            result = result[-1]
        names = result.get_column_names()
        return [dict(zip(names, row)) for row in result.get_all()]

    def execute_read(self, cypher: str, params: Mapping[str, Any] | None = None) -> Any:
        """A raw Kùzu QueryResult for a read (columnar loads use it), under the shared lock.

        Call it inside ``with store.snapshot():`` when the result is consumed afterwards.
        """
        with self._lock.shared():
            try:
                result = self._conn().execute(cypher, dict(params or {}))
            except RuntimeError as e:
                raise StoreError(f"query failed: {e}") from e
        return result[-1] if isinstance(result, list) else result

    # the mirrors' snapshot beside the file (graphmem/store/snapshot.py)
    mirror_snapshot = True  # Settings.mirror_snapshot: read and write <file>.mirrors
    mirror_snapshot_min_rows = 10_000  # Settings.mirror_snapshot_min_rows: no snapshot of smaller files
    _open_print: dict[str, int] | None = None  # the file's fingerprint before Kùzu opened it
    _snapshot_on_disk = False  # a snapshot that matches the file exists: delete it before the first write
    _snapshot_loaded = False  # the mirrors came from it (a close without writes only re-stamps it)

    def _mirrors_changing(self) -> None:
        """A write commits (or an exclusive block starts): the snapshot beside the file will be
        stale, so delete it first (a kill after the commit must not leave a snapshot the next
        open trusts)."""
        if self._snapshot_on_disk and self.path is not None:
            self._snapshot_on_disk = False
            self._snapshot_loaded = False
            snapshot.discard(self.path)

    def _snapshot_prepare(self) -> Any:
        """Before the database closes (store held exclusively, checkpointed): write the mirrors'
        snapshot to a temporary file, or note that the loaded one only needs a new stamp."""
        if self.read_only or self.path is None or not self.mirror_snapshot:
            return None
        if self._snapshot_loaded and self._snapshot_on_disk:
            return "restamp"
        try:
            return snapshot.prepare(self, self.mirror_snapshot_min_rows)
        except Exception:  # a snapshot is an optimisation: never fail a close for it
            return None

    scan_chunk_rows = 16_384  # rows per query of :meth:`scan_chunks` (bounds Kùzu's result and its Arrow copy)

    def scan_chunks(self, label: str, var: str, projection: str) -> Iterator[Any]:
        """``MATCH (var:label) RETURN projection`` as a sequence of Arrow tables of at most
        ``scan_chunk_rows`` rows each, by ranges of the nodes' internal offsets (catalog loads).

        One full-table query holds Kùzu's whole result, its Arrow copy and whatever the caller
        builds from it at once (3.1 GB peak at 100k learnings); ranges bound the first two to a
        chunk. A store that is not a Kùzu database (Bolt) gets one table. Call it under the
        store's lock (the catalog load holds it exclusively)."""
        query = f"MATCH ({var}:{label}) RETURN {projection}"
        if not isinstance(self._db, kuzu.Database):
            result = self.execute_read(query)
            yield result.get_as_arrow(chunk_size=1_000_000)
            return
        top = self.execute_read(f"MATCH ({var}:{label}) RETURN max(offset(id({var}))) AS m").get_all()
        last = top[0][0] if top else None
        if last is None:
            result = self.execute_read(query)  # no rows: an empty table with the right columns
            yield result.get_as_arrow(chunk_size=1_000_000)
            return
        step = max(1, int(self.scan_chunk_rows))
        ranged = f"MATCH ({var}:{label}) WHERE offset(id({var})) >= $lo AND offset(id({var})) < $hi RETURN {projection}"
        for lo in range(0, int(last) + 1, step):
            result = self.execute_read(ranged, {"lo": lo, "hi": lo + step})
            try:
                table = result.get_as_arrow(chunk_size=max(1, result.get_num_tuples()))  # one Arrow chunk
            finally:
                result.close()  # hand Kùzu's result memory back before the next range
            yield table

    def read(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a read query; inside a write transaction it sees that transaction's writes."""
        if not self._lock.owned_shared():
            self._wait_if_needed(cypher)
        with self._fulltext_ready(cypher), self._lock.shared(), self._fulltext_guard(cypher):
            try:
                return self._run(self._conn(), cypher, params)
            except RuntimeError as e:
                raise StoreError(f"query failed: {e}") from e

    def write(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run one write statement: inside the caller's transaction, or as its own."""
        if self.read_only:
            raise ReadOnlyError("this database was opened with read_only=True; writes are refused")
        if not self.in_transaction():
            with self.transaction():
                return self.write(cypher, params)
        try:
            return self._run(self._conn_main, cypher, params)
        except RuntimeError as e:
            raise StoreError(f"write failed: {e}") from e

    def cypher(
        self,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        write: bool = False,
        force: bool = False,
        timeout_ms: int | None = None,
    ) -> list[dict[str, Any]]:
        """Run an analyst's Cypher over the whole file; read-only unless write (see store/cypher_gates.py).

        ``timeout_ms`` stops a read-only query that runs longer (CypherError says so)."""
        if self._deferred:
            self.flush_deferred()
        from graphmem.store import cypher_gates as analyst

        with self._fulltext_ready(query):
            if write:
                try:
                    return analyst.run(self, query, params, write=write, force=force)
                finally:  # the event rows search keeps may have changed behind its back
                    forget = getattr(self, "forget_event_rows", None)
                    if forget is not None:
                        forget()
            with self._lock.shared(), self._fulltext_guard(query, always=True):  # shared first, as the writer
                conn = self._conn()
                with analyst.time_limit(conn, timeout_ms):
                    return analyst.run(self, query, params, write=False, force=force)

    def stats(self) -> dict[str, int]:
        """Row counts of every node table and edge table, by name."""
        tables = self.read("CALL show_tables() RETURN name, type")
        out: dict[str, int] = {}
        for t in tables:
            name, kind = t["name"], t["type"]
            if kind == "NODE":
                q = f"MATCH (n:{name}) RETURN count(n) AS n"
            elif kind == "REL":
                q = f"MATCH ()-[r:{name}]->() RETURN count(r) AS n"
            else:
                continue
            out[name] = int(self.read(q)[0]["n"])
        return out

    def close(self) -> None:
        """Close the database; the object is unusable afterwards."""
        if self._closed:
            return
        self._stop_writer()
        with self._lock.exclusive():
            if not self.read_only and self.fulltext_at_close and not self._fulltext_built:
                with suppress(RuntimeError):
                    fulltext.build(self._conn_main)
            if not self.read_only and self.path is not None:
                with suppress(RuntimeError):  # leave the file whole, the log empty
                    self._conn_main.execute("CHECKPOINT")
            pending = self._snapshot_prepare()
            self._closed = True
            self._local = threading.local()
            try:
                self._conn_main.close()
                self._db.close()
            except RuntimeError as e:
                if pending not in (None, "restamp"):
                    pending.abort()
                raise StoreError(f"closing the database failed: {e}") from e
        if pending is not None and self.path is not None:  # stamped with the closed file's fingerprint
            if pending == "restamp":
                snapshot.restamp(self.path)
            else:
                snapshot.finish(pending, self.path)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._closed

    @property
    def embed_first(self) -> bool:
        """Whether ``add_learning`` must embed before it writes instead of beside the writes:
        an in-memory Kùzu database, where a write rolled back after some of its statements ran
        cannot be settled (:meth:`_settle_after_rollback`), so a failing embedder must fail
        before anything is written."""
        return self.path is None


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
