"""Raw Cypher over the whole file, made safe: a read-only query cannot write.

**Read-only queries** pass four gates, each enforced by Kùzu itself where it can be:

1. *Statement kind* (a small Cypher lexer that skips strings, comments and quoted names): the
   query must start with MATCH, OPTIONAL MATCH, UNWIND, WITH, RETURN or CALL of a catalog or
   search function, and must not use the clauses that reach outside the graph (COPY, LOAD FROM,
   EXPORT/IMPORT DATABASE, ATTACH, INSTALL, LOAD EXTENSION, USE) or control transactions
   (BEGIN, COMMIT, ROLLBACK, CHECKPOINT). This gate runs first because Kùzu touches the file
   system while it *binds* some of those statements (EXPORT creates the folder, LOAD FROM reads
   the file to guess its columns).
2. *One statement*: the query is prepared by Kùzu, which refuses strings with several statements
   (``"COMMIT; MATCH (n) DETACH DELETE n"``).
3. *The plan*: Kùzu's own physical plan (``EXPLAIN``) may only hold read operators, and its
   table functions must be catalog or search functions (``show_tables``, ``QUERY_FTS_INDEX``...):
   ``COPY_TO``, ``READ_CSV``, ``INSERT``, ``SET_PROPERTY``, ``DELETE``, ``MERGE`` and DDL are refused.
4. *A read-only transaction*: the prepared statement runs inside ``BEGIN TRANSACTION READ ONLY``,
   so Kùzu refuses any write that the gates above would have missed.

**Write queries** (``write=True``) pass the same gates with write operators allowed; DDL (CREATE/
DROP/ALTER TABLE) needs ``force=True``, and the query runs in a transaction that is rolled back
when it changed graphmem's ``Meta`` bookkeeping without ``force=True``.

The per-user view over these gates is in :mod:`graphmem.store.analyst`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

import kuzu

from graphmem.errors import CypherError, ReadOnlyError

if TYPE_CHECKING:
    from graphmem.store.connection import KuzuConnection

# --- gate 1: statement kind ---------------------------------------------------------------------
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*.*?\*/)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<quoted>`(?:[^`]|``)*`)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_READ_STARTS = frozenset({"MATCH", "OPTIONAL", "UNWIND", "WITH", "RETURN", "CALL"})
_WRITE_STARTS = _READ_STARTS | {"CREATE", "MERGE"}
_DDL_STARTS = frozenset({"DROP", "ALTER"})  # CREATE NODE/REL TABLE is caught by the plan
# Clauses that reach outside the graph or control transactions: refused anywhere, always.
_NEVER = frozenset(
    {"LOAD", "COPY", "EXPORT", "IMPORT", "ATTACH", "DETACH_DATABASE", "INSTALL", "USE",
     "BEGIN", "COMMIT", "ROLLBACK", "CHECKPOINT"}
)
# Table functions an analyst may CALL: catalog and search functions, which only read.
READ_FUNCTIONS = frozenset(
    {"SHOW_TABLES", "TABLE_INFO", "SHOW_CONNECTION", "SHOW_INDEXES", "CURRENT_SETTING",
     "DB_VERSION", "SHOW_WARNINGS", "QUERY_FTS_INDEX", "QUERY_VECTOR_INDEX"}
)
# --- gate 3: the plan ------------------------------------------------------------------------------
READ_OPERATORS = frozenset(
    {"RESULT_COLLECTOR", "PROJECTION", "SCAN_NODE_TABLE", "SCAN_REL_TABLE", "PRIMARY_KEY_SCAN_NODE_TABLE",
     "FILTER", "FLATTEN", "HASH_JOIN_BUILD", "HASH_JOIN_PROBE", "INTERSECT", "INTERSECT_BUILD",
     "CROSS_PRODUCT", "AGGREGATE", "AGGREGATE_FINALIZE", "AGGREGATE_SCAN", "ORDER_BY", "ORDER_BY_MERGE",
     "ORDER_BY_SCAN", "TOP_K", "TOP_K_SCAN", "LIMIT", "SKIP", "MULTIPLICITY_REDUCER", "UNION_ALL_SCAN",
     "UNWIND", "RECURSIVE_EXTEND", "PATH_PROPERTY_PROBE", "SEMI_MASKER", "DUMMY_SINK", "EMPTY_RESULT",
     "TABLE_FUNCTION_CALL"}
)
WRITE_OPERATORS = frozenset({"INSERT", "SET_PROPERTY", "DELETE", "MERGE"})
DDL_OPERATORS = frozenset({"CREATE_TABLE", "DROP", "ALTER"})
# Functions the plan itself uses to read intermediate results; not callable by name.
_PLAN_FUNCTIONS = frozenset({"READ_FTABLE"})
_OPERATOR = re.compile(r"│\s*([A-Z][A-Z_]*)\[\d+\]\s*│")
_FUNCTION = re.compile(r"Function:\s*([A-Za-z_][A-Za-z0-9_]*)")

_WRITE_HINT = "this query writes to the graph; pass write=True (CLI: --write) if you mean it"


def tokens(query: str) -> list[tuple[str, str]]:
    """The query's meaningful tokens as (kind, text): kinds word, string, quoted, other."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(query):
        m = _TOKEN.match(query, pos)
        if m is None or m.end() == pos:  # pragma: no cover - the pattern always matches a char
            raise CypherError("could not read the Cypher query")
        kind = m.lastgroup or "other"
        text = m.group()
        if kind == "other" and text in "'\"`":
            raise CypherError("the Cypher query has an unterminated string or quoted name; close it")
        if kind == "other" and query.startswith("/*", pos):
            raise CypherError("the Cypher query has an unterminated /* comment; close it")
        if kind not in ("ws", "line_comment", "block_comment"):
            out.append((kind, text))
        pos = m.end()
    return out


