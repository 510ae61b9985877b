"""Embedding feedback (Rocchio) at scale without a second scan of every event.

The event search's embedding feedback (:meth:`graphmem.retrieve.search.EventSearch._rocchio`)
gives every event its cosine to a second vector (the query plus the best hits' centroid),
z-scored over the other events. Done plainly that is a second pass over the whole int8 event
mirror per query, as costly as the first one. But only the events that can still reach the
returned top ``k`` need their cosine:

- the mean and spread of the cosines over all events come from sums kept between queries (per
  user, on the layout, grown with each write): with ``x_e`` the event's dequantised row and
  ``u`` the (dequantised) query, ``sum_e x_e . u = S . u`` and ``sum_e (x_e . u)^2 = u' M u``
  with ``S = sum_e x_e`` and ``M = sum_e x_e x_e'``;
- the feedback only adds (a z-score clipped at 0), so an event whose score before it, plus
  the largest feedback any event can get (the cosine bound ``max |x_e| |u|``), stays below the
  ``k``-th best score before it, cannot reach the top ``k``. The others (the candidates) are
  scanned, with the same int8 arithmetic as the full scan (the same cosines, bit for bit).

The top ``k`` is then the one the full scan gives, up to float rounding of the mean and spread
(sums in another order: ~1e-9 relative). Only for int8 mirrors from ``PRUNE_MIN_EVENTS`` events
on: float32 mirrors (a conversation's few hundred events) take the plain scan, unchanged.
Events that cannot reach the top get 0 feedback in the returned array.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from graphmem.retrieve.event_arrays import Scores, top_k
from graphmem.retrieve.sparse_arrays import Scattered
from graphmem.store.vectors import quantise, scan_cosines, unit_rows

PRUNE_MIN_EVENTS = 20_000  # fewer events: the plain scan (cheap, and float32 below 50,000 events)
SYNC_ROWS = 4_096  # rows a query adds to the kept sums itself at most; more: a background thread
_CHUNK = 8_192  # rows dequantised at a time while the sums grow (one shared hold of the store each)
_MAX_CANDIDATES = 0.25  # beyond this share of the events, one full scan is cheaper


class ScanStats:
    """Sums over one layout's rows of the event mirror: ``s`` (sum of rows), ``m`` (sum of outer
    products), ``peak`` (largest row norm), for the first ``count`` positions. Valid while the
    mirror only grew since (checked by its ``version``: one bump per row written). The first
    sums of a large layout (a few seconds of CPU per 100,000 events) grow on a background thread, a
    chunk per shared hold of the store; queries take the plain scan meanwhile."""

    def __init__(self, dim: int) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.s = np.zeros(dim, dtype=np.float64)
        self.m = np.zeros((dim, dim), dtype=np.float64)
        self.peak = 0.0
        self.version = -1  # the mirror's version and length when the sums were last grown
        self.length = 0
        self.thread: threading.Thread | None = None

    def grow(self, vectors: Any, rows: np.ndarray, budget: int) -> bool:
        """Add the positions from ``count`` on (at most ``budget`` of them; the caller holds
        ``lock`` and the store shared); True when the sums cover every position of ``rows``.
        Starts over when a row changed in place."""
        if self.version >= 0 and vectors.version - self.version != len(vectors) - self.length:
            self.count, self.peak = 0, 0.0  # a row was replaced, moved or re-encoded
            self.s[:] = 0.0
            self.m[:] = 0.0
        stop = min(rows.shape[0], self.count + max(budget, 0))
        for start in range(self.count, stop, _CHUNK):
            x = vectors.vectors_of(rows[start : min(stop, start + _CHUNK)]).astype(np.float64)
            self.s += x.sum(axis=0)
            self.m += x.T @ x  # float64: float32 sums drift by ~1e-6, the spread by more
            self.peak = max(self.peak, float(np.sqrt(np.einsum("ij,ij->i", x, x)).max(initial=0.0)))
        self.count = stop
        self.version, self.length = vectors.version, len(vectors)
        return self.count >= rows.shape[0]

    def _background(self, store: Any, vectors: Any, layout: Any) -> None:
        """Grow the sums chunk by chunk, each under one shared hold of the store (a bounded loop:
        it ends when they cover the layout, or gives up after many restarts or on an error)."""
        try:
            for _ in range(100_000):
                with store.snapshot(), self.lock:
                    if self.grow(vectors, layout.rows, _CHUNK):
                        return
        except Exception:  # the store closed meanwhile: queries keep the plain scan
            return

    def ready(self, store: Any, vectors: Any, layout: Any) -> bool:
        """True when the sums cover the layout (grown here by a few rows after writes); else
        the background thread is started and False returned. The caller holds the store shared."""
        if not self.lock.acquire(blocking=False):
            return False  # the background thread is adding a chunk
        try:
            consistent = self.version < 0 or vectors.version - self.version == len(vectors) - self.length
            missing = len(layout) - self.count
            if consistent and missing <= SYNC_ROWS:
                return self.grow(vectors, layout.rows, missing)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._background, args=(store, vectors, layout),
                                               name="graphmem-event-sums", daemon=True)
                self.thread.start()
            return False
        finally:
            self.lock.release()


def _stats(store: Any, layout: Any, vectors: Any) -> ScanStats | None:
    """The layout's kept sums, grown to its current length (None while still incomplete)."""
    stats: ScanStats | None = layout.derived.get("rocchio_stats")
    if stats is None:
        stats = layout.derived.setdefault("rocchio_stats", ScanStats(vectors.dim))
        layout.keep_on_append.add("rocchio_stats")  # positions never move: grown on the next query
    return stats if stats.ready(store, vectors, layout) else None


