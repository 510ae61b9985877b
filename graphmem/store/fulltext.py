"""Kùzu's own full-text indexes (``learning_fts``, ``event_fts``), built only when read.

graphmem ranks with its in-memory lexical mirror (store/lexical.py), never with Kùzu's FTS
indexes; they are there for analysts (``CALL QUERY_FTS_INDEX`` in ``Memory.cypher``) and for
anything else reading the file. Kept up to date on every write, they cost ~160 ms of commit per
100 new rows and ~7 MB of a small file, so they are kept lazily instead:

- a new file has none (the schema files' ``CALL CREATE_FTS_INDEX`` statements are deferred);
- a query that needs them (``QUERY_FTS_INDEX`` or ``show_indexes``) builds the missing ones
  first, on the whole file (~0.7 s at 10k rows, ~1.5 s at 100k);
- the first write after that drops them again (~20 ms), so writes never maintain them.

An index that exists is therefore always current: Kùzu keeps it so while it exists.
:class:`FulltextIndexes` (a mixin of ``KuzuBase``) applies these rules to an open store.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import kuzu

from graphmem.errors import StoreError
from graphmem.store import migrations

if TYPE_CHECKING:
    from graphmem.store.locks import ReadWriteLock

_CREATE_FTS = re.compile(r"^CALL\s+CREATE_FTS_INDEX\s*\(\s*'(\w+)'\s*,\s*'(\w+)'", re.IGNORECASE)
_NEEDS = re.compile(r"\b(QUERY_FTS_INDEX|SHOW_INDEXES)\b", re.IGNORECASE)


def is_definition(statement: str) -> bool:
    """True for a schema statement that creates a full-text index (deferred until read)."""
    return _CREATE_FTS.match(statement.strip()) is not None


def definitions() -> list[tuple[str, str, str]]:
    """``(table, index, CALL statement)`` of every full-text index the schema files define.

    Built over existing rows, a Kùzu 0.11.3 index leaves out its default English stop words
    ("never", "after", ...); rows added to an existing index kept them. A custom (empty) stop-word
    table would avoid that, but Kùzu 0.11.3 cannot build such an index again after dropping it."""
    out = []
    for mig in migrations.available():
        for stmt in mig.statements(0):
            m = _CREATE_FTS.match(stmt)
            if m is not None:
                out.append((m.group(1), m.group(2), stmt))
    return out


def needed_by(cypher: str) -> bool:
    """True when ``cypher`` reads a full-text index or lists the indexes."""
    return _NEEDS.search(cypher) is not None


def present(conn: Any) -> set[tuple[str, str]]:
    """``(table, index)`` of the schema's full-text indexes that exist in the file."""
    result = conn.execute("CALL show_indexes() RETURN table_name, index_name")
    rows = result.get_all() if not isinstance(result, list) else result[-1].get_all()
    found = {(str(t), str(i)) for t, i in rows}
    return {(t, i) for t, i, _ in definitions() if (t, i) in found}


def build(conn: Any) -> int:
    """Create the schema's missing full-text indexes (auto-commit, outside any transaction);
    returns how many were created."""
    have = present(conn)
    made = 0
    for table, index, stmt in definitions():
        if (table, index) not in have:
            conn.execute(stmt)
            made += 1
    return made


def drop(conn: Any) -> int:
    """Drop the schema's full-text indexes that exist (auto-commit); returns how many."""
    gone = 0
    for table, index in sorted(present(conn)):
        conn.execute(f"CALL DROP_FTS_INDEX('{table}', '{index}')")
        gone += 1
    return gone


class FulltextIndexes:
    """When a store drops, builds and guards Kùzu's full-text indexes (a mixin of ``KuzuBase``)."""

    # class defaults for stores with their own __init__ (Bolt), which have no such index
    _fulltext_built = False
    _fulltext_readers = 0
    _fulltext_count = threading.Lock()

    if TYPE_CHECKING:  # provided by KuzuBase
        read_only: bool
        _lock: ReadWriteLock
        _conn_main: Any
        _tx_depth: int
        _side_lock: threading.Lock

    def _drop_fulltext(self) -> None:
        """Drop Kùzu's full-text indexes before a write (caller holds the lock exclusively,
        outside a transaction): writes never maintain them; a read that needs them rebuilds them."""
        if not self._fulltext_built or self.read_only or self._fulltext_readers:
            return  # (a query about to read them keeps them: this write maintains them instead)
        try:
            drop(self._conn_main)
        except RuntimeError as e:
            raise StoreError(f"could not drop the full-text indexes before a write: {e}") from e
        self._fulltext_built = False

    @contextmanager
    def _fulltext_ready(self, cypher: str) -> Iterator[None]:
        """Around a query: when it reads Kùzu's full-text indexes, build them first and keep
        them until it ends (a write meanwhile maintains them instead of dropping them)."""
        if not needed_by(cypher):
            yield
            return
        with self._fulltext_count:
            self._fulltext_readers += 1
        try:
            self._ensure_fulltext()
            yield
        finally:
            with self._fulltext_count:
                self._fulltext_readers -= 1

    def _ensure_fulltext(self) -> None:
        """Build Kùzu's full-text indexes if they are missing (analysts' ``QUERY_FTS_INDEX``
        and ``show_indexes`` call it first); the next write drops them again."""
        if self._fulltext_built or not isinstance(getattr(self, "_conn_main", None), kuzu.Connection):
            return
        if self.read_only:
            raise StoreError(
                "this file has no full-text index (graphmem builds Kùzu's FTS indexes only when a "
                "query needs them, and drops them at the next write): open it once without "
                "read_only=True and run the query, or close it with Settings.fulltext_index_at_close"
            )
        if self._lock.owned_shared() and not self._lock.owned_exclusive():
            raise StoreError("cannot build the full-text indexes inside a read snapshot; query outside it")
        with self._lock.exclusive():
            if self._fulltext_built:
                return
            if self._tx_depth:
                raise StoreError("cannot build the full-text indexes inside a write transaction; query after it")
            try:
                build(self._conn_main)
            except RuntimeError as e:
                raise StoreError(f"could not build the full-text indexes: {e}") from e
            self._fulltext_built = True

    def _fulltext_guard(self, cypher: str, *, always: bool = False) -> Any:
        """Kùzu 0.11 aborts the process when a full-text query overlaps a write: hold off the
        background writer's batch around one (``always``: around any query, for analysts' Cypher,
        which may call anything). Exclusive holders need nothing more."""
        if self._lock.owned_exclusive() or not (always or "QUERY_FTS_INDEX" in cypher.upper()):
            return nullcontext()
        return self._side_lock
