"""The vector signal of event search on a large int8 event mirror without scanning every event.

The event search z-scores the cosine of the query (blended with the query without its names)
over *all* of the user's events, and only events above the mean get the signal. Done plainly
that is a full int8 scan of the user's rows per query (~8 ms at 100,000 events, ~80 ms at a
million). Neither part needs it:

- the mean and spread of the blended cosine over every event are exact from sums kept between
  queries (:class:`graphmem.retrieve.event_rank.ScanStats`, the same sums the embedding
  feedback uses): with ``x_e`` the event's dequantised row and ``q`` the blended dequantised
  query, ``sum_e x_e . q = S . q`` and ``sum_e (x_e . q)^2 = q' M q``;
- the events that can carry the signal into the top hits are the ones nearest the query: a
  sign-bit first pass (the Hamming distance of the rows' sign bits to the blended query's,
  :meth:`graphmem.store.vectors.ScanMatrix.binary_rows`) keeps the
  ``search_shortlist_candidates`` nearest, the events the other signals name (BM25, linked or
  named entities, the tool) are added, and those are scanned exactly (the same int8
  arithmetic as the full scan: the same cosines, bit for bit).

Every other event gets a cosine of -1 (below any mean: no vector signal). From
``search_shortlist_min_events`` events on (int8 mirrors only; 0: never). The hits equal the
full scan's as long as the first pass keeps every event whose vector signal reaches them
(``python -m benchmarks.events_scale --check-exact`` compares both on its questions).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from graphmem.config import Settings
from graphmem.embed_workers import submit_if_idle
from graphmem.retrieve.event_arrays import row_position_array
from graphmem.retrieve.event_rank import _stats
from graphmem.store.search import EventLayout
from graphmem.store.vectors import quantise, scan_cosines, unit_rows

OUTSIDE = -1.0  # the cosine given to the events left out of the exact scan (below any mean)


def _scan(vectors: Any, unit: np.ndarray, rows: np.ndarray, split_from: int) -> np.ndarray:
    """:func:`scan_cosines` of ``rows``; from ``split_from`` rows on (0: never) the second half
    on an idle shared worker (the same cosines: each row's are computed alone)."""
    if 0 < split_from <= rows.size:
        cut = rows.size // 2
        future = submit_if_idle(scan_cosines, vectors, unit, rows[cut:])
        if future is not None:
            first = scan_cosines(vectors, unit, rows[:cut])
            return np.concatenate([first, future.result()])
    return scan_cosines(vectors, unit, rows)


def shortlist_cosines(
    store: Any, layout: EventLayout, unit: np.ndarray, blend: float, named: np.ndarray, lexical: np.ndarray,
    settings: Settings,
) -> tuple[np.ndarray, tuple[float, float], np.ndarray] | None:
    """``(sims, (mean, std), scanned)``: the positions ``scanned`` (ascending) are the shortlist,
    ``named``, ``lexical`` (the BM25 hits) and the session neighbours of the shortlist and the
    BM25 hits; ``sims`` the ``(len(scanned), k)`` exact cosines of their events to the ``k`` unit
    vectors ``unit`` (the question, and its variant without names when ``k`` is 2; every other
    event stands for :data:`OUTSIDE`, below any mean, without an array of every event); the mean and
    standard deviation over every event of the blended cosine (``(1 - blend)`` x the first plus
    ``blend`` x the second when ``k`` is 2). None when the full scan is the way (a float32 mirror,
    fewer events than ``search_shortlist_min_events``, kept sums still growing, the rank fusion
    ``search_fusion="rrf"``, which ranks every event's cosine)."""
    vectors = store.event_catalog.vectors
    n = len(layout)
    minimum = settings.search_shortlist_min_events
    if minimum <= 0 or n < max(minimum, 2) or not vectors.quantised or settings.search_fusion != "score":
        return None
    count = settings.search_shortlist_candidates
    if count >= n:
        return None
    stats = _stats(store, layout, vectors)
    if stats is None:
        return None
    codes, scale = quantise(unit_rows(unit))  # the vectors as scan_cosines quantises them
    q = codes.astype(np.float64) * scale.astype(np.float64)[:, None]
    qb = q[0] if q.shape[0] == 1 else (1.0 - blend) * q[0] + blend * q[1]
    mean = float(stats.s @ qb) / n
    var = float(qb @ stats.m @ qb) / n - mean * mean
    if not var > 1e-12:  # (nearly) identical cosines: the full scan decides
        return None
    rows = layout.rows
    whole = rows.size == len(vectors)  # the user's rows are the whole mirror, in order
    found = vectors.binary_rows(qb.astype(np.float32), count, rows=None if whole else rows,
                                key=None if whole else ("event_shortlist", id(layout)),
                                helper=submit_if_idle, split_from=settings.search_shortlist_split_from)
    near = found if whole else row_position_array(layout)[found]
    near = np.concatenate([near[near >= 0], lexical])
    # their session neighbours too: an event's score takes a share of its neighbours' (and the
    # best hits lift the same speaker's turns around them), so those must be exact as well
    reach = max(settings.search_neighbour_window,
                settings.search_continuation_reach if settings.search_weight_continuation > 0 else 0)
    keep = np.zeros(n, dtype=bool)  # (a mask, not np.union1d: sorting the positions costs more)
    keep[near] = True
    keep[named] = True
    if reach > 0:
        around = layout.neighbour_index(reach)[near].ravel()
        keep[around[around >= 0]] = True
    cand = np.flatnonzero(keep)
    sims = _scan(vectors, unit, rows[cand], settings.search_scan_split_from).astype(np.float64)
    return sims, (mean, math.sqrt(var)), cand