def check_text(query: str, *, write: bool, force: bool) -> None:
    """Gate 1: refuse statement kinds and clauses an analyst query may not use."""
    toks = tokens(query)
    words = [t for t in toks if t[0] == "word"]
    if not toks:
        raise CypherError("the Cypher query is empty; pass a query such as 'MATCH (l:Learning) RETURN l.content'")
    if toks[0][0] != "word":
        raise CypherError(f"the Cypher query starts with {toks[0][1]!r}; start it with MATCH, WITH, UNWIND, RETURN or CALL")
    first = toks[0][1].upper()
    allowed = _WRITE_STARTS if write else _READ_STARTS
    if first in _DDL_STARTS and write and not force:
        raise CypherError(
            f"{first} changes graphmem's schema and can break the file; pass force=True (CLI: --force) "
            "only if you know what graphmem needs"
        )
    if first not in allowed and not (write and force and first in _DDL_STARTS):
        if first in _NEVER or first in ("DETACH", "PROFILE", "EXPLAIN", "COMMENT"):
            raise CypherError(f"{first} statements are not allowed in analyst Cypher (only graph queries are)")
        if not write and first in ("CREATE", "MERGE", "DELETE", "DROP", "ALTER", "SET"):
            raise CypherError(_WRITE_HINT)
        raise CypherError(f"{first} statements are not allowed in analyst Cypher; start with MATCH, WITH, UNWIND, RETURN or CALL")
    for i, (kind, text) in enumerate(toks):
        if kind != "word":
            continue
        after_dot = i > 0 and toks[i - 1] == ("other", ".")
        upper = text.upper()
        if after_dot:
            continue  # a property name such as n.use
        if upper in _NEVER:
            raise CypherError(
                f"{upper} is not allowed in analyst Cypher: it reads or writes files, loads code or "
                "controls transactions; query the graph only"
            )
        if upper == "CALL":
            name = toks[i + 1][1].upper() if i + 1 < len(toks) and toks[i + 1][0] == "word" else ""
            has_paren = i + 2 < len(toks) and toks[i + 2] == ("other", "(")
            if name not in READ_FUNCTIONS or not has_paren:
                raise CypherError(
                    f"CALL {name or '...'} is not allowed in analyst Cypher; callable functions: "
                    + ", ".join(sorted(f.lower() for f in READ_FUNCTIONS))
                )
    del words


