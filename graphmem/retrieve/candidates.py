"""Candidate generation: who may be returned (filters), and three ranked candidate lists.

- :func:`eligible_mask`: vectorised filters over the catalog's columns (user, status with
  canary sampling, tier, superseded, TTL).
- :func:`vector_candidates`: exact cosine over the catalog's vector mirror (float32 or int8,
  graphmem/store/vectors.py), scanning only the eligible rows when they are few.
- :func:`fulltext_candidates`: BM25 over the catalog's in-memory lexical index (per-user statistics).
- :func:`graph_candidates`: one hop from the query's tool/entities/topics/objective type, then a
  capped, decayed second hop through RELATED entity/topic neighbours.
- :class:`NameIndex`: links entity and topic names written in the query text to graph nodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from graphmem.config import Settings
from graphmem.store.anchors import AnchorIndex
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
    if subset_below > 0 and eligible < subset_below * total:
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


@dataclass
class GraphHit:
    """A graph candidate: accumulated path weight and the paths that reached it."""

    weight: float = 0.0
    paths: list[str] = field(default_factory=list)


def graph_candidates(
    store: RetrievalStore,
    catalog: LearningCatalog,
    anchors: dict[str, list[str]],
    mask: np.ndarray,
    settings: Settings,
    linked: frozenset[tuple[str, str]] = frozenset(),
    pool: Sequence[str] = (),
    sims: np.ndarray | None = None,
    user: str | None = None,
) -> Mapping[int, GraphHit]:
    """Eligible rows reachable from the anchors, with path weights and readable paths.

    One hop (learning → tool/entity/topic/objective type named by the caller or in the query)
    weighs 1 per anchor reached. The second hop goes anchor entity/topic → co-occurring
    (RELATED) neighbour → learning, weighs ``graph_hop_decay``, uses at most
    min(``graph_fanout_cap``, ``graph_second_hop_neighbours``) neighbours (the heaviest) and at
    most ``graph_fanout_cap`` learnings from any one of them (the closest to the query when
    ``sims`` is given, else the best-scored). ``linked`` marks anchors found in the query text.
    ``user``: the second hop travels only over co-occurrences counted by that user's own
    learnings and the shared ones (never over another user's private associations).

    Runs over the catalog's in-memory mirror of the edges (graphmem/store/anchors.py), fully
    vectorised; explanations are built only for the rows kept: the best
    ``graph_anchor_cap`` by weight, cosine and online score, plus any reached row in ``pool``
    (ids the other signals found), so those still get the graph's support.
    """
    index = catalog.anchors
    n = len(catalog)
    if n == 0:
        return {}
    weight = np.zeros(n, dtype=np.float64)
    first: list[tuple[str, str]] = [
        (kind, name) for kind, names in anchors.items() for name in names if kind in ("tool", "entity", "topic", "objective_type")
    ]
    for anchor in first:
        rows = index.rows_of(anchor)
        if rows.size:
            weight[rows] += 1.0
    cap = settings.graph_fanout_cap
    decay = settings.graph_hop_decay
    second: list[tuple[tuple[str, str], tuple[str, str], np.ndarray]] = []
    related = [a for a in first if a[0] in ("entity", "topic")]
    if decay > 0 and cap > 0 and related:
        width = min(cap, settings.graph_second_hop_neighbours)
        order_key = sims if sims is not None else catalog.col("score")
        hop2 = np.zeros(n, dtype=np.float64)
        for neighbour, via, _w in index.neighbours(related, width, user):
            rows = index.rows_of(neighbour)
            rows = rows[mask[rows]]
            if rows.size > cap:
                rows = rows[np.argpartition(-order_key[rows], cap - 1)[:cap]]
            if rows.size:
                hop2[rows] += decay
                second.append((neighbour, via, rows))
        # With graph_second_hop_max a row counts its best two-hop path once: a learning linked to
        # many of an anchor's neighbours is central to the anchor's cluster, not closer to the query.
        weight += np.minimum(hop2, decay) if settings.graph_second_hop_max else hop2
    weight[~mask] = 0.0
    reached = np.flatnonzero(weight)
    if reached.size == 0:
        return {}
    keep_n = max(settings.graph_anchor_cap, settings.candidates_per_source)
    if reached.size > keep_n:
        cos = sims[reached] if sims is not None else np.zeros(reached.size)
        order = np.lexsort((-catalog.col("score")[reached], -cos, -weight[reached]))
        kept = np.zeros(n, dtype=bool)
        kept[reached[order[:keep_n]]] = True
        id_rows = catalog.vectors.rows
        extra = [r for r in (id_rows.get(i) for i in pool) if r is not None and weight[r] > 0]
        if extra:
            kept[extra] = True
    else:
        kept = weight > 0  # every reached row (weight is 0 outside ``mask``)
    return GraphHits(index, first, second, linked, kept, weight, decay)


class GraphHits(Mapping[int, GraphHit]):
    """The rows :func:`graph_candidates` kept → :class:`GraphHit`, built on first access.

    Ranking reads every row's weight (the ``weights`` array, no objects) but the paths of the
    few rows it explains only, so the per-row objects and path strings are made on demand (they
    cost ~2-3 ms per context() at 10k learnings when built for every reached row). A hit's
    weight and paths are the same as crediting each path once per row in order: the one-hop
    anchors first, then the second hops.
    """

    def __init__(
        self, index: AnchorIndex, first: list[tuple[str, str]],
        second: list[tuple[tuple[str, str], tuple[str, str], np.ndarray]], linked: frozenset[tuple[str, str]],
        kept: np.ndarray, weight: np.ndarray, decay: float,
    ) -> None:
        self._index = index
        self._first = first
        self._second = second
        self._linked = linked
        self._kept = kept
        self._decay = decay
        self._weight = weight
        self.rows = np.flatnonzero(kept & (weight > 0))
        self.weights = weight[self.rows]
        self._made: dict[int, GraphHit] = {}

    def __len__(self) -> int:
        return int(self.rows.size)

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows.tolist())

    def __contains__(self, row: object) -> bool:
        if not isinstance(row, (int, np.integer)) or not 0 <= int(row) < self._kept.shape[0]:
            return False
        return bool(self._kept[int(row)]) and bool(np.any(self.rows == int(row)))

    def __getitem__(self, row: int) -> GraphHit:
        made = self._made.get(int(row))
        if made is not None:
            return made
        if row not in self:
            raise KeyError(row)
        hit = GraphHit()
        for anchor in self._first:
            members = self._index.rows_of(anchor)
            if members.size and bool(np.any(members == row)):
                kind, name = anchor
                suffix = " (named in query)" if anchor in self._linked else ""
                _add_paths_one(hit, f"via {kind.replace('_', ' ')} {name}{suffix}", 1.0)
        for (nkind, nname), (vkind, vname), rows in self._second:
            if bool(np.any(rows == row)):
                _add_paths_one(hit, f"2 hops via {vkind} {vname} → {nkind} {nname}", self._decay)
        hit.weight = float(self._weight[int(row)])  # the ranked weight (second hops may count once)
        self._made[int(row)] = hit
        return hit


def _add_paths_one(hit: GraphHit, path: str, weight: float) -> None:
    """Credit ``weight`` and ``path`` to one hit (once per distinct path)."""
    if not hit.paths:
        hit.weight, hit.paths = weight, [path]
    elif path not in hit.paths:
        hit.weight += weight
        hit.paths.append(path)


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
