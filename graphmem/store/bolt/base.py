"""BoltBase: :class:`~graphmem.store.kuzu_store.KuzuBase`'s surface over a Bolt server.

The store mixins (learnings, events, retrieval, ...) call ``read``/``write``/``transaction``/
``execute_read``/``on_commit``/``snapshot``; KuzuBase implements those with its locks, deferred
writes and after-commit hooks on top of a few connection primitives. BoltBase keeps all of that
and replaces the primitives: a "connection" here is a neo4j driver session (one per thread for
reads, one for the writer), ``BEGIN``/``COMMIT``/``ROLLBACK`` map onto an explicit driver
transaction, and each statement is translated from Kùzu's dialect (:mod:`.dialect`).

Several processes may share one Bolt database, so the in-memory mirrors (vectors, filter columns,
lexical statistics) may go stale: every write transaction also increments a counter node
(the sum of ``(:Meta {key: 'generation:K'}).n`` over a few shards K) and, when it changed what the
mirrors hold, writes a change record; before ranking (``snapshot()``) and before a read that is not
inside a snapshot or transaction, the store compares the counters with the values its mirrors
include and applies the other processes' change records (:mod:`.changes`).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from graphmem.errors import EmbedderMismatchError, StoreError
from graphmem.inputs import check_db_params
from graphmem.store import migrations
from graphmem.store.bolt import schema as bolt_schema
from graphmem.store.bolt.connection import (  # noqa: F401 -- re-exported: code and tests import them from here
    _NOT_GEN,
    CHANGE_KEEP,
    GEN_KEYS,
    BoltConnection,
    BoltQueryError,
    ConflictRetry,
    _Driver,
    _Rows,
    is_conflict,
)
from graphmem.store.bolt.cypher import BoltCypher
from graphmem.store.bolt.freshness import BoltFreshness
from graphmem.store.catalog import EventCatalog, LearningCatalog
from graphmem.store.locks import ReadWriteLock

BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def is_bolt_url(value: object) -> bool:
    """True for a ``bolt://`` / ``neo4j://`` (and ``+s``/``+ssc``) URL."""
    return isinstance(value, str) and value.split("://", 1)[0].lower() in BOLT_SCHEMES and "://" in value


def split_url(url: str) -> tuple[str, str | None]:
    """The server URL and the database named by its path (``bolt://h:7687/mydb`` -> mydb)."""
    parts = urlsplit(url)
    name = parts.path.strip("/") or None
    return urlunsplit((parts.scheme, parts.netloc, "", parts.query, "")), name


def _column_types(schema: bolt_schema.Schema) -> dict[str, str]:
    """Property name -> Kùzu type over every table, leaving out names typed differently in two tables."""
    types: dict[str, str] = {}
    clash: set[str] = set()
    for cols in (*schema.nodes.values(), *schema.rels.values()):
        for c, t in cols.items():
            if types.setdefault(c, t) != t:
                clash.add(c)
    return {c: t for c, t in types.items() if c not in clash}