def weighted_sum(*terms: tuple[float, np.ndarray]) -> np.ndarray | None:
    """``w1 * a1 + w2 * a2 + ...`` in that order, leaving out the terms whose weight or array is
    all zero (the same values: adding zeros changes none); None when every term is left out."""
    out: np.ndarray | None = None
    for weight, values in terms:
        if weight == 0 or not values.any():
            continue
        part = weight * values
        out = part if out is None else out + part
    return out


def wait_for_sums(store: Any, user: str, timeout: float) -> bool:
    """Wait (at most ``timeout`` seconds) until the background thread growing the user's kept
    sums is done; True when there is none running (benchmarks measure the steady state)."""
    layout = store.event_layout(user)
    stats: ScanStats | None = layout.derived.get("rocchio_stats")
    thread = stats.thread if stats is not None else None
    if thread is not None:
        thread.join(timeout)
        return not thread.is_alive()
    return True


def pruned_feedback(
    store: Any, vectors: Any, layout: Any, unit: np.ndarray, seeds: np.ndarray, final: Scores, weight: float,
    keep: int, ranked: Any = None,
) -> tuple[Any, np.ndarray, Callable[[np.ndarray], np.ndarray]] | None:
    """``(z, candidates, exact_at)``: the clipped z-scored cosine / 4 of every event to ``unit`` (mean and
    spread over the events other than ``seeds``), exact for the events that can still reach
    the ``keep`` best of ``final`` once ``weight`` x it is added, 0 for the others; None when
    the plain scan is the way (float32 mirror, few events, sums incomplete, too many candidates).
    ``exact_at(positions)`` gives the exact value at any positions (for a later signal that lifts
    events outside the candidates). ``ranked``: ``final`` with its best positions kept aside
    (:class:`graphmem.retrieve.event_score.Ranked`), else every value is looked at.
    """
    n = final.shape[0]
    if not vectors.quantised or n < max(PRUNE_MIN_EVENTS, 2) or weight <= 0 or keep <= 0 or keep >= n:
        return None
    stats = _stats(store, layout, vectors)
    if stats is None:
        return None
    rows = layout.rows
    codes, q_scale = quantise(unit_rows(unit))  # the query as scan_cosines quantises it
    q = codes[0].astype(np.float64) * float(q_scale[0])
    seed_cos = scan_cosines(vectors, unit, rows[seeds])[:, 0].astype(np.float64)
    m = n - seeds.size
    if m < 2:
        return None
    total = float(stats.s @ q) - float(seed_cos.sum())
    total2 = float(q @ stats.m @ q) - float((seed_cos * seed_cos).sum())
    mean = total / m
    var = total2 / m - mean * mean
    if not var > 1e-12:  # (nearly) identical cosines: the plain computation decides
        return None
    std = math.sqrt(var)
    bound = max(0.0, (stats.peak * float(np.linalg.norm(q)) * (1 + 1e-6) + 1e-6 - mean) / std) / 4.0
    kth = float(final[(ranked.top(keep) if ranked is not None else top_k(final, keep))[-1]])  # before feedback
    floor = kth - weight * bound - 1e-9
    cand = ranked.at_least(floor) if ranked is not None else np.flatnonzero(np.asarray(final) >= floor)
    if cand.size > _MAX_CANDIDATES * n:
        return None
    def exact_at(positions: np.ndarray) -> np.ndarray:
        cos = scan_cosines(vectors, unit, rows[positions])[:, 0].astype(np.float64)
        return np.clip((cos - mean) / std, 0.0, None) / 4.0  # type: ignore[no-any-return]

    return Scattered(n, cand, exact_at(cand)), cand, exact_at  # (0 off the candidates, without an array of every event)
