"""Analyst Cypher per user: a per-user view that cannot leak.

The safety gates every raw query passes (statement kind, one statement, the plan, a read-only
transaction) are in :mod:`graphmem.store.cypher_gates`; this module runs a read-only query over
a private copy of what one user may see.

**The per-user view** (:func:`user_cypher`, :func:`user_graph`) copies what one user may see into
a private in-memory Kùzu database with graphmem's schema and runs the query there: the user's own
nodes (every table with a ``user_id``), shared learnings, the transitions of those learnings, the
verdicts of the user's traces, the judges, the vocabulary nodes (tools, topics, entities, objective
types) the user's nodes link to (by name only: their counters and dates are file-wide, so left
empty), the edges between copied nodes, and RELATED recounted from the copied learnings alone.
The query cannot see anything else, whatever it is, because nothing else is there. The copy costs
time proportional to the user's part of the file (~0.1-0.2 s for a small one); vector columns
are copied only for queries that name them, full-text indexes built only for queries that search.
"""

from __future__ import annotations

import importlib.util  # noqa: F401  -- Kùzu's COPY from pyarrow needs it imported first
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

import kuzu
import pyarrow as pa

from graphmem.errors import CypherError
from graphmem.store import migrations
from graphmem.store.cypher_gates import check_text, first_line, read_only, rollback, time_limit, tokens

if TYPE_CHECKING:
    from graphmem.store.connection import KuzuConnection

# --- the per-user view --------------------------------------------------------------------------
_VOCABULARY = ("Tool", "Topic", "Entity", "ObjectiveType")
_NOT_IN_USER_VIEW = frozenset({"RELATED"})
_REBUILD_ABOVE = 2000  # nodes: above this, emptying the view means creating it again


def _rows(conn: kuzu.Connection, query: str, params: Mapping[str, Any] | None = None) -> list[list[Any]]:
    result = conn.execute(query, dict(params or {}))
    if isinstance(result, list):  # pragma: no cover
        result = result[-1]
    return [list(r) for r in result.get_all()]


def _arrow_type(kuzu_type: str) -> pa.DataType:
    t = kuzu_type.upper()
    fixed = re.fullmatch(r"(FLOAT|DOUBLE)\[(\d+)\]", t)
    if fixed:
        return pa.list_(pa.float32() if fixed.group(1) == "FLOAT" else pa.float64(), int(fixed.group(2)))
    simple = {
        "STRING": pa.string(), "INT64": pa.int64(), "INT32": pa.int32(), "DOUBLE": pa.float64(),
        "FLOAT": pa.float32(), "BOOL": pa.bool_(), "BOOLEAN": pa.bool_(), "TIMESTAMP": pa.timestamp("us"),
        "STRING[]": pa.list_(pa.string()), "DATE": pa.date32(),
    }
    if t in simple:
        return simple[t]
    raise CypherError(f"the per-user view cannot copy properties of type {kuzu_type}")


class _Table:
    def __init__(self, name: str, columns: list[tuple[str, str, bool]]) -> None:
        self.name = name
        self.columns = columns  # (name, kuzu type, is primary key)

    @property
    def pk(self) -> str:
        return next(c[0] for c in self.columns if c[2])

    @property
    def names(self) -> list[str]:
        return [c[0] for c in self.columns]


def _schema(conn: kuzu.Connection) -> tuple[dict[str, _Table], dict[str, list[str]]]:
    nodes: dict[str, _Table] = {}
    rels: dict[str, list[str]] = {}
    for name, kind in _rows(conn, "CALL show_tables() RETURN name, type"):
        info = _rows(conn, f"CALL table_info('{name}') RETURN *")
        if kind == "NODE":
            nodes[name] = _Table(name, [(str(r[1]), str(r[2]), bool(r[4])) for r in info])
        elif kind == "REL":
            rels[name] = [str(r[1]) for r in info]
    return nodes, rels


def _predicate(table: str, columns: list[str], alias: str) -> str | None:
    """The Cypher condition for rows of ``table`` the user ($u) may see; None: no such rule."""
    if "user_id" not in columns:
        return None
    if table == "Learning" and "shared" in columns:
        return f"({alias}.user_id = $u OR {alias}.shared = true)"
    if table == "Judge":  # the user's judges and the built-in ones every user has
        return f"({alias}.user_id = $u OR {alias}.user_id IS NULL)"
    return f"({alias}.user_id = $u)"


