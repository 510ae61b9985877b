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

import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from graphmem.errors import EmbedderMismatchError, StoreError
from graphmem.inputs import check_db_params
from graphmem.store import migrations
from graphmem.store.bolt import dialect
from graphmem.store.bolt import schema as bolt_schema
from graphmem.store.bolt.changes import GEN_SHARDS, changes_of
from graphmem.store.catalog import EventCatalog, LearningCatalog
from graphmem.store.kuzu_store import KuzuBase
from graphmem.store.locks import ReadWriteLock

BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")

#: clauses that write: refused in an analyst's read-only Cypher (which also runs in a rolled-back transaction)
_WRITE_CLAUSES = frozenset({"CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "FOREACH"})
#: the shared write counter is the sum of GEN_SHARDS counter nodes; each store moves the one it
#: picked at random, so two servers' commits rarely conflict on the counter itself
GEN_KEYS = [f"generation:{k}" for k in range(GEN_SHARDS)]
_GEN_READ = "MATCH (m:Meta) WHERE m.key IN $keys RETURN m.key AS key, m.n AS n, m.floor AS floor"
_GEN_BUMP = "MERGE (m:Meta {key: $gen_key}) SET m.n = coalesce(m.n, 0) + 1 RETURN m.n AS n"
_NOT_GEN = "NOT m.key STARTS WITH 'generation'"
#: a write transaction that changed what the mirrors hold also writes one change record
#: ``(:ChangeLog {key: 'K:N', ids: ['L:<learning id>', ...]})`` for its shard K and counter value N
#: (see :mod:`.changes`); each shard keeps its last CHANGE_KEEP records
_CHANGE_WRITE = "CREATE (c:ChangeLog {key: $key, ids: $ids})"
_CHANGE_PRUNE = ("UNWIND $keys AS k MATCH (c:ChangeLog {key: k}) DELETE c "
                 "WITH count(*) AS gone MATCH (m:Meta {key: $gen_key}) SET m.floor = $floor RETURN gone")
CHANGE_KEEP = 4096
_PRUNE_EVERY = 64


def is_bolt_url(value: object) -> bool:
    """True for a ``bolt://`` / ``neo4j://`` (and ``+s``/``+ssc``) URL."""
    return isinstance(value, str) and value.split("://", 1)[0].lower() in BOLT_SCHEMES and "://" in value


def split_url(url: str) -> tuple[str, str | None]:
    """The server URL and the database named by its path (``bolt://h:7687/mydb`` -> mydb)."""
    parts = urlsplit(url)
    name = parts.path.strip("/") or None
    return urlunsplit((parts.scheme, parts.netloc, "", parts.query, "")), name


class BoltQueryError(RuntimeError):
    """A driver or server error, as a RuntimeError so KuzuBase's handlers wrap it in StoreError.
    ``conflict``: the engine refused it for another transaction's change (and the replay of the
    transaction's statements did not hold), so running the caller's work again may succeed."""

    def __init__(self, message: str, *, conflict: bool = False) -> None:
        super().__init__(message)
        self.conflict = conflict


def is_conflict(e: BaseException | None) -> bool:
    """True when ``e`` (or an exception it was raised from) is a write conflict with another
    process's transaction (see :meth:`BoltBase.rerun_on_conflict`)."""
    seen = 0
    while e is not None and seen < 10:
        if isinstance(e, BoltQueryError) and e.conflict:
            return True
        e, seen = e.__cause__, seen + 1
    return False


class _Rows:
    """Rows (dicts) of one result, with the part of Kùzu's QueryResult API graphmem uses
    (``get_all``, ``get_column_names``, ``get_as_arrow``): code written for a Kùzu connection
    (catalog loads, the analysts' per-user view) reads a Bolt connection the same way."""

    def __init__(self, keys: list[str], rows: list[dict[str, Any]], types: Mapping[str, str]) -> None:
        self._keys, self._rows, self._types = keys, rows, types  # not a list: Kùzu's list means "several results"

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def get_column_names(self) -> list[str]:
        return list(self._keys)

    def get_all(self) -> list[list[Any]]:
        return [[r.get(k) for k in self._keys] for r in self._rows]

    def get_as_arrow(self, chunk_size: int = 0) -> Any:
        import pyarrow as pa

        columns = {}
        for k in self._keys:
            values = [r.get(k) for r in self._rows]
            arr = None
            if k in self._types:
                with suppress(Exception):
                    arr = pa.array(values, type=_arrow_type(self._types[k]))
            columns[k] = arr if arr is not None else pa.array(values)
        return pa.table(columns) if columns else pa.table({})


def _arrow_type(kuzu_type: str) -> Any:
    import pyarrow as pa

    t = kuzu_type.upper()
    if t.endswith("[]"):
        return pa.list_(_arrow_type(t[:-2]))
    fixed = re.fullmatch(r"(FLOAT|DOUBLE)\[(\d+)\]", t)
    if fixed:
        return pa.list_(pa.float32() if fixed.group(1) == "FLOAT" else pa.float64(), int(fixed.group(2)))
    return {"STRING": pa.string(), "DOUBLE": pa.float64(), "FLOAT": pa.float32(), "INT64": pa.int64(),
            "INT32": pa.int32(), "BOOLEAN": pa.bool_(), "BOOL": pa.bool_(), "TIMESTAMP": pa.timestamp("us")}.get(t, pa.string())


class _Driver:
    """The shared neo4j driver (thread-safe) and the database name; ``close()`` like kuzu.Database.
    Without ``auth``, the credentials come from GRAPHMEM_BOLT_USER / GRAPHMEM_BOLT_PASSWORD when set."""

    def __init__(self, url: str, auth: tuple[str, str] | None, database: str | None) -> None:
        import neo4j

        self.database = database
        if auth is None and os.environ.get("GRAPHMEM_BOLT_USER"):
            auth = (os.environ["GRAPHMEM_BOLT_USER"], os.environ.get("GRAPHMEM_BOLT_PASSWORD", ""))
        try:
            self.driver = neo4j.GraphDatabase.driver(url, auth=auth)
            self.driver.verify_connectivity()
        except Exception as e:
            raise StoreError(f"could not connect to the Bolt server at {url}: {e}") from e

    def close(self) -> None:
        with suppress(Exception):
            self.driver.close()


class ConflictRetry:
    """When and how often a transaction refused for a conflict is replayed.

    ArcadeDB (and Neo4j) refuse a commit when another transaction changed the same records
    (``Neo.TransientError.*``; every graphmem write moves the shared write counter, so two
    processes' overlapping writes always conflict), and a uniqueness constraint fails when two
    transactions MERGE the same new key. Both are retried: up to ``attempts`` times, after
    ``base_delay * 2**(n-1)`` seconds (plus jitter, at most ``max_delay``)."""

    def __init__(self, attempts: int = 8, base_delay: float = 0.01, max_delay: float = 0.5) -> None:
        self.attempts, self.base_delay, self.max_delay = attempts, base_delay, max_delay
        self.retried = 0  # transactions replayed
        self.reran = 0  # callers' work run again (BoltBase.rerun_on_conflict)
        self.reruns = 10  # at most this many runs of the caller's work
        self.gave_up = 0  # replays abandoned (a statement saw other rows)

    def retryable(self, e: Exception, log: list[tuple[str, dict[str, Any], list[dict[str, Any]]]], cypher: str) -> bool:
        """A transient error, or a uniqueness clash of a transaction that MERGEs."""
        import neo4j.exceptions as nx

        if isinstance(e, nx.TransientError):
            return True
        if isinstance(e, nx.ConstraintError | nx.ClientError) and "duplicated key" in str(e).lower():
            if "changelog" in str(e).lower():  # two commits read the same counter: a new one is taken
                return True
            return "MERGE" in cypher.upper() or any("MERGE" in c.upper() for c, _, _ in log)
        return False

    def wait(self, attempt: int) -> None:
        import random

        time.sleep(min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * (0.5 + random.random()))


class BoltConnection:
    """One driver session: auto-commit statements, or one explicit transaction at a time."""

    def __init__(self, db: _Driver, schema: bolt_schema.Schema, types: Mapping[str, str],
                 on_commit_generation: Callable[[int, int], None] | None = None,
                 gen_lock: threading.Lock | None = None, retry: ConflictRetry | None = None) -> None:
        self._db = db
        self._schema = schema
        self._types = types
        self._gen_lock = gen_lock or threading.Lock()
        self._session: Any = None
        self._tx: Any = None
        self._on_gen = on_commit_generation
        self.retry = retry or ConflictRetry()
        import random

        self.shard = random.randrange(GEN_SHARDS)
        self.gen_key = GEN_KEYS[self.shard]  # this connection's counter shard
        self._log: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []  # the open transaction's statements
        self.changes: list[str] = []  # what the open transaction changed in the mirrors ('L:id', ...)
        self.bases: dict[str, Any] = {}  # learnings as the open transaction read them (delta writes)
        self.change_keep = CHANGE_KEEP

    def note(self, changes: list[str]) -> None:
        """Record mirror changes of the open transaction (written with its commit)."""
        for c in changes:
            if c not in self.changes:
                self.changes.append(c)

    def _sess(self) -> Any:
        if self._session is None:
            self._session = self._db.driver.session(database=self._db.database)
        return self._session

    def execute(self, cypher: str, params: Mapping[str, Any] | None = None) -> _Rows:
        """Run one statement written for Kùzu (translated here); BEGIN TRANSACTION [READ ONLY] /
        COMMIT / ROLLBACK / CHECKPOINT and Kùzu's catalog calls as Kùzu names them."""
        word = " ".join(cypher.split()).upper()
        empty = _Rows([], [], self._types)
        try:
            if word.startswith("BEGIN TRANSACTION"):
                self._tx = self._sess().begin_transaction()
                self._log, self.changes, self.bases = [], [], {}
                return empty
            if word == "COMMIT":
                if self._tx is not None:
                    self._commit()
                return empty
            if word == "ROLLBACK":
                tx, self._tx, self._log, self.changes, self.bases = self._tx, None, [], [], {}
                if tx is not None:
                    with suppress(Exception):
                        tx.rollback()
                return empty
            if word == "CHECKPOINT":
                return empty
        except Exception as e:
            raise BoltQueryError(f"{type(e).__name__}: {_message(e)}", conflict=_transient(e)) from e
        catalog = bolt_schema.catalog_rows(self._schema, cypher)
        if catalog is not None:
            return _Rows(list(catalog[0]) if catalog else [], catalog, self._types)
        return self._query(dialect.translate(cypher), dialect.to_wire(dict(params or {})))

    def _query(self, cypher: str, params: dict[str, Any]) -> _Rows:
        attempt = 0
        keys: list[str] = []
        rows: list[dict[str, Any]] = []
        while True:
            try:
                keys, rows = self._run_one(cypher, params)
                break
            except Exception as e:
                if self._tx is not None and self.retry.retryable(e, self._log, cypher) and attempt < self.retry.attempts:
                    attempt += 1
                    if self._replay(attempt):  # the transaction so far again, then this statement
                        continue
                conflict = self._tx is not None and self.retry.retryable(e, self._log, cypher)
                self._reset_after_error()
                raise BoltQueryError(f"{type(e).__name__}: {_message(e)}", conflict=conflict) from e
        if self._tx is not None:
            self._log.append((cypher, params, rows))
        if not keys:  # ArcadeDB sends no column names for a label that has no node yet
            keys = _aliases(cypher)
        return _Rows(keys, rows, self._types)

    def _run_one(self, cypher: str, params: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
        runner = self._tx if self._tx is not None else self._sess()
        result = runner.run(cypher, params)
        keys = list(result.keys())
        return keys, [{k: dialect.from_wire(rec[k]) for k in keys} for rec in result]

    def _commit(self) -> None:
        """Bump the shared write counter, write the change record, and commit; when the engine
        refuses the commit because another transaction changed the same records (a transient
        conflict), replay this transaction's statements in a new one and commit again (bounded,
        with backoff)."""
        attempt = 0
        while True:
            tx = self._tx
            try:
                with self._gen_lock:  # a freshness check waits for the counter of our own commit
                    row = tx.run(_GEN_BUMP, {"gen_key": self.gen_key}).single()
                    n = int(row["n"]) if row is not None else 0
                    if self.changes:
                        tx.run(_CHANGE_WRITE, {"key": f"{self.shard}:{n}", "ids": list(self.changes)}).consume()
                    if n % _PRUNE_EVERY == 0 and n > self.change_keep:
                        floor = n - self.change_keep
                        keys = [f"{self.shard}:{i}" for i in range(max(1, floor - _PRUNE_EVERY * 4), floor + 1)]
                        tx.run(_CHANGE_PRUNE, {"keys": keys, "gen_key": self.gen_key, "floor": floor}).consume()
                    tx.commit()
                    self._tx, self._log, self.changes, self.bases = None, [], [], {}
                    if self._on_gen is not None:
                        self._on_gen(self.shard, n)
                return
            except Exception as e:
                retryable = self.retry.retryable(e, self._log, "")
                if retryable and attempt < self.retry.attempts:
                    attempt += 1
                    if self._replay(attempt):
                        continue
                self._tx, self._log, self.changes, self.bases = None, [], [], {}
                with suppress(Exception):
                    tx.rollback()
                if retryable:  # the caller's work may run again on current data (rerun_on_conflict)
                    raise BoltQueryError(f"{type(e).__name__}: {_message(e)}", conflict=True) from e
                raise

    def _replay(self, attempt: int) -> bool:
        """Roll back, wait, and run the logged statements in a new transaction. False (and the
        transaction left closed) when a statement now returns other rows than the first time:
        the caller's decisions may rest on them, so the conflict is the caller's to handle."""
        old, log = self._tx, self._log
        with suppress(Exception):
            old.rollback()
        self.retry.wait(attempt)
        self._tx, self._log = None, []
        try:
            self._tx = self._sess().begin_transaction()
            for cypher, params, rows in log:
                _, again = self._run_one(cypher, params)
                if again != rows:
                    self.retry.gave_up += 1
                    with suppress(Exception):
                        self._tx.rollback()
                    self._tx = None
                    return False
                self._log.append((cypher, params, rows))
        except Exception:
            with suppress(Exception):
                self._tx.rollback()
            self._tx = None
            self.retry.gave_up += 1
            return False
        self.retry.retried += 1
        return True

    def _reset_after_error(self) -> None:
        """A failed statement can leave the session unusable: a new one for the next statement
        (an open transaction stays, for the caller's ROLLBACK)."""
        if self._tx is None and self._session is not None:
            with suppress(Exception):
                self._session.close()
            self._session = None

    def close(self) -> None:
        if self._tx is not None:
            with suppress(Exception):
                self._tx.rollback()
            self._tx, self._log = None, []
        if self._session is not None:
            with suppress(Exception):
                self._session.close()
            self._session = None


def _transient(e: Exception) -> bool:
    import neo4j.exceptions as nx

    return isinstance(e, nx.TransientError)


def _aliases(cypher: str) -> list[str]:
    """The column names of a query's last RETURN (``... AS name`` items)."""
    idx = cypher.upper().rfind("RETURN ")
    return re.findall(r"\bAS\s+`?(\w+)`?", cypher[idx:], re.IGNORECASE) if idx >= 0 else []


def _message(e: Exception) -> str:
    msg = getattr(e, "message", None) or str(e)
    return str(msg).strip().splitlines()[0][:500] if str(msg).strip() else type(e).__name__


def _column_types(schema: bolt_schema.Schema) -> dict[str, str]:
    """Property name -> Kùzu type over every table, leaving out names typed differently in two tables."""
    types: dict[str, str] = {}
    clash: set[str] = set()
    for cols in (*schema.nodes.values(), *schema.rels.values()):
        for c, t in cols.items():
            if types.setdefault(c, t) != t:
                clash.add(c)
    return {c: t for c, t in types.items() if c not in clash}


class BoltBase(KuzuBase):
    """KuzuBase's locks, transactions, deferred writes and hooks over a Bolt server."""

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

    def _committed_generation(self, shard: int, n: int) -> None:
        """After our own commit: the mirrors are current for that shard if nobody else moved it
        in between (else the next check reads the others' change records)."""
        if self.seen.get(shard, 0) == n - 1:
            self.seen[shard] = n
            self.db_generation = sum(self.seen.values())

    # --- freshness of the mirrors across processes ------------------------------------------
    def counters(self) -> dict[int, tuple[int, int]]:
        """Per counter shard: (the write counter, the oldest change record kept)."""
        rows = self._conn().execute(_GEN_READ, {"keys": GEN_KEYS})
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

    @contextmanager
    def hold_writer(self) -> Iterator[None]:
        """Nothing to hold: the background writer waits on the server's network round trips, not
        on the GIL, so it does not stall a context() running beside it (see KuzuBase.hold_writer)."""
        yield

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

    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *, write: bool = False,
               force: bool = False, timeout_ms: int | None = None) -> list[dict[str, Any]]:
        """An analyst's Cypher, sent as it is (the engine's own dialect): in a read-only session,
        or with ``write`` in one of the store's write transactions (see :meth:`_analyst_write`)."""
        if write:
            return self._analyst_write(query, params, force=force)
        if self._deferred:
            self.flush_deferred()
        import neo4j

        from graphmem.errors import CypherError
        from graphmem.store import analyst

        if not query or not query.strip():
            raise CypherError("the Cypher query is empty; pass a query such as 'MATCH (l:Learning) RETURN l.content'")
        analyst.check_text(query, write=False, force=False)
        toks = analyst.tokens(query)
        clause = {t.upper() for i, (kind, t) in enumerate(toks) if kind == "word" and (i == 0 or toks[i - 1] != ("other", "."))}
        if clause & _WRITE_CLAUSES:
            raise CypherError("this query writes to the graph; pass write=True (CLI: --write) if you mean it")
        check_db_params(params)
        timeout = None if timeout_ms is None else timeout_ms / 1000.0
        try:  # in a transaction that is always rolled back: a write the checks missed is undone
            with self._bolt.driver.session(database=self._bolt.database, default_access_mode=neo4j.READ_ACCESS) as s:
                tx = s.begin_transaction(timeout=timeout)
                try:
                    result = tx.run(query, dialect.to_wire(dict(params or {})))
                    keys = list(result.keys())
                    return [{k: dialect.from_wire(rec[k]) for k in keys} for rec in result]
                finally:
                    with suppress(Exception):
                        tx.rollback()
        except Exception as e:
            raise CypherError(f"query failed: {_message(e)}") from e

    def _analyst_write(self, query: str, params: Mapping[str, Any] | None, *, force: bool) -> list[dict[str, Any]]:
        """An analyst's write: the statement-kind gate of :mod:`graphmem.store.analyst` (no file,
        code or transaction control), one statement, no index or constraint change and no change to
        graphmem's Meta bookkeeping without ``force``; run in a store transaction (so it moves the
        shared write counter and other processes reload), rolled back on any refusal."""
        from graphmem.errors import CypherError, ReadOnlyError
        from graphmem.store import analyst

        if self.read_only:
            raise ReadOnlyError("this database was opened with read_only=True; writes are refused")
        if not query or not query.strip():
            raise CypherError("the Cypher query is empty; pass a query such as 'MATCH (l:Learning) RETURN l.content'")
        analyst.check_text(query, write=True, force=force)
        toks = analyst.tokens(query)
        if ("other", ";") in toks[:-1]:
            raise CypherError("pass a single Cypher statement")
        words = {t.upper() for kind, t in toks if kind == "word"}
        if not force and words & {"INDEX", "CONSTRAINT"} and words & {"CREATE", "DROP"}:
            raise CypherError("this query changes the database's indexes or constraints, which graphmem relies on; "
                              "pass force=True (CLI: --force) only if you know what graphmem needs")
        check_db_params(params)
        meta = f"MATCH (m:Meta) WHERE {_NOT_GEN} RETURN m.key AS k, m.value AS v ORDER BY k"
        try:
            with self.transaction():
                self._main.note(["*"])  # other processes rebuild their mirrors in full
                before = self._main._query(meta, {})
                rows = list(self._main._query(query, dialect.to_wire(dict(params or {}))))
                if not force and list(self._main._query(meta, {})) != list(before):
                    raise CypherError(
                        "this query changes graphmem's Meta bookkeeping (embedder, dimension, schema version), which "
                        "can make the database unopenable; rolled back. Pass force=True (CLI: --force) only to repair it on purpose")
        except CypherError:
            raise
        except StoreError as e:
            raise CypherError(f"Cypher failed: {e}") from e
        except BoltQueryError as e:
            raise CypherError(f"Cypher failed: {e}") from e
        return rows

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
