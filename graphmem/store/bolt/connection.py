"""One Bolt session as Kùzu's connection: statements translated from Kùzu's dialect, explicit
transactions, the shared write counter and change record written with each commit, and the replay
of a transaction the engine refused for a conflict.

:class:`BoltConnection` is what :class:`~graphmem.store.bolt.base.BoltBase` hands to KuzuBase's
code where that code expects a ``kuzu.Connection``; :class:`_Rows` is the part of Kùzu's
QueryResult graphmem reads.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from typing import Any

from graphmem.errors import StoreError
from graphmem.store.bolt import dialect
from graphmem.store.bolt import schema as bolt_schema
from graphmem.store.bolt.changes import GEN_SHARDS

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
                if self._tx is None and _transient(e) and attempt < self.retry.attempts:
                    # an auto-commit statement the engine refused for a conflict was not applied:
                    # run it again, on a fresh session
                    attempt += 1
                    self.retry.retried += 1
                    self._reset_after_error()
                    self.retry.wait(attempt)
                    continue
                if self._tx is not None and self.retry.retryable(e, self._log, cypher) and attempt < self.retry.attempts:
                    attempt += 1
                    if self._replay(attempt):  # the transaction so far again, then this statement
                        continue
                conflict = _transient(e) or (self._tx is not None and self.retry.retryable(e, self._log, cypher))
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