def _select(conn: kuzu.Connection, table: _Table, user: str, *, vectors: bool) -> pa.Table | None:
    """The rows of ``table`` the user may see, as Arrow in the table's column order (vocabulary
    tables are handled by the edges: None). Without ``vectors``, vector columns are left NULL."""
    where = _predicate(table.name, table.names, "n")
    if where is not None:
        match = f"MATCH (n:{table.name}) WHERE {where}"
    elif table.name == "Transition":
        match = "MATCH (l:Learning)-[:HAS_TRANSITION]->(n:Transition) WHERE l.user_id = $u OR l.shared = true"
    elif table.name == "Verdict":
        match = "MATCH (t:Trace)-[:JUDGED]->(n:Verdict) WHERE t.user_id = $u"
    elif table.name in ("Meta", "Judge"):
        match = f"MATCH (n:{table.name})"
    else:
        return None
    skipped = {c for c, t, _ in table.columns if not vectors and _is_vector(t)}
    columns = ", ".join(f"n.`{c}` AS `{c}`" for c in table.names if c not in skipped)
    result = conn.execute(f"{match} RETURN {columns}", {"u": user} if "$u" in match else {})
    if isinstance(result, list):  # pragma: no cover
        result = result[-1]
    rows = result.get_as_arrow(chunk_size=1_000_000)
    if not skipped:
        return rows
    arrays = [
        pa.nulls(rows.num_rows, type=_arrow_type(t)) if c in skipped else rows.column(c)
        for c, t, _ in table.columns
    ]
    return pa.table(arrays, names=table.names)


def _is_vector(kuzu_type: str) -> bool:
    return re.fullmatch(r"(FLOAT|DOUBLE)\[\d+\]", kuzu_type.upper()) is not None


def _copy(conn: kuzu.Connection, table_name: str, arrays: dict[str, pa.Array], options: str = "") -> None:
    view_table = pa.table(arrays)  # noqa: F841 -- Kùzu scans the Python variable by name
    conn.execute(f"COPY {table_name} FROM view_table {options}")


