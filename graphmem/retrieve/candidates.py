"""Candidate generation: who may be returned (filters), and three ranked candidate lists.

- :func:`eligible_mask`: vectorised filters over the catalog's columns (user, status with
  canary sampling, tier, superseded, TTL).
- :func:`vector_candidates`: exact cosine over the catalog's vector mirror (float32 or int8,
  graphmem/store/vectors.py), scanning only the eligible rows when they are few.
- :func:`fulltext_candidates`: BM25 over the catalog's in-memory lexical index (per-user statistics).
- :func:`graph_candidates` (graphmem/retrieve/graph.py, re-exported): one hop from the query's
  tool/entities/topics/objective type, then a capped, decayed second hop through RELATED
  entity/topic neighbours.
- :class:`NameIndex`: links entity and topic names written in the query text to graph nodes.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

import numpy as np

from graphmem.config import Settings
from graphmem.retrieve.graph import GraphHit as GraphHit  # re-exported: callers import them from here
from graphmem.retrieve.graph import GraphHits as GraphHits
from graphmem.retrieve.graph import graph_candidates as graph_candidates
from graphmem.store.catalog import STATUS_CODE, TIER_CODE, LearningCatalog
from graphmem.store.text import search_text
from graphmem.store.vectors import LazyCosine

if TYPE_CHECKING:
    from graphmem.store.retrieval import RetrievalStore

_ACTIVE = STATUS_CODE["active"]
_CANARY = STATUS_CODE["canary"]
_ARCHIVE = TIER_CODE["archive"]
_WORD = re.compile(r"[\w][\w'&.-]*", re.UNICODE)


class UserColumn:
    """Cached boolean columns "row belongs to user U", one per user, each rebuilt only when the
    catalog changed (a server answers many users in turn: one slot would be rebuilt each time)."""

    MAX_USERS = 256  # columns kept at most (all dropped past it)

    def __init__(self) -> None:
        self._cached: dict[str, tuple[tuple[object, ...], np.ndarray]] = {}

    def mask(self, catalog: LearningCatalog, user: str) -> np.ndarray:
        """True where the row's learning belongs to ``user``.

        The key and the mask are stored and read as one tuple, so threads sharing the cache
        (Memories for several users) never pair one catalog state with another's mask.
        """
        n = len(catalog)
        key = (id(catalog.user), catalog.generation, n, user)
        cached = self._cached.get(user)
        if cached is not None and cached[0] == key:
            return cached[1]
        mask = np.fromiter((u == user for u in catalog.user[:n]), dtype=bool, count=n)
        if len(self._cached) >= self.MAX_USERS:
            self._cached = {}
        self._cached[user] = (key, mask)
        return mask


def eligible_mask(
    catalog: LearningCatalog,
    user_rows: np.ndarray,
    now_ts: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Rows that may be returned now.

    The user's own learnings plus shared ones; status active, or canary when a draw from
    ``rng`` falls under its canary_allocation (seed 000); never shadow, candidate or disabled;
    tier not archive; not superseded; not past its TTL (expires_at > now).
    (:class:`Eligibility` gives the same mask from per-user rows kept between calls.)
    """
    n = len(catalog)
    if n == 0:
        return np.zeros(0, dtype=bool)
    status = catalog.col("status")
    mask = user_rows | (catalog.col("shared") > 0)
    mask &= catalog.col("tier") != _ARCHIVE
    mask &= catalog.col("superseded") == 0
    mask &= catalog.col("expires_at") > now_ts
    live = status == _ACTIVE
    canary = np.flatnonzero(mask & (status == _CANARY))
    if canary.size:  # draws in id order, so the same learnings are drawn whatever the storage order
        canary = _in_id_order(catalog, canary)
        draws = rng.random(canary.size)
        live[canary[draws < catalog.col("canary_allocation")[canary]]] = True
    return mask & live


