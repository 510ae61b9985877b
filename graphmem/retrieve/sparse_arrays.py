"""Arrays of one value per event that event search keeps without an array of every event.

At a million events each array of one value per event costs ~1 ms to fill with zeros (and as
much for every pass over it), and event search's ranking makes a dozen of them per query while
most of their values are 0 or a kept prior. These classes hold the few positions that differ
and read like the array they stand for (``x[i]``, ``x[positions]``, ``np.asarray(x)``):

- :class:`Scattered`: zero outside its positions (a signal that lands on few events);
- :class:`Filled`: another constant outside its positions (the cosines of the events a
  shortlist scanned);
- :class:`Overlay`: the kept prior scores outside its positions (the final scores).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class Scattered:
    """A per-event array that is zero outside the positions ``at`` (ascending, distinct) and
    ``values`` there, without an array of every event (~1 ms each to fill at a million events):
    ``x[i]`` for one position, ``x[positions]``, ``np.asarray(x)`` for the whole array;
    :meth:`put` sets values at any positions."""

    def __init__(self, n: int, at: np.ndarray, values: np.ndarray) -> None:
        self.at, self.values, self.shape = at, values, (n,)

    def _off(self, positions: Any) -> Any:
        """The values at positions not in ``at``."""
        return np.zeros(np.shape(positions)) if np.ndim(positions) else np.float64(0.0)

    def _whole(self) -> np.ndarray:
        """A new array of every position's value off ``at``."""
        return np.zeros(self.shape[0], dtype=np.float64)

    def _where(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per position, its index in ``at`` (clipped) and whether it is there."""
        j = np.searchsorted(self.at, positions)
        if self.at.size == 0:
            return j, np.zeros(positions.shape, dtype=bool)
        jc = np.minimum(j, self.at.size - 1)
        return jc, self.at[jc] == positions

    def __getitem__(self, i: Any) -> Any:
        if i is self.at:  # (the positions held, in order)
            return self.values.copy()
        if np.ndim(i) == 0:
            j = int(np.searchsorted(self.at, i))
            return self.values[j] if j < self.at.size and self.at[j] == i else self._off(i)
        positions = np.asarray(i)
        if positions.dtype == bool:  # a mask over every position
            return np.asarray(self)[positions]
        jc, hit = self._where(positions)
        return np.where(hit, self.values[jc] if self.at.size else 0.0, self._off(positions))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self._whole()
        out[self.at] = self.values
        return out if dtype is None else out.astype(dtype)

    def astype(self, dtype: Any) -> np.ndarray:
        """The whole array as ``dtype``."""
        return np.asarray(self).astype(dtype)

    def put(self, positions: np.ndarray, values: np.ndarray) -> None:
        """``x[positions] = values`` (distinct positions)."""
        positions = np.asarray(positions, dtype=np.int64)
        values = np.broadcast_to(np.asarray(values, dtype=np.float64), positions.shape)
        if positions.size == 0:
            return
        jc, hit = self._where(positions)
        self.values[jc[hit]] = values[hit]
        if not hit.all():
            order = np.argsort(positions[~hit])
            fresh, fresh_values = positions[~hit][order], values[~hit][order]
            where = np.searchsorted(self.at, fresh)
            self.at = np.insert(self.at, where, fresh)
            self.values = np.insert(self.values, where, fresh_values)


class Filled(Scattered):
    """A per-event array that is ``fill`` outside the positions ``at`` (ascending, distinct) and
    ``values`` there: the cosines a shortlist scan found, every other event standing for a
    cosine below any mean (an array of every event costs ~1.5 ms to fill at a million)."""

    def __init__(self, n: int, at: np.ndarray, values: np.ndarray, fill: float) -> None:
        super().__init__(n, at, values)
        self.fill = float(fill)

    def _off(self, positions: Any) -> Any:
        return np.full(np.shape(positions), self.fill) if np.ndim(positions) else np.float64(self.fill)

    def _whole(self) -> np.ndarray:
        return np.full(self.shape[0], self.fill)


class Overlay(Scattered):
    """Every event's final score without an array of every event: the kept ``prior`` scores
    (read only, shared between queries; their largest is ``prior_top``) except at the
    positions ``at`` (ascending, distinct), which hold ``values``. Reads like the array it stands
    for (as :class:`Scattered`); :meth:`add` changes it in place. A copy of the priors per query
    costs ~2-5 ms at a million events; the best positions are found among ``at`` alone as long
    as they score above every prior (:meth:`best`)."""

    def __init__(self, prior: np.ndarray, prior_top: float, at: np.ndarray, values: np.ndarray) -> None:
        super().__init__(prior.shape[0], at, values)
        self.prior, self.prior_top = prior, prior_top

    def _off(self, positions: Any) -> Any:
        return self.prior[positions]

    def _whole(self) -> np.ndarray:
        return self.prior.copy()

    def add(self, positions: np.ndarray, amounts: np.ndarray | float) -> None:
        """``x[positions] += amounts`` (distinct positions)."""
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size:
            self.put(positions, self[positions] + amounts)

    def best(self, size: int) -> tuple[np.ndarray, float] | None:
        """``(positions, floor)`` as :func:`graphmem.retrieve.event_arrays.top_candidates` gives
        them (every position scoring at least ``floor``, ascending; at least ``size`` of them),
        when the ``size``-th best of ``values`` is above every prior score (every other position
        scores a prior: below it); None otherwise."""
        m = self.at.size
        if size <= 0 or m < size:
            return None
        kth = float(np.partition(self.values, m - size)[m - size])
        if not kth > self.prior_top:
            return None
        return self.at[self.values >= kth], kth


def spread(n: int, at: np.ndarray, values: np.ndarray, sparse: bool) -> Any:
    """The values at the distinct positions ``at`` (0 elsewhere) as a :class:`Scattered` when
    ``sparse``, else as an array of every position."""
    if sparse:
        order = np.argsort(at, kind="stable")
        return Scattered(n, np.asarray(at, dtype=np.int64)[order], np.asarray(values, dtype=np.float64)[order])
    out = np.zeros(n)
    out[at] = values
    return out
