"""The fused score of event search over a large event mirror without passes over every event.

When the vector signal scanned a shortlist only (:mod:`graphmem.retrieve.event_shortlist`),
every event outside it has the cosine ``OUTSIDE`` (below the mean: no vector signal), and the
other signals are zero on most events: BM25 on its hits, the entity signals on the events
linked to or naming a query entity, the date on a session's turns (the soft term signal is
nonzero anywhere, so with it the plain fusion is the way; it applies to small users only,
``search_terms_max_events``). The plain fusion
(:meth:`graphmem.retrieve.search.EventSearch._score`) still spends a few dozen passes over an
array of one value per event (~30 ms at a million events). Here:

- the terms that are zero outside the *support* (the scanned events, the entity, mention,
  tool, date and address signals' events, and the session neighbours of the events with a
  base score) are computed on the support only, in the same order as the plain fusion;
- every other event's score is the same expression of its time flag and turn priors alone
  (``((time + length) - question)``), computed once per layout and weights and kept
  (:func:`prior_scores`).

Adding a zero changes no value, so each event's score is the plain fusion's bit for bit
(``tests/test_event_score.py`` compares both). None when the plain fusion is the way: the
rank fusion, the session relevance signal, the soft term signal, or every event scanned.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphmem.config import Settings
from graphmem.retrieve.event_arrays import _BLOCKED_TOP_MIN, RankOf, Scores, known_zero, top_candidates, top_k
from graphmem.retrieve.event_rank import weighted_sum
from graphmem.retrieve.sparse_arrays import Overlay, Scattered
from graphmem.store.search import EventLayout

OUTSIDE = -1.0  # the cosine the shortlist gives the events it did not scan (event_shortlist.OUTSIDE)


class RankAmong(RankOf):
    """:class:`RankOf` of the positions ``at`` (ascending) with the scores ``values`` (aligned):
    the rank among every event for a position whose score is above all the scores left out
    (the vector signal's hits are above the mean, the events left out below it); ``inf`` for
    a position not in ``at``."""

    def __init__(self, values: np.ndarray, at: np.ndarray) -> None:
        super().__init__(values, np.ones(at.size, dtype=bool))
        self.at = at

    def __getitem__(self, i: int) -> float:
        j = int(np.searchsorted(self.at, i))
        if j >= self.at.size or self.at[j] != i:
            return float("inf")
        return super().__getitem__(j)


def prior_scores(layout: EventLayout, sig: Any, settings: Settings, timed: bool) -> tuple[np.ndarray, float]:
    """Per event, the fused score of an event no other signal names: its time bonus (``timed``:
    the question asks *when*) plus the turn priors, in the plain fusion's order; and the largest
    of them. Kept on the layout until the next write (the turn priors' mean moves) or other
    weights (one entry for questions asking *when*, one for the others: searches alternate
    between them)."""
    s = settings
    key = ("prior_scores", timed, s.search_weight_time, s.search_weight_length, s.search_weight_question_turn,
           sig.length is not None)
    name = "prior_scores_timed" if timed else "prior_scores"
    got = layout.derived.get(name)
    n = len(layout)
    if got is not None and got[0] == key and got[1].shape[0] == n:
        return got[1], got[2]
    own = np.zeros(n)
    if timed:
        own = own + s.search_weight_time * sig.temporal
    if sig.length is not None and sig.asks is not None:
        own = own + s.search_weight_length * sig.length - s.search_weight_question_turn * sig.asks
    top = float(own.max(initial=-np.inf))
    layout.derived[name] = (key, own, top)
    return own, top


def _placed(w: np.ndarray, at: np.ndarray, values: np.ndarray) -> np.ndarray:
    """An array aligned with the ascending positions ``w``: ``values`` where ``w`` holds the
    positions ``at`` (ascending, every one in ``w``), 0 elsewhere."""
    out = np.zeros(w.size)
    out[np.searchsorted(w, at)] = values
    return out


def _shares(
    neighbours: np.ndarray, lifted: np.ndarray, base: np.ndarray, decay: float
) -> tuple[np.ndarray, np.ndarray]:
    """The share of their base score the events at ``lifted`` (``base``: theirs, nonzero) hand
    to their session neighbours: per neighbour found, its position and the share (the base
    times ``decay`` per turn of distance beyond the first). An event's neighbour bonus is the
    largest share it receives; the neighbour columns are symmetric (``y`` is ``x``'s neighbour
    before iff ``x`` is ``y``'s neighbour after), so this is the plain fusion's largest share
    over an event's own neighbours, read from the few lifted events instead of every event."""
    rows = neighbours[lifted]
    to, share = [], []
    for d in range(rows.shape[1]):
        col = rows[:, d]
        found = col >= 0
        factor = decay ** (d // 2)
        to.append(col[found])
        share.append(base[found] * factor if factor != 1.0 else base[found])
    if not to:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.concatenate(to), np.concatenate(share)


def sparse_score(
    sig: Any, neighbours: np.ndarray, layout: EventLayout, settings: Settings
) -> tuple[Overlay, dict[str, Any]] | None:
    """``(final, parts)`` as :meth:`graphmem.retrieve.search.EventSearch._score` returns them,
    from the support only (see the module docstring), ``final`` as an :class:`Overlay` of the
    kept prior scores; None when the plain fusion is the way."""
    s = settings
    scanned = sig.scanned
    n = sig.dense.shape[0]
    if scanned is None or sig.dense_stats is None or s.search_fusion != "score" or n < 2:
        return None
    if (sig.session_sim is not None and s.search_weight_session > 0) or scanned.size >= n:
        return None
    terms = getattr(sig, "terms", None)  # soft term matching: nonzero beyond the support
    if terms is not None and s.search_weight_terms > 0 and bool(terms.any()):
        return None
    a = s.search_weight_stripped
    blended = sig.stripped is not None and a > 0
    mean, std = sig.dense_stats
    outside = (1.0 - a) * OUTSIDE + a * OUTSIDE if blended else OUTSIDE
    if not (outside - mean) / (std or 1.0) <= 0:  # the events left out would have a vector signal
        return None
    p = scanned
    dense_p = (1.0 - a) * sig.dense[p] + a * sig.stripped[p] if blended else sig.dense[p]
    v_p = np.clip((dense_p - mean) / (std or 1.0), 0.0, None) / 4.0
    bm_p = sig.bm25[p]  # the BM25 hits are scanned (event_shortlist.py)
    top = max(float(bm_p.max(initial=0.0)), 0.0)
    t_p = bm_p / top if top > 0 else np.zeros(p.size)
    base_p = s.search_weight_vector * v_p + s.search_weight_fulltext * t_p
    peak = max(float(base_p.max(initial=0.0)), 0.0)  # the events left out have a base of 0
    if peak > 0:
        base_p = base_p / peak
    # the support: every event where a term other than the time flag and the turn priors is nonzero
    graph_terms = [(w, x) for w, x in ((s.search_weight_entity, sig.entity), (s.search_weight_mention, sig.mention),
                                       (s.search_weight_tool, sig.tool)) if w != 0]
    timed = s.search_weight_time != 0 and not known_zero(sig.temporal, layout) and bool(sig.temporal.any())
    named = sig.named_at  # (when known) the only positions the entity, mention, tool and address signals are nonzero at
    address = sig.address is not None and s.search_weight_address > 0 and bool(
        (sig.address if named is None else sig.address[named]).any())
    dated = s.search_weight_date != 0 and not known_zero(sig.date, layout)
    keep = np.zeros(n, dtype=bool)
    keep[p] = True
    if named is not None:
        keep[named] = True
    else:
        for _, x in graph_terms:
            keep |= x != 0
        if address:
            keep |= sig.address != 0
    if dated:
        keep[np.flatnonzero(sig.date)] = True
    lifted = base_p != 0  # (of p) their neighbours get a share of their base score
    use_near = s.search_weight_neighbour > 0 and neighbours.size > 0
    to, share = (_shares(neighbours, p[lifted], base_p[lifted], s.search_neighbour_decay) if use_near
                 else (np.zeros(0, dtype=np.int64), np.zeros(0)))
    keep[to] = True
    w = np.flatnonzero(keep)
    # on the support: the plain fusion's expression, term by term (a term all zero on the
    # support but not elsewhere only adds zeros here); the signals nonzero at few positions
    # (the base at the scanned ones, the entity signals at the named ones) are read there and
    # placed, not gathered at every position of the support
    base_w = _placed(w, p, base_p)
    if named is not None:
        graph_named = weighted_sum(*((wt, x[named]) for wt, x in graph_terms))
        graph = None if graph_named is None else _placed(w, named, graph_named)
    else:
        graph = weighted_sum(*((wt, x[w]) for wt, x in graph_terms))
    time = weighted_sum((s.search_weight_time, sig.temporal[w] if timed else np.zeros(w.size)),
                        (s.search_weight_date, sig.date[w] if dated else np.zeros(w.size)))
    own = base_w if graph is None else base_w + graph
    if time is not None:
        own = own + time
    if address:
        own = own - s.search_weight_address * (sig.address[w] if named is None else _placed(w, named, sig.address[named]))
    if sig.length is not None and sig.asks is not None:
        own = own + s.search_weight_length * sig.length[w] - s.search_weight_question_turn * sig.asks[w]
    near_w = np.zeros(w.size)
    if to.size:
        np.maximum.at(near_w, np.searchsorted(w, to), share)
    prior, prior_top = prior_scores(layout, sig, s, timed)
    final = Overlay(prior, prior_top, w, own + s.search_weight_neighbour * near_w)
    bm_at = np.flatnonzero(bm_p > 0)
    # the parts the hits' reasons read at a few positions: zero off the scanned events (vector,
    # fulltext) and off the support (near)
    v, t, near = Scattered(n, p, v_p), Scattered(n, p, t_p), Scattered(n, w, near_w)
    return final, {"vector": v, "fulltext": t, "base": Scattered(n, p, base_p), "near": near,
                   "dense_rank": RankAmong(dense_p, p), "bm_rank": RankAmong(bm_p[bm_at], p[bm_at])}


class Ranked:
    """The final scores of event search while the later signals add to them (second hop, word
    and embedding feedback, continuation), with the positions that can be among the best kept
    aside: each signal asks for the best few (its seeds) and the top ``k`` come last, and a
    pass over every event for each (a partition of a million values: ~5-15 ms) is not needed.

    The kept pool holds every position scoring at least ``floor``, a value at most the
    ``size``-th best when the pool was taken (so at least ``size`` positions). Additions are
    nonnegative and their positions join the pool, so a position outside it still scores below
    ``floor``, below the ``size`` best of the pool: the best ``k <= size`` are the pool's best,
    ties in position order as :func:`graphmem.retrieve.event_arrays.top_k` orders them. On
    arrays shorter than top_k's own crossover (``_BLOCKED_TOP_MIN``) no pool is kept: each call
    looks at every value, which is cheaper there."""

    def __init__(self, values: Scores, size: int) -> None:
        self.values: np.ndarray | Overlay = values if isinstance(values, Overlay) else np.asarray(values)
        # below top_k's own crossover a partition of every value is cheaper than the pool
        # (an Overlay finds its pool among its own positions: kept at any length)
        long = values.shape[0] >= _BLOCKED_TOP_MIN or isinstance(values, Overlay)
        self.size = max(int(size), 1) if long else 0
        self._pool: np.ndarray | None = None
        self._floor = -np.inf

    def dense(self) -> np.ndarray:
        """The values as an array of every position (an :class:`Overlay` is made one, once)."""
        if isinstance(self.values, Overlay):
            self.values = np.asarray(self.values)
        return self.values

    def _take(self) -> np.ndarray:
        if self._pool is None:
            got = self.values.best(self.size) if isinstance(self.values, Overlay) else None
            self._pool, self._floor = got if got is not None else top_candidates(self.dense(), self.size)
        return self._pool

    def at_least(self, floor: float) -> np.ndarray:
        """The positions scoring at least ``floor``, ascending."""
        if self._pool is not None and floor >= self._floor:
            pool = self._pool
            return pool[self.values[pool] >= floor]  # type: ignore[no-any-return]
        values = self.values
        if isinstance(values, Overlay) and floor > values.prior_top:
            return values.at[values.values >= floor]
        return np.flatnonzero(self.dense() >= floor)

    def top(self, k: int) -> np.ndarray:
        """The first ``k`` of ``np.argsort(-values, kind="stable")``."""
        if k > self.size:
            return top_k(self.dense(), k)
        pool = self._take()
        return pool[np.argsort(-self.values[pool], kind="stable")[:k]]  # type: ignore[no-any-return]

    def add(self, positions: np.ndarray, amounts: np.ndarray | float) -> None:
        """``values[positions] += amounts`` (distinct positions, nonnegative amounts)."""
        if positions.size == 0:
            return
        if isinstance(self.values, Overlay):
            self.values.add(positions, amounts)
        else:
            self.values[positions] = self.values[positions] + amounts
        if self._pool is not None:
            self._pool = np.union1d(self._pool, positions)

    def replace(self, values: np.ndarray) -> None:
        """New values at every position (a signal that changed every event's score)."""
        self.values, self._pool, self._floor = values, None, -np.inf