def scan_rows(catalog: LearningCatalog, user_rows: np.ndarray) -> np.ndarray:
    """The rows :func:`eligible_mask` may return for the user at any time (own and shared
    learnings, active or canary, not archived, not superseded; the TTL and the canary draws
    are left to the mask), ascending: what the vector scan keeps gathered between calls."""
    if len(catalog) == 0:
        return np.zeros(0, dtype=np.int64)
    status = catalog.col("status")
    rows = user_rows | (catalog.col("shared") > 0)
    rows &= catalog.col("tier") != _ARCHIVE
    rows &= catalog.col("superseded") == 0
    rows &= (status == _ACTIVE) | (status == _CANARY)
    return np.flatnonzero(rows)


class _UserRows:
    """One user's standing eligibility: rows live whatever the clock and the draws say (own or
    shared, active, not archived, not superseded), the canary rows in id order, and the rows of
    either kind that carry a TTL (checked against the clock per call)."""

    __slots__ = ("canary", "canary_rows", "expiring", "key", "live", "n", "version", "views", "visible")

    def __init__(self) -> None:
        self.key: tuple[object, ...] = ()
        self.version = -1
        self.n = 0
        self.live = np.zeros(0, dtype=bool)
        self.canary = np.zeros(0, dtype=bool)
        self.canary_rows = np.zeros(0, dtype=np.int64)  # in id order
        self.expiring = np.zeros(0, dtype=np.int64)
        # anchor → (the anchor's rows array it was cut from, the rows of it this user may see)
        self.views: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self.visible: np.ndarray | None = None  # live or canary rows, ascending (scan_rows)


