"""Graph candidates: learnings reached from the query's anchors, with path weights and paths.

One hop from the query's tool/entities/topics/objective type, then a capped, decayed second hop
through RELATED entity/topic neighbours, over the catalog's in-memory edge mirror
(graphmem/store/anchors.py), on index arrays of the rows reached: each anchor reaches at most
``Settings.graph_max_reached`` eligible learnings, so a hub's cost does not follow its degree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from graphmem.config import Settings
from graphmem.store.anchors import AnchorIndex, members
from graphmem.store.catalog import LearningCatalog

if TYPE_CHECKING:
    from graphmem.store.retrieval import RetrievalStore


@dataclass
class GraphHit:
    """A graph candidate: accumulated path weight and the paths that reached it."""

    weight: float = 0.0
    paths: list[str] = field(default_factory=list)


class _Keys:
    """How the graph stage reads each row's order key: the query's cosine (a full array, or the
    lazy cosines of an HNSW search, of which the search's own candidates are known for free), or
    the online score when there is no query vector."""

    def __init__(self, catalog: LearningCatalog, sims: np.ndarray | None, mask: np.ndarray) -> None:
        self.mask = mask
        self.score = catalog.col("score")
        self.sims = sims
        self.full: np.ndarray | None = sims if isinstance(sims, np.ndarray) else None
        self.known = np.zeros(0, dtype=np.int64)
        self.share: float | None = None  # eligible share of all rows, counted when needed
        if sims is None:
            self.full = self.score
        elif self.full is None:
            known = getattr(sims, "known_rows", None)
            if callable(known):
                found = np.unique(np.asarray(known(), dtype=np.int64))  # ascending
                self.known = found[mask[found]]

    def warm(self, groups: list[np.ndarray]) -> None:
        """Score the rows of ``groups`` in one call (lazy cosines only; a no-op otherwise)."""
        if self.full is None and self.sims is not None:
            rows = [g for g in groups if g.size]
            if rows:
                self.sims[np.unique(np.concatenate(rows))]

    def key(self, rows: np.ndarray) -> np.ndarray:
        """The order key (cosine, or score without a query vector) of ``rows``."""
        if self.sims is None:
            return np.asarray(self.score[rows])
        return np.asarray(self.sims[rows], dtype=np.float64)

    def cos(self, rows: np.ndarray) -> np.ndarray:
        """The cosine of ``rows`` (zeros without a query vector)."""
        if self.sims is None:
            return np.zeros(rows.size)
        return np.asarray(self.sims[rows], dtype=np.float64)

    def reach(self, rows: np.ndarray, limit: int, fill: bool = True) -> np.ndarray:
        """The eligible rows among an anchor's ``rows`` (ascending), at most ``limit`` of them
        (0: all): the best by the order key. With lazy cosines the rows the vector search scored
        come first (nothing outside them is closer to the query), then, with ``fill``, the
        newest eligible rows (the highest row numbers, written last) up to ``limit`` (their
        cosines are computed later only where they decide), so the cost follows ``limit`` and
        never the anchor's degree."""
        if limit <= 0 or rows.size <= limit:
            return rows[self.mask[rows]]
        if self.full is not None:  # every key at hand: the exact best ``limit``
            eligible = rows[self.mask[rows]]
            if eligible.size <= limit:
                return eligible
            return eligible[np.argpartition(-self.full[eligible], limit - 1)[:limit]]
        found = self.known[members(rows, self.known)] if self.known.size else self.known  # ascending
        if found.size >= limit:
            return found[np.argpartition(-self.key(found), limit - 1)[:limit]]
        if not fill:
            return found
        parts, have, end = [found], found.size, rows.size
        step = max(256, 4 * (limit - have))
        while have < limit and end > 0:
            chunk = rows[max(0, end - step) : end][::-1]
            end -= step
            chunk = chunk[self.mask[chunk]]
            if found.size and chunk.size:
                chunk = chunk[~members(found, chunk)]
            chunk = chunk[: limit - have]
            parts.append(chunk)
            have += chunk.size
        return np.concatenate(parts)


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
    pool_rows: np.ndarray | None = None,
    rows_of: Callable[[tuple[str, str]], np.ndarray] | None = None,
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

    Runs over the catalog's in-memory mirror of the edges (graphmem/store/anchors.py) on index
    arrays of the rows reached, never on arrays of every row: each anchor (and each neighbour)
    reaches at most ``graph_max_reached`` eligible rows, its best by cosine (with an HNSW search,
    the rows it scored, then the newest), so a hub linked to most of a million learnings costs
    what a small anchor does; below that cap every eligible row is reached, exactly as without
    it. A reached row's weight counts every anchor it links to (binary searches in the anchors'
    sorted rows). Explanations are built only for the rows kept: the best ``graph_anchor_cap``
    by weight, cosine and online score, plus any reached row in ``pool`` (ids the other signals
    found; or their rows, ``pool_rows``), so those still get the graph's support. ``rows_of``:
    an anchor's rows the user may see (:meth:`Eligibility.view`; default: all its rows).
    """
    index = catalog.anchors
    n = len(catalog)
    if n == 0:
        return {}
    first: list[tuple[str, str]] = [
        (kind, name) for kind, names in anchors.items() for name in names if kind in ("tool", "entity", "topic", "objective_type")
    ]
    keys = _Keys(catalog, sims, mask)
    limit = max(0, settings.graph_max_reached)
    visible = rows_of or index.rows_of
    first_rows = [visible(a) for a in first]
    parts = [keys.reach(rows, limit) for rows in first_rows]
    cap = settings.graph_fanout_cap
    decay = settings.graph_hop_decay
    second: list[tuple[tuple[str, str], tuple[str, str], np.ndarray]] = []
    related = [a for a in first if a[0] in ("entity", "topic")]
    if decay > 0 and cap > 0 and related:
        width = min(cap, settings.graph_second_hop_neighbours)
        reached1 = np.unique(np.concatenate(parts)) if parts and keys.full is None else None
        chosen: list[tuple[tuple[str, str], tuple[str, str], np.ndarray, np.ndarray, int]] = []
        for neighbour, via, _w in index.neighbours(related, width, user):
            nb_rows = visible(neighbour)
            rows = keys.reach(nb_rows, max(limit, cap) if limit else 0, fill=False)
            extra, take = rows[:0], 0
            if reached1 is not None and limit and nb_rows.size > max(limit, cap) and rows.size < cap:
                extra, take = _first_hop_share(keys, nb_rows, rows, reached1, cap - rows.size)
            chosen.append((neighbour, via, rows, extra, take))
        # lazy cosines: every row the choices below and the ranking read (the first hop's rows
        # too) is scored in one call (each call of the int8 product has a fixed cost, which a
        # busy machine multiplies: ~10 ms of waiting for torch's pool per call under load)
        keys.warm([rows for _n, _v, rows, _e, _t in chosen if rows.size > cap] + [e for *_r, e, t in chosen if t]
                  + ([reached1] if reached1 is not None else []))
        for neighbour, via, rows, extra, take in chosen:
            if take:
                best = extra if take >= extra.size else extra[np.argpartition(-keys.key(extra), take - 1)[:take]]
                rows = np.union1d(rows, best)
            if rows.size > cap:
                rows = rows[np.argpartition(-keys.key(rows), cap - 1)[:cap]]
            if rows.size:
                rows = np.sort(rows)
                second.append((neighbour, via, rows))
                parts.append(rows)
    id_rows = catalog.vectors.rows
    pooled = np.fromiter((r for r in (id_rows.get(i) for i in pool) if r is not None), dtype=np.int64)
    if pool_rows is not None:
        pooled = np.concatenate([pooled, np.asarray(pool_rows, dtype=np.int64)])
    if pooled.size:
        parts.append(pooled[mask[pooled]])
    reached = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    if reached.size == 0:
        return {}
    weight = np.zeros(reached.size, dtype=np.float64)
    for rows in first_rows:
        weight += members(rows, reached)
    if second:
        hop2 = np.zeros(reached.size, dtype=np.float64)
        for _nb, _via, rows in second:
            hop2 += members(rows, reached)
        hop2 *= decay
        # With graph_second_hop_max a row counts its best two-hop path once: a learning linked to
        # many of an anchor's neighbours is central to the anchor's cluster, not closer to the query.
        weight += np.minimum(hop2, decay) if settings.graph_second_hop_max else hop2
    hit = weight > 0
    reached, weight = reached[hit], weight[hit]
    keep_n = max(settings.graph_anchor_cap, settings.candidates_per_source)
    if reached.size > keep_n:
        kept = _best_rows(reached, weight, keep_n, keys, limit)
        if pooled.size:
            kept |= members(np.unique(pooled), reached)
        reached, weight = reached[kept], weight[kept]
    return GraphHits(index, first, second, linked, reached, weight, decay)


def _first_hop_share(
    keys: _Keys, nb_rows: np.ndarray, found: np.ndarray, reached: np.ndarray, need: int,
) -> tuple[np.ndarray, int]:
    """For a hub neighbour with lazy cosines whose rows among the vector search's (``found``)
    are fewer than the cap: the rows the first hop ``reached`` that link the neighbour, and how
    many of the ``need`` closest rows still missing are expected among them (their share of the
    neighbour's eligible rows). The closest that many of them get the decay: a first-hop row is
    lifted about as often as when every cosine of the hub is computed, for the cosines of the
    reached rows only."""
    mine = reached[members(nb_rows, reached)]
    if found.size and mine.size:
        mine = mine[~members(found, mine)]
    if mine.size == 0 or need <= 0:
        return mine, 0
    if keys.share is None:
        keys.share = float(np.count_nonzero(keys.mask)) / max(1, keys.mask.size)
    expected = max(1.0, nb_rows.size * keys.share - found.size)
    return mine, min(int(mine.size), round(need * min(1.0, mine.size / expected)))


def _best_rows(rows: np.ndarray, weight: np.ndarray, k: int, keys: _Keys, limit: int) -> np.ndarray:
    """True at the best ``k`` of ``rows`` by weight, then cosine, then online score, then row.

    Cosines are read only in the weight class the cut falls in (every heavier row is kept);
    with lazy cosines at most ``limit`` of that class are scored (the rows the vector search
    scored first, then the newest), so a large class of equal weights costs ``limit`` cosines.
    """
    kept = np.zeros(rows.size, dtype=bool)
    levels = np.unique(weight)[::-1]
    above = 0
    for level in levels:
        at = np.flatnonzero(weight == level)
        if above + at.size <= k:
            kept[at] = True
            above += at.size
            if above == k:
                break
            continue
        need = k - above
        if limit > 0 and keys.full is None and keys.sims is not None and at.size > limit:
            known = members(keys.known, rows[at]) if keys.known.size else np.zeros(at.size, dtype=bool)
            rest = np.flatnonzero(~known)[::-1][: max(0, limit - int(known.sum()))]
            at = np.sort(np.concatenate([at[known], at[rest]]))
        cand = rows[at]
        keys.warm([cand, rows[kept]])  # the kept rows' cosines too: ranking reads them next, one call
        order = np.lexsort((cand, -keys.score[cand], -keys.cos(cand)))[:need]
        kept[at[order]] = True
        break
    return kept


class GraphHits(Mapping[int, GraphHit]):
    """The rows :func:`graph_candidates` kept → :class:`GraphHit`, built on first access.

    Ranking reads every row's weight (the ``weights`` array, no objects) but the paths of the
    few rows it explains only, so the per-row objects and path strings are made on demand (they
    cost ~2-3 ms per context() at 10k learnings when built for every reached row). A hit's
    weight and paths are the same as crediting each path once per row in order: the one-hop
    anchors first, then the second hops. ``rows`` are ascending, ``weights`` aligned with them.
    """

    def __init__(
        self, index: AnchorIndex, first: list[tuple[str, str]],
        second: list[tuple[tuple[str, str], tuple[str, str], np.ndarray]], linked: frozenset[tuple[str, str]],
        rows: np.ndarray, weights: np.ndarray, decay: float,
    ) -> None:
        self._index = index
        self._first = first
        self._second = second
        self._linked = linked
        self._decay = decay
        self.rows = rows
        self.weights = weights
        self._made: dict[int, GraphHit] = {}

    def __len__(self) -> int:
        return int(self.rows.size)

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows.tolist())

    def _position(self, row: object) -> int:
        if not isinstance(row, (int, np.integer)) or self.rows.size == 0:
            return -1
        i = int(np.searchsorted(self.rows, int(row)))
        return i if i < self.rows.size and int(self.rows[i]) == int(row) else -1

    def __contains__(self, row: object) -> bool:
        return self._position(row) >= 0

    def __getitem__(self, row: int) -> GraphHit:
        made = self._made.get(int(row))
        if made is not None:
            return made
        pos = self._position(row)
        if pos < 0:
            raise KeyError(row)
        one = np.asarray([int(row)], dtype=np.int64)
        hit = GraphHit()
        for anchor in self._first:
            if members(self._index.rows_of(anchor), one)[0]:
                kind, name = anchor
                suffix = " (named in query)" if anchor in self._linked else ""
                _add_paths_one(hit, f"via {kind.replace('_', ' ')} {name}{suffix}", 1.0)
        for (nkind, nname), (vkind, vname), rows in self._second:
            if members(rows, one)[0]:
                _add_paths_one(hit, f"2 hops via {vkind} {vname} → {nkind} {nname}", self._decay)
        hit.weight = float(self.weights[pos])  # the ranked weight (second hops may count once)
        self._made[int(row)] = hit
        return hit


def _add_paths_one(hit: GraphHit, path: str, weight: float) -> None:
    """Credit ``weight`` and ``path`` to one hit (once per distinct path)."""
    if not hit.paths:
        hit.weight, hit.paths = weight, [path]
    elif path not in hit.paths:
        hit.weight += weight
        hit.paths.append(path)