def plan(conn: kuzu.Connection, query: str, params: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """Gate 3's input: the operators and table functions of Kùzu's physical plan for ``query``."""
    result = conn.execute("EXPLAIN " + query, dict(params or {}))
    if isinstance(result, list):  # pragma: no cover - the query was prepared as one statement
        raise CypherError("pass a single Cypher statement")
    rows: list[Any] = list(result.get_all())
    text = "\n".join(str(next(iter(r))) for r in rows)
    return _OPERATOR.findall(text), [f.upper() for f in _FUNCTION.findall(text)]


def check_plan(operators: list[str], functions: list[str], *, write: bool, force: bool) -> None:
    """Gate 3: every operator and table function of the plan must be allowed."""
    if not operators:
        raise CypherError("this statement is not allowed in analyst Cypher (Kùzu gives it no query plan)")
    allowed = set(READ_OPERATORS)
    if write:
        allowed |= WRITE_OPERATORS
        if force:
            allowed |= DDL_OPERATORS
    for op in operators:
        if op in allowed:
            continue
        if op in WRITE_OPERATORS:
            raise CypherError(_WRITE_HINT)
        if op in DDL_OPERATORS and write:
            raise CypherError(
                "this query changes graphmem's schema and can break the file; pass force=True "
                "(CLI: --force) only if you know what graphmem needs"
            )
        raise CypherError(f"this query needs the operator {op}, which analyst Cypher does not allow (only graph reads and writes)")
    for fn in functions:
        if fn not in READ_FUNCTIONS and fn not in _PLAN_FUNCTIONS:
            raise CypherError(f"this query calls {fn}, which analyst Cypher does not allow (it reads files or changes the database)")


def prepare(conn: kuzu.Connection, query: str) -> Any:
    """Gate 2: Kùzu's prepared statement for ``query``; refuses several statements."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            stmt = conn.prepare(query)
        except RuntimeError as e:
            raise CypherError(f"Cypher failed: {first_line(e)}") from e
    if not stmt.is_success():
        msg = stmt.get_error_message()
        if "multiple statements" in msg:
            raise CypherError("pass one Cypher statement at a time (no ';' between statements)")
        raise CypherError(f"Cypher failed: {first_line(msg)}")
    return stmt


def _execute(conn: kuzu.Connection, stmt: Any, params: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        result = conn.execute(stmt, dict(params or {}))
    if isinstance(result, list):  # pragma: no cover - prepared statements are single
        raise CypherError("pass a single Cypher statement")
    names = result.get_column_names()
    return [dict(zip(names, row)) for row in result.get_all()]


def checked(conn: kuzu.Connection, query: str, params: Mapping[str, Any] | None, *, write: bool, force: bool) -> Any:
    """Gates 1-3 for ``query`` on ``conn``; returns the prepared statement."""
    check_text(query, write=write, force=force)
    stmt = prepare(conn, query)
    try:
        operators, functions = plan(conn, query, params)
    except RuntimeError as e:
        raise CypherError(f"Cypher failed: {first_line(e)}") from e
    check_plan(operators, functions, write=write, force=force)
    return stmt


def read_only(conn: kuzu.Connection, query: str, params: Mapping[str, Any] | None, *, in_transaction: bool) -> list[dict[str, Any]]:
    """Run ``query`` after the gates, inside a read-only transaction (gate 4) unless one is open."""
    stmt = checked(conn, query, params, write=False, force=False)
    if in_transaction:  # inside graphmem's own write transaction on this connection
        try:
            return _execute(conn, stmt, params)
        except RuntimeError as e:
            raise CypherError(f"Cypher failed: {first_line(e)}") from e
    try:
        conn.execute("BEGIN TRANSACTION READ ONLY")
    except RuntimeError as e:
        raise CypherError(f"Cypher failed: {first_line(e)}") from e
    try:
        rows = _execute(conn, stmt, params)
    except RuntimeError as e:
        rollback(conn)
        text = str(e).lower()
        if "read-only" in text or "read only" in text:
            raise CypherError(_WRITE_HINT) from e
        raise CypherError(f"Cypher failed: {first_line(e)}") from e
    except BaseException:
        rollback(conn)
        raise
    rollback(conn)  # nothing to commit: a read-only transaction
    return rows


def run(store: KuzuConnection, query: str, params: Mapping[str, Any] | None, *, write: bool, force: bool) -> list[dict[str, Any]]:
    """The body of :meth:`KuzuBase.cypher` (whole file): read-only unless ``write``."""
    if not query or not query.strip():
        raise CypherError("the Cypher query is empty; pass a query such as 'MATCH (l:Learning) RETURN l.content'")
    if not write:
        with store._lock.shared():  # never beside a write (full-text reads during one abort Kùzu)
            conn = store._conn()
            return read_only(conn, query, params, in_transaction=conn is store._conn_main)
    if store.read_only:
        raise ReadOnlyError("this database was opened with read_only=True; writes are refused")
    with store.exclusive():
        conn = store._conn_main
        stmt = checked(conn, query, params, write=True, force=force)
        outer = store._tx_depth > 0
        try:
            if not outer:
                conn.execute("BEGIN TRANSACTION")
            before = _meta(conn)
            rows = _execute(conn, stmt, params)
            if not force and _meta(conn) != before:
                raise CypherError(
                    "this query changes graphmem's Meta bookkeeping (embedder, dimension, schema "
                    "version), which can make the file unopenable; rolled back. Pass force=True "
                    "(CLI: --force) only to repair it on purpose"
                )
        except RuntimeError as e:
            if not outer:
                rollback(conn)
                store._settle_after_rollback()
            raise CypherError(f"Cypher failed: {first_line(e)}") from e
        except BaseException:
            if not outer:
                rollback(conn)
                store._settle_after_rollback()
            raise
        if not outer:
            try:
                conn.execute("COMMIT")
            except RuntimeError as e:
                raise CypherError(f"commit failed: {first_line(e)}") from e
        return rows


def _meta(conn: kuzu.Connection) -> list[tuple[str, str]]:
    result = conn.execute("MATCH (m:Meta) RETURN m.key, m.value ORDER BY m.key")
    if isinstance(result, list):  # pragma: no cover
        result = result[-1]
    return [(str(k), str(v)) for k, v in result.get_all()]


@contextmanager
def time_limit(conn: kuzu.Connection, timeout_ms: int | None) -> Iterator[None]:
    """Stop queries on ``conn`` that run longer than ``timeout_ms`` (None or 0: no limit)."""
    if not timeout_ms:
        yield
        return
    conn.set_query_timeout(int(timeout_ms))
    try:
        yield
    except CypherError as e:
        if "interrupt" in str(e).lower() or "timeout" in str(e).lower():
            raise CypherError(
                f"the query ran longer than {timeout_ms} ms and was stopped; narrow it "
                "(a WHERE, a LIMIT) or ask for a higher Settings.cypher_timeout_ms"
            ) from e
        raise
    finally:
        conn.set_query_timeout(0)


def rollback(conn: kuzu.Connection) -> None:
    """Roll back ``conn``'s open transaction, if any (an error doing so is ignored)."""
    with suppress(RuntimeError):
        conn.execute("ROLLBACK")


def first_line(e: Exception | str) -> str:
    """The first line of an error's text (Kùzu's messages run on), or its class name."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