class Eligibility:
    """:func:`eligible_mask` from per-user rows kept between calls and patched after writes.

    The per-user part (owner or shared, status, tier, superseded, which rows have a TTL) is
    computed once per user and then patched with the rows the catalog logs as written
    (``LearningCatalog.written_since``); it is rebuilt only when rows moved or were reloaded
    (a delete, an open) or the log no longer reaches back. A call then costs one copy of the
    boolean row mask, the TTL check of the few rows that have one, and the canary draws (the
    same draws, in the same id order, as :func:`eligible_mask`, so a seeded Memory makes the
    same choices). At 1M learnings recomputing the mask cost ~28 ms per call.
    """

    MAX_USERS = 64  # users kept at most (all dropped past it)

    def __init__(self) -> None:
        self._users: dict[str, _UserRows] = {}
        self._lock = threading.Lock()  # Memories of several users may share a Retriever's state

    def mask(self, catalog: LearningCatalog, user: str, now_ts: float, rng: np.random.Generator) -> np.ndarray:
        """The rows ``user`` may be shown now (a fresh array the caller may keep)."""
        n = len(catalog)
        if n == 0:
            return np.zeros(0, dtype=bool)
        with self._lock:
            state = self._state(catalog, user)
            mask = state.live[:n].copy()
            canary, expiring = state.canary_rows, state.expiring
        if expiring.size:
            expires = catalog.col("expires_at")
            gone = expiring[~(expires[expiring] > now_ts)]
            if gone.size:
                mask[gone] = False
                if canary.size:
                    canary = canary[expires[canary] > now_ts]
        if canary.size:
            draws = rng.random(canary.size)
            mask[canary[draws < catalog.col("canary_allocation")[canary]]] = True
        return mask

    def visible(self, catalog: LearningCatalog, user: str) -> np.ndarray:
        """The rows ``user`` may ever be shown, ascending (what :func:`scan_rows` computes), kept
        until the user's rows change: the vector scan keeps these rows gathered between calls."""
        with self._lock:
            state = self._state(catalog, user)
            if state.visible is None:
                state.visible = np.flatnonzero(state.live[: state.n] | state.canary[: state.n])
            return state.visible

    MAX_VIEWS = 512  # anchors whose visible rows are kept per user (all dropped past it)

    def view(self, catalog: LearningCatalog, user: str, anchor: tuple[str, str]) -> np.ndarray:
        """The rows of ``anchor`` that ``user`` may ever be shown (own or shared, a live or
        canary status, not archived or superseded), ascending; kept until the anchor's rows or
        the user's rows change. The graph stage reads these instead of every linked row: another
        user's learnings are most of a busy anchor's rows."""
        rows = catalog.anchors.rows_of(anchor)
        with self._lock:
            state = self._state(catalog, user)
            held = state.views.get(anchor)
            if held is not None and held[0] is rows:
                return held[1]
            seen = rows[(state.live[: state.n] | state.canary[: state.n])[rows]] if rows.size else rows
            if len(state.views) >= self.MAX_VIEWS:
                state.views = {}
            state.views[anchor] = (rows, seen)
            return seen

    def _state(self, catalog: LearningCatalog, user: str) -> _UserRows:
        key = (id(catalog), id(catalog.user), catalog.layout)
        state = self._users.get(user)
        if state is not None and state.key == key:
            if state.version == catalog.version:
                return state
            written = catalog.written_since(state.version)
            if written is not None and len(written) <= max(64, len(catalog) // 8):
                self._patch(state, catalog, user, np.unique(np.asarray(written, dtype=np.int64)))
                return state
        if state is None and len(self._users) >= self.MAX_USERS:
            self._users = {}
        state = _UserRows()
        state.key = key
        n = len(catalog)
        own = np.fromiter((u == user for u in catalog.user[:n]), dtype=bool, count=n)
        state.live, state.canary = self._flags(catalog, own, slice(0, n))
        state.n, state.version = n, catalog.version
        self._derive(state, catalog)
        self._users[user] = state
        return state

    @staticmethod
    def _flags(catalog: LearningCatalog, own: np.ndarray, rows: slice | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        base = own | (catalog.col("shared")[rows] > 0)
        base &= catalog.col("tier")[rows] != _ARCHIVE
        base &= catalog.col("superseded")[rows] == 0
        status = catalog.col("status")[rows]
        return base & (status == _ACTIVE), base & (status == _CANARY)

    def _patch(self, state: _UserRows, catalog: LearningCatalog, user: str, rows: np.ndarray) -> None:
        n = len(catalog)
        if n > state.live.size:  # appended rows: grow by doubling, not per row
            size = max(n, 2 * state.live.size)
            for name in ("live", "canary"):
                grown = np.zeros(size, dtype=bool)
                old = getattr(state, name)
                grown[: old.size] = old
                setattr(state, name, grown)
        rows = rows[rows < n]
        was_canary = state.canary[rows].copy()
        own = np.fromiter((catalog.user[r] == user for r in rows.tolist()), dtype=bool, count=rows.size)
        live, canary = self._flags(catalog, own, rows)
        state.live[rows], state.canary[rows] = live, canary
        state.n, state.version = n, catalog.version
        state.views = {}
        state.visible = None
        finite = ~(catalog.col("expires_at")[rows] == np.inf)
        if was_canary.any() or canary.any() or finite.any() or state.expiring.size:
            self._derive(state, catalog)

    @staticmethod
    def _derive(state: _UserRows, catalog: LearningCatalog) -> None:
        n = state.n
        canary = np.flatnonzero(state.canary[:n])
        state.canary_rows = _in_id_order(catalog, canary) if canary.size else canary
        either = state.live[:n] | state.canary[:n]
        state.expiring = np.flatnonzero(either & ~(catalog.col("expires_at") == np.inf))


def _in_id_order(catalog: LearningCatalog, rows: np.ndarray) -> np.ndarray:
    """``rows`` sorted by their learnings' ids, remembered (in ``catalog.memo``) while the rows
    keep their ids (the catalog's generation) and the set is the same (sorting 10k canary ids
    costs ~5 ms at 1M learnings)."""
    key = ("id_order", catalog.generation, int(rows.size), hash(rows.tobytes()))
    cached = catalog.memo.get(key)
    if cached is None:
        cached = np.asarray(sorted(rows.tolist(), key=catalog.ids.__getitem__), dtype=np.int64)
        if len(catalog.memo) >= 64:
            catalog.memo.clear()
        catalog.memo[key] = cached
    return cached


def vector_candidates(
    catalog: LearningCatalog, query_vector: np.ndarray | None, mask: np.ndarray, n: int, subset_below: float = 0.0,
    ann_exact_below: int = 0, visible: np.ndarray | None = None, user: str | None = None,
    binary: tuple[int, int] = (0, 0),
) -> tuple[list[int], np.ndarray | None]:
    """Top-``n`` eligible rows by cosine, best first, and the cosine of every row (or None).

    When fewer than ``subset_below`` × all rows are eligible (another user's learnings are
    most of the store), only the eligible rows are scanned and the others get cosine 0: callers
    read ``sims`` at eligible rows only. When the mirror has its HNSW index (from
    ``Settings.vector_ann_min_rows`` rows) and at least ``ann_exact_below`` rows are eligible,
    the index proposes the candidates, they are reranked by exact cosine, and ``sims`` is a
    :class:`~graphmem.store.vectors.LazyCosine` (cosines computed for the rows read).
    ``visible`` (the rows ``user`` may ever see, a superset of ``mask``'s: a boolean mask or
    the row numbers, ascending): the scanned rows are these, kept gathered between calls
    (``ScanMatrix.cosine_block``); the cosines are the same.
    ``binary`` = (``Settings.vector_binary_min_rows``, ``Settings.vector_binary_candidates``):
    from that many rows on, a sign-bit pass over the same rows proposes that many candidates,
    rescored exactly (``ScanMatrix.binary_top``); ``sims`` is then a ``LazyCosine``.
    """
    if query_vector is None or len(catalog) == 0 or n <= 0:
        return [], None
    total = len(catalog)
    eligible = int(mask.sum())
    if catalog.vectors.ann_ready and eligible >= max(1, ann_exact_below):
        found = catalog.vectors.ann_search(query_vector, mask, n, eligible)
        if found is not None:
            cos = catalog.vectors.cosine(query_vector, found)
            order = np.argsort(-cos, kind="stable")[: min(n, eligible)]
            lazy = LazyCosine(catalog.vectors, query_vector, found, cos)
            return [int(found[i]) for i in order], lazy  # type: ignore[return-value]
    subset = subset_below > 0 and eligible < subset_below * total
    if 0 < binary[0] <= total and eligible > max(binary[1], n):
        seen = None if not subset else np.flatnonzero(mask) if visible is None or user is None else (
            np.flatnonzero(visible) if visible.dtype == bool else visible)
        found, cos = catalog.vectors.binary_top(query_vector, max(binary[1], n), mask, seen,
                                                None if visible is None or user is None else ("visible", user))
        return _top_rows(found, cos, min(n, eligible)), LazyCosine(catalog.vectors, query_vector, found, cos)  # type: ignore[return-value]
    if subset:
        sims = np.zeros(total, dtype=np.float32)
        if visible is not None and user is not None:
            seen = np.flatnonzero(visible) if visible.dtype == bool else visible
            cos = catalog.vectors.cosine_block(query_vector, seen, ("visible", user)) if seen.size else sims[:0]
            keep = mask[seen]
            rows, values = seen[keep], cos[keep]
        else:
            rows = np.flatnonzero(mask)
            values = catalog.vectors.cosine(query_vector, rows) if rows.size else sims[:0]
        sims[rows] = values  # the other rows keep cosine 0, as documented
    else:
        sims = catalog.vectors.cosine(query_vector)
        rows = np.flatnonzero(mask)
        values = sims[rows]
    return _top_rows(rows, values, min(n, eligible)), sims


def _top_rows(rows: np.ndarray, values: np.ndarray, k: int) -> list[int]:
    """The ``k`` rows of the highest values, best first; equal values: the lower row first."""
    if k <= 0 or rows.size == 0:
        return []
    if k < rows.size:
        kth = values[np.argpartition(-values, k - 1)[k - 1]]
        near = np.flatnonzero(values >= kth)  # the top k and every row tied with the k-th
        rows, values = rows[near], values[near]
    order = np.lexsort((rows, -values))[:k]
    return [int(r) for r in rows[order]]


def fulltext_terms(catalog: LearningCatalog, normalised: str, max_postings: int, user: str | None = None) -> list[str]:
    """The query terms the full-text signal uses, rarest first.

    Terms no learning ``user`` can see contains are dropped (they cannot match). Terms are kept
    rarest-first while their summed document frequency (over ``user``'s own plus shared
    learnings, so other users' volume does not change the choice) stays within
    ``max_postings`` (0: no limit): a query made only of very common words then returns no
    full-text candidates and is left to the vector and graph signals, as with Kùzu's index,
    where the cap bounded the cost (about 6 µs per posting).
    """
    lexical = catalog.lexical
    df = {t: lexical.doc_freq(t, user) for t in dict.fromkeys(normalised.split())}
    terms = [t for t, f in df.items() if f > 0]
    if max_postings <= 0:
        return terms
    kept, total = [], 0
    for term in sorted(terms, key=lambda t: df[t]):
        if total + df[term] > max_postings:
            break
        kept.append(term)
        total += df[term]
    return kept


def fulltext_candidates(
    catalog: LearningCatalog,
    query: str,
    user: str,
    mask: np.ndarray,
    n: int,
    max_postings: int = 0,
    settings: Settings | None = None,
) -> list[tuple[int, float]]:
    """Eligible rows matching the query's words (BM25), best first: (row, bm25 score).

    Runs over the catalog's in-memory lexical index (graphmem/store/lexical.py) with ``user``'s
    term statistics (own plus shared learnings), never Kùzu's FTS index; uses only the terms
    :func:`fulltext_terms` keeps; ``settings`` gives BM25's k1 and b.
    """
    terms = fulltext_terms(catalog, search_text(query), max_postings, user)
    if not terms or n <= 0:
        return []
    s = settings or Settings()
    return catalog.lexical.search(terms, user, n, mask, k1=s.bm25_k1, b=s.bm25_b)


class NameIndex:
    """Entity and topic names, lowercased, for linking names written in the query text.

    Loaded on first use (one query per label) and refreshed only when the catalogs grew since
    (a count query per label; reloaded when the count changed). Names passed to ``note`` (for
    example the caller's entities) are added at once.
    """

    MAX_WORDS = 4

    def __init__(self) -> None:
        self._names: dict[str, dict[str, str]] = {"entity": {}, "topic": {}}
        self._counts: dict[str, int] = {}
        self._generation: tuple[int, int, int] | None = None

    def refresh(self, store: RetrievalStore) -> None:
        """Reload from the graph if learnings or events were added (or a user or learning was
        forgotten) since the last look."""
        forgotten = int(getattr(store, "forgotten", 0))
        generation = (len(store.learning_catalog), len(store.event_catalog), forgotten)
        if generation == self._generation:
            return
        if self._generation is not None and self._generation[2] != forgotten:
            self._counts = {}  # names may have been deleted: reload them whatever the counts say
        for kind, label in (("entity", "Entity"), ("topic", "Topic")):
            count = store.count_nodes(label)
            if count != self._counts.get(kind):
                self._names[kind] = {n.lower(): n for n in store.node_names(label)}
                self._counts[kind] = count
        self._generation = generation

    def note(self, kind: str, names: list[str]) -> None:
        """Remember names known to exist (e.g. just written)."""
        table = self._names.setdefault(kind, {})
        for n in names:
            table.setdefault(n.lower(), n)

    def find(self, text: str) -> dict[str, list[str]]:
        """The entity and topic names that occur in ``text`` as whole words (case-insensitive)."""
        words = [w.strip(".'-").lower() for w in _WORD.findall(text)]
        words = [w[:-2] if w.endswith("'s") else w for w in words if w]
        found: dict[str, list[str]] = {"entity": [], "topic": []}
        if not words:
            return found
        for size in range(1, self.MAX_WORDS + 1):
            for i in range(len(words) - size + 1):
                phrase = " ".join(words[i : i + size])
                for kind, table in self._names.items():
                    name = table.get(phrase)
                    if name is not None and name not in found[kind]:
                        found[kind].append(name)
        return found