class UserView:
    """A private in-memory database with graphmem's schema, refilled for one user at a time.

    Creating the schema and its full-text indexes costs ~0.5 s, so one view is kept per store
    and emptied before (and after) each use; its lock makes uses one at a time.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.lock = threading.Lock()
        self.size = 0  # nodes copied in by the last fill
        self.holds: tuple[str, int, bool, bool] | None = None  # (user, store generation, search, vectors)
        self._create()
        self.nodes, self.rels = _schema(self.conn)
        self.connections = {
            rel: [tuple(str(x) for x in r) for r in _rows(self.conn, f"CALL show_connection('{rel}') RETURN *")]
            for rel in self.rels
        }
        self.rel_columns = {
            rel: [(str(r[1]), str(r[2])) for r in _rows(self.conn, f"CALL table_info('{rel}') RETURN *")]
            for rel in self.rels
        }

    def _create(self) -> None:
        self.db = kuzu.Database(":memory:", max_db_size=1 << 34)  # a private view: 16 GiB of address space
        self.conn = kuzu.Connection(self.db)
        self.fts: list[str] = []  # full-text indexes are built only for queries that search
        for mig in migrations.available():
            for stmt in mig.statements(self.dim):
                if stmt.upper().startswith("CALL "):
                    self.fts.append(stmt)
                else:
                    self.conn.execute(stmt)

    def clear(self) -> None:
        """Remove every node, edge and index; refuse to go on if anything is left.

        Deleting rows one by one costs ~0.1 ms each in Kùzu, so a large view is dropped whole and
        the schema created again (~0.2 s) instead.
        """
        if self.size > _REBUILD_ABOVE:
            with suppress(RuntimeError):
                self.conn.close()
                self.db.close()
            self._create()
        else:
            for table, index in _rows(self.conn, "CALL show_indexes() RETURN table_name, index_name"):
                self.conn.execute(f"CALL DROP_FTS_INDEX('{table}', '{index}')")
            self.conn.execute("MATCH (n) DETACH DELETE n")
        self.size = 0
        self.holds = None
        left = _rows(self.conn, "MATCH (n) RETURN count(n)")[0][0]
        if left:  # pragma: no cover - DETACH DELETE removes everything
            raise CypherError("the per-user view could not be emptied; retry")

    def fill(self, source: kuzu.Connection, user: str, *, search: bool = False, vectors: bool = True) -> None:
        """Empty the view, then copy into it what ``user`` may see of ``source`` (with the
        full-text indexes when ``search``; vectors left NULL unless ``vectors``)."""
        self.clear()
        conn = self.conn
        kept: dict[str, set[Any]] = {}
        for name, table in self.nodes.items():
            if name in _VOCABULARY:
                continue
            rows = _select(source, table, user, vectors=vectors)
            if rows is None:
                continue
            kept[name] = set(rows.column(table.pk).to_pylist())
            self.size += rows.num_rows
            if rows.num_rows:
                _copy_table(conn, name, rows)
        vocab: dict[str, set[Any]] = {v: set() for v in _VOCABULARY if v in self.nodes}
        edges: dict[tuple[str, str, str], list[list[Any]]] = {}
        for rel, pairs_of_tables in self.connections.items():
            if rel in _NOT_IN_USER_VIEW:
                continue
            props = ", ".join(f"r.`{p}`" for p, _ in self.rel_columns[rel])
            for src, dst, src_pk, dst_pk in pairs_of_tables:
                if src not in kept:
                    continue  # edges out of vocabulary nodes are RELATED only
                where = _predicate(src, self.nodes[src].names, "a")
                q = (
                    f"MATCH (a:{src})-[r:{rel}]->(b:{dst})" + (f" WHERE {where}" if where else "")
                    + f" RETURN a.`{src_pk}`, b.`{dst_pk}`" + (f", {props}" if props else "")
                )
                found = []
                for row in _rows(source, q, {"u": user} if where else None):
                    if row[0] not in kept[src]:
                        continue
                    if dst in vocab:
                        vocab[dst].add(row[1])
                    elif row[1] not in kept.get(dst, ()):
                        continue
                    found.append(row)
                if found:
                    edges[(rel, src, dst)] = found
        for name, names in vocab.items():
            table = self.nodes[name]
            _copy_nodes(conn, table, [{table.pk: n} for n in sorted(names)])
        for (rel, src, dst), found in edges.items():
            arrays: dict[str, pa.Array] = {
                "from": pa.array([p[0] for p in found], type=pa.string()),
                "to": pa.array([p[1] for p in found], type=pa.string()),
            }
            for i, (col, type_) in enumerate(self.rel_columns[rel]):
                arrays[col] = pa.array([p[2 + i] for p in found], type=_arrow_type(type_))
            _copy(conn, rel, arrays, f"(from='{src}', to='{dst}')")
        self._relate(user)
        if search:
            for stmt in self.fts:
                conn.execute(stmt)

    def _relate(self, user: str) -> None:
        """RELATED recounted from the view's own learnings (the file's counts span every user)."""
        if "RELATED" not in self.rels:
            return
        anchors: dict[str, set[tuple[str, str]]] = {}
        q = "MATCH (l:Learning)-[:ABOUT_TOPIC|MENTIONS]->(x) RETURN l.id, label(x), x.name"
        for lid, label, name in _rows(self.conn, q):
            if label in ("Topic", "Entity"):
                anchors.setdefault(str(lid), set()).add((str(label), str(name)))
        counts: dict[tuple[tuple[str, str], tuple[str, str]], int] = {}
        for found in anchors.values():
            ordered = sorted(found)
            for i, a in enumerate(ordered):
                for b in ordered[i + 1 :]:
                    counts[(a, b)] = counts.get((a, b), 0) + 1
        by_labels: dict[tuple[str, str], list[tuple[str, str, int]]] = {}
        for (a, b), weight in counts.items():
            by_labels.setdefault((a[0], b[0]), []).append((a[1], b[1], weight))
        for (src, dst), rows in by_labels.items():
            arrays = {
                "from": pa.array([r[0] for r in rows], type=pa.string()),
                "to": pa.array([r[1] for r in rows], type=pa.string()),
                "weight": pa.array([r[2] for r in rows], type=pa.int64()),
            }
            if any(col == "user_id" for col, _ in self.rel_columns["RELATED"]):
                arrays["user_id"] = pa.array([user] * len(rows), type=pa.string())
            _copy(self.conn, "RELATED", arrays, f"(from='{src}', to='{dst}')")


def _copy_table(conn: kuzu.Connection, table_name: str, rows: pa.Table) -> None:
    view_table = rows  # noqa: F841 -- Kùzu scans the Python variable by name
    conn.execute(f"COPY {table_name} FROM view_table")


def _copy_nodes(conn: kuzu.Connection, table: _Table, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    arrays = {c: pa.array([r.get(c) for r in rows], type=_arrow_type(t)) for c, t, _ in table.columns}
    _copy(conn, table.name, arrays)


_VIEWS_LOCK = threading.Lock()


def _view_of(store: KuzuConnection) -> UserView:
    with _VIEWS_LOCK:
        view: UserView | None = getattr(store, "_graphmem_user_view", None)
        if view is None:
            view = UserView(store.dim)
            store._graphmem_user_view = view  # type: ignore[attr-defined]
        return view


@contextmanager
def user_view(
    store: KuzuConnection, user: str, *, search: bool = False, vectors: bool = True
) -> Iterator[kuzu.Connection]:
    """A connection to a private in-memory copy of what ``user`` may see.

    The copy is kept for the next query while the file has not changed (``store.generation``)
    and the same user asks; another user, a write, or a failed query empties it first.
    """
    if store._deferred:
        store.flush_deferred()
    view = _view_of(store)
    with store._lock.shared(), view.lock, store._side_lock:  # one consistent read of the file, no write beside it
        held = view.holds
        if held and held[:2] == (user, store.generation) and held[2] >= search and held[3] >= vectors:
            try:
                yield view.conn
            except BaseException:
                view.clear()
                raise
            return
        source = store._conn()
        own_tx = source is not store._conn_main
        try:
            if own_tx:
                source.execute("BEGIN TRANSACTION READ ONLY")  # one consistent snapshot to copy
            try:
                view.fill(source, user, search=search, vectors=vectors)
            finally:
                if own_tx:
                    rollback(source)
        except RuntimeError as e:
            with suppress(RuntimeError):
                view.clear()
            raise CypherError(f"building the per-user view failed: {first_line(e)}") from e
        view.holds = (user, store.generation, search, vectors)
        try:
            yield view.conn
        except BaseException:
            view.clear()
            raise


def user_cypher(
    store: KuzuConnection, user: str, query: str, params: Mapping[str, Any] | None = None, *, timeout_ms: int | None = None
) -> list[dict[str, Any]]:
    """Run a read-only ``query`` over ``user``'s view of the file (see the module docstring)."""
    if not query or not query.strip():
        raise CypherError("the Cypher query is empty; pass a query such as 'MATCH (l:Learning) RETURN l.content'")
    check_text(query, write=False, force=False)  # before the copy: no work for a refused query
    words = {text.upper() for kind, text in tokens(query) if kind in ("word", "quoted")}
    search = "QUERY_FTS_INDEX" in words
    vectors = bool(words & {"EMBEDDING", "`EMBEDDING`", "CENTROID", "`CENTROID`", "QUERY_VECTOR_INDEX"})
    with user_view(store, user, search=search, vectors=vectors) as conn, time_limit(conn, timeout_ms):
        return read_only(conn, query, params, in_transaction=False)


def user_graph(store: KuzuConnection, user: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The nodes and edges of ``user``'s view, as :meth:`AnalyticsStore.graph_nodes`/``graph_edges``."""
    from graphmem.store.analytics import graph_edges, graph_nodes

    with user_view(store, user, vectors=False) as conn:  # GraphML leaves vectors out anyway

        def read(query: str) -> list[dict[str, Any]]:
            result = conn.execute(query)
            if isinstance(result, list):  # pragma: no cover
                result = result[-1]
            names = result.get_column_names()
            return [dict(zip(names, row)) for row in result.get_all()]

        return graph_nodes(read), graph_edges(read)