class BoltBase(BoltFreshness, BoltCypher):
    """KuzuBase's locks, transactions, deferred writes and hooks over a Bolt server."""

    @property
    def embed_first(self) -> bool:
        """False: a Bolt server rolls a failed write back cleanly, so ``add_learning`` embeds
        beside its writes (``path`` is None here, unlike an in-memory Kùzu database's reason)."""
        return False

    def __init__(
        self,
        url: str,
        *,
        dim: int,
        embedder_name: str,
        read_only: bool = False,
        auth: tuple[str, str] | None = None,
        database: str | None = None,
    ) -> None:
        server, named = split_url(url)
        self.url = url
        self.path = None  # no file: KuzuBase skips checkpoints and side batches for path None
        self.dim = dim
        self.embedder_name = embedder_name
        self.read_only = read_only
        self._lock = ReadWriteLock()
        self._local = threading.local()
        self._closed = False
        self._tx_depth = 0
        self._after_commit: list[Callable[[], None]] = []
        self._before_commit: list[Callable[[], None]] = []
        self._deferred: deque[Callable[[], None]] = deque()
        self._deferred_cond = threading.Condition()
        self._writer: threading.Thread | None = None
        self._stopping = False
        self._draining = False
        self.generation = 0
        self._side_lock = threading.Lock()
        self._side_thread: int | None = None
        self._checkpoint_due = False
        self.checkpoint_bytes = 16 << 20
        self.deferred_retries = 3
        self.deferred_batch = 64
        self.learning_catalog = LearningCatalog(dim)
        self.event_catalog = EventCatalog(dim)
        self.bolt_schema = bolt_schema.load(dim)
        self._types = _column_types(self.bolt_schema)
        self.db_generation = -1  # the counter value (sum over the shards) the mirrors were built at
        self.seen: dict[int, int] = {}  # per counter shard: the value the mirrors include
        self.refreshes = {"full": 0, "changes": 0, "rows": 0}  # mirror refreshes (and rows re-read by the incremental ones)
        self.max_changes = 4096  # a reader further behind (in transactions) rebuilds its mirrors in full
        self.freshness_seconds = 0.0  # check the counter at most this often (0: before every top-level read)
        self._checked_at = 0.0
        self._reloading = False
        self._bolt = _Driver(server, auth, database or named)
        self._gen_lock = threading.Lock()
        self.conflict_retry = ConflictRetry()
        self._main = BoltConnection(self._bolt, self.bolt_schema, self._types, self._committed_generation, self._gen_lock,
                                    self.conflict_retry)
        self._db = self._bolt  # type: ignore[assignment]
        self._conn_main = self._main  # type: ignore[assignment]
        try:
            self.schema_version = self._prepare_schema()
        except BaseException:  # e.g. a newer schema or another embedder: release the connection
            self._main.close()
            self._bolt.close()
            raise

    # --- schema ---------------------------------------------------------------------------
    def _prepare_schema(self) -> int:
        conn = self._main
        try:
            rows = conn.execute(f"MATCH (m:Meta) WHERE {_NOT_GEN} RETURN m.key AS key, m.value AS value")
        except BoltQueryError as e:
            raise StoreError(f"could not read graphmem's bookkeeping at {self.url}: {e}") from e
        meta = {str(r["key"]): str(r["value"]) for r in rows}
        if meta:
            stored_name, stored_dim = meta.get("embedder", "?"), int(meta.get("dim", "0"))
            if stored_dim != self.dim or stored_name != self.embedder_name:
                raise EmbedderMismatchError(
                    f"{self.url} was built with embedder {stored_name!r} ({stored_dim} dims), but this Memory "
                    f"uses {self.embedder_name!r} ({self.dim} dims): open it with the same embedder, or use a new database"
                )
        version = int(meta.get("schema_version", "0"))
        if version > migrations.latest_version():
            from graphmem.errors import SchemaVersionError

            raise SchemaVersionError(f"{self.url} has schema version {version}; upgrade graphmem to open it")
        if self.read_only:
            if not meta:
                raise StoreError(f"{self.url} holds no graphmem memory; open it once without read_only=True")
            return version
        if meta and version == self.bolt_schema.version and meta.get("changelog") == "1":
            return version  # constraints were made with the bookkeeping (3 s on ArcadeDB: not on every open)
        with self._lock.exclusive():
            for stmt in bolt_schema.ddl(self.bolt_schema):
                for attempt in range(1, 4):  # another process may be creating the same ones
                    try:
                        conn.execute(stmt)
                        break
                    except BoltQueryError as e:
                        if "already" in str(e).lower():
                            break
                        if attempt == 3:
                            raise StoreError(f"could not create graphmem's constraints at {self.url}: {e}") from e
                        self.conflict_retry.wait(attempt + 3)
            if meta and version < self.bolt_schema.version:
                self._migrate(conn, version)
            if not meta or version < self.bolt_schema.version or meta.get("changelog") != "1":
                conn.execute("BEGIN TRANSACTION")
                try:  # changelog: the change log's constraint exists (databases set up before it get it here)
                    for key, value in (("embedder", self.embedder_name), ("dim", str(self.dim)),
                                       ("schema_version", str(self.bolt_schema.version)), ("changelog", "1")):
                        conn.execute("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        return self.bolt_schema.version

    def _migrate(self, conn: BoltConnection, version: int) -> None:
        """Bring a database at an older schema version forward, one schema file per transaction
        (the version moves with each; a process stopped half-way resumes at the next file)."""
        for target, statements in bolt_schema.migration_steps(self.dim, version):
            conn.execute("BEGIN TRANSACTION")
            try:
                for stmt in statements:
                    conn.execute(stmt)
                conn.execute("MERGE (m:Meta {key: 'schema_version'}) SET m.value = $v", {"v": str(target)})
                conn.execute("COMMIT")
            except BoltQueryError as e:
                conn.execute("ROLLBACK")
                raise StoreError(f"could not migrate {self.url} to schema version {target}: {e}") from e
            except BaseException:
                conn.execute("ROLLBACK")
                raise



    @contextmanager
    def hold_writer(self) -> Iterator[None]:
        """Nothing to hold: the background writer waits on the server's network round trips, not
        on the GIL, so it does not stall a context() running beside it (see KuzuBase.hold_writer)."""
        yield


    # --- connections and statements ---------------------------------------------------------
    def _conn(self) -> BoltConnection:  # type: ignore[override]
        if self._lock.owned_exclusive() or self._side_thread == threading.get_ident():
            return self._main
        if self._closed:
            raise StoreError("this Memory is closed; open a new one")
        conn: BoltConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = BoltConnection(self._bolt, self.bolt_schema, self._types, retry=self.conflict_retry)
            self._local.conn = conn
        return conn

    def _run(self, conn: Any, cypher: str, params: Mapping[str, Any] | None, *, cache: bool = True) -> list[dict[str, Any]]:
        check_db_params(params)
        return list(conn.execute(cypher, params))

    def execute_read(self, cypher: str, params: Mapping[str, Any] | None = None) -> Any:
        """The rows of a read with Kùzu's ``get_as_arrow``/``get_all`` (catalog loads)."""
        check_db_params(params)
        with self._lock.shared():
            try:
                return self._conn().execute(cypher, params)
            except BoltQueryError as e:
                raise StoreError(f"query failed: {e}") from e

    def read(self, cypher: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """KuzuBase.read, after catching up with other processes' writes (outside snapshots)."""
        if not self._lock.owned_shared() and not self._lock.owned_exclusive():
            self.ensure_fresh()
        return super().read(cypher, params)

    def _side_batches_allowed(self) -> bool:
        """KuzuBase's side batches (deferred writes in one transaction while readers go on) need no
        file here: the server isolates the writer's transaction from the readers' sessions."""
        return not self.read_only

    def _fulltext_guard(self, cypher: str, *, always: bool = False) -> Any:
        from contextlib import nullcontext

        return nullcontext()

    def stats(self) -> dict[str, int]:
        """Node and edge counts by label / type (the schema's labels, zero when absent)."""
        out: dict[str, int] = {}
        for label in self.bolt_schema.nodes:
            out[label] = int(self.read(f"MATCH (n:{label}) RETURN count(n) AS n")[0]["n"])
        out["Meta"] = int(self.read(f"MATCH (m:Meta) WHERE {_NOT_GEN} AND m.key <> 'changelog' RETURN count(m) AS n")[0]["n"])  # not the counters nor the change log's marker, as on Kùzu
        for rel in self.bolt_schema.rels:
            out[rel] = int(self.read(f"MATCH ()-[r:{rel}]->() RETURN count(r) AS n")[0]["n"])
        return out

    def close(self) -> None:
        """Close the sessions and the driver; the object is unusable afterwards."""
        if self._closed:
            return
        self._stop_writer()
        with self._lock.exclusive():
            self._closed = True
            self._local = threading.local()
            self._main.close()
            self._bolt.close()
