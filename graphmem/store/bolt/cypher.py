"""Analysts' Cypher on a Bolt store with ``scope="all"``: sent as it is, in the engine's own dialect.

Read-only queries refuse write clauses and run in a transaction that is always rolled back;
``write=True`` ones pass the statement-kind gate of :mod:`graphmem.store.analyst` and run in one
store transaction (so they move the shared write counter and other processes rebuild their
mirrors). Per-user queries do not come here: they run on an in-memory Kùzu view of the user's rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from graphmem.errors import StoreError
from graphmem.inputs import check_db_params
from graphmem.store.bolt import dialect
from graphmem.store.bolt.connection import _NOT_GEN, BoltConnection, BoltQueryError, _Driver, _message
from graphmem.store.kuzu_store import KuzuBase

#: clauses that write: refused in an analyst's read-only Cypher (which also runs in a rolled-back transaction)
_WRITE_CLAUSES = frozenset({"CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "FOREACH"})


class BoltCypher(KuzuBase):
    """:meth:`cypher` and its write path for :class:`BoltBase`."""

    _main: BoltConnection
    _bolt: _Driver

    def cypher(self, query: str, params: Mapping[str, Any] | None = None, *, write: bool = False,
               force: bool = False, timeout_ms: int | None = None) -> list[dict[str, Any]]:
        """An analyst's Cypher, sent as it is (the engine's own dialect): in a read-only session,
        or with ``write`` in one of the store's write transactions (see :meth:`_analyst_write`)."""
        if write:
            try:
                return self._analyst_write(query, params, force=force)
            finally:  # the event rows search keeps may have changed behind its back
                forget = getattr(self, "forget_event_rows", None)
                if forget is not None:
                    forget()
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
