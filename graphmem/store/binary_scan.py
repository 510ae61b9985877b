"""Sign-bit codes of the vector mirror's rows: a cheap first pass before the exact scan.

At a million learnings the exact int8 scan reads 384 bytes per row (384 MB per query, ~40 ms on
this 2-core machine). Each row here also has one bit per dimension (set where the value is
positive): 384 dimensions → 48 bytes, six 64-bit words. A query is answered in two passes
(:meth:`graphmem.store.vectors.ScanMatrix.binary_top`):

1. the Hamming distance between the query's sign bits and every scanned row's (``xor`` then
   ``np.bitwise_count``, a 256-entry table when numpy lacks it), over the rows the caller allows
   (a user's visible rows, an eligibility mask); the ``count`` nearest rows are kept;
2. those rows are rescored exactly (the mirror's int8 codes or float32 rows), so the order and
   the cosines of the returned rows are the exact scan's; only rows the first pass missed can
   differ from the exact top ``k``.

The words are stored column-major (``bits[j]`` holds word ``j`` of every row, contiguous), so
the distance is six passes over contiguous uint64 columns, in cache-sized chunks. A user's
visible rows are gathered once into a kept block (as ``ScanMatrix.cosine_block`` keeps their
int8 rows) until the rows change.

Recall against the exact scan (real MiniLM vectors) and speed: docs/benchmarks.md "Binary first pass",
``python -m benchmarks.binary_scan``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any

import numpy as np

WORD = 64
_CHUNK = 32_768  # rows per distance chunk (the temporaries stay in cache)
_BUILD_CHUNK = 65_536  # rows converted to bits at a time
BLOCK_CACHE_BYTES = 64 << 20  # gathered bit blocks kept at most
_TABLE = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _popcount(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 of ``x`` into the uint8 ``out``."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x, out=out)  # type: ignore[no-any-return]
    out[:] = _TABLE[x.view(np.uint8)].reshape(-1, 8).sum(axis=1, dtype=np.uint8)
    return out


def sign_words(rows: np.ndarray) -> np.ndarray:
    """``(n, words)`` uint64 sign bits of float rows or int8 codes (bit set where > 0)."""
    r = np.asarray(rows)
    if r.ndim == 1:
        r = r[None, :]
    packed = np.packbits(r > 0, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.concatenate([packed, np.zeros((packed.shape[0], pad), dtype=np.uint8)], axis=1)
    return np.ascontiguousarray(packed).view(np.uint64)


# ``helper(task)``: runs ``task()`` on another thread if one is free now and returns its Future,
# else None (nothing run); the caller then does the work itself
Helper = Callable[[Callable[[], Any]], "Future[Any] | None"]


def hamming(bits: np.ndarray, query: np.ndarray, helper: Helper | None = None, split_from: int = 0) -> np.ndarray:
    """uint16 Hamming distances between the query's words and each column of ``bits``
    (``(words, m)``, each word's row contiguous). From ``split_from`` columns on (0: never),
    the second half goes to ``helper`` when it has a free thread (the passes are numpy loops
    that leave the GIL; ``Settings.search_shortlist_split_from`` says what it gained)."""
    words, m = bits.shape
    cut = m // 2 // _CHUNK * _CHUNK
    if helper is not None and 0 < split_from <= m and cut > 0:
        out = np.empty(m, dtype=np.uint16)

        def second() -> None:
            out[cut:] = hamming(bits[:, cut:], query)

        future = helper(second)
        if future is not None:
            out[:cut] = hamming(bits[:, :cut], query)
            future.result()
            return out
    out = np.empty(m, dtype=np.uint16)
    x = np.empty(min(m, _CHUNK), dtype=np.uint64)
    cnt = np.empty(min(m, _CHUNK), dtype=np.uint8)
    for start in range(0, m, _CHUNK):
        stop = min(m, start + _CHUNK)
        k = stop - start
        acc = out[start:stop]
        for j in range(words):
            np.bitwise_xor(bits[j, start:stop], query[j], out=x[:k])
            _popcount(x[:k], cnt[:k])
            if j == 0:
                acc[:] = cnt[:k]
            else:
                acc += cnt[:k]
    return out


_SAMPLE_FROM = 65_536  # distances from which the cut is first bounded on a sample (nearest)
_SAMPLE_EVERY = 16  # one distance in this many makes the sample


def _cut(dist: np.ndarray, count: int) -> int:
    """The distance of the ``count``-th smallest of ``dist`` (``count`` <= its size)."""
    return int(np.searchsorted(np.cumsum(np.bincount(dist)), count))


def _smallest(dist: np.ndarray, count: int) -> np.ndarray:
    """Positions of the ``count`` smallest distances, ascending, ties at the cut in position
    order. From ``_SAMPLE_FROM`` distances on, a cut certain to hold ``count`` of them is read
    off a sample (one distance in ``_SAMPLE_EVERY``, with a margin) and checked on every
    distance; the exact cut is then found among the rows under it (the same rows as a
    histogram of every distance: ~1 ms instead of ~3-4 ms at a million rows). Without enough
    rows under the sampled cut, every distance is counted."""
    picked: np.ndarray | None = None
    if dist.size >= _SAMPLE_FROM:
        sample = dist[::_SAMPLE_EVERY]
        want = min(sample.size, 2 * count * sample.size // dist.size + 64)
        picked = np.flatnonzero(dist <= _cut(sample, want))
        if picked.size < count:
            picked = None
    if picked is None:
        cut = _cut(dist, count)
        picked = np.flatnonzero(dist <= cut)
        at = dist[picked]
    else:
        at = dist[picked]
        cut = _cut(at, count)
        inside = at <= cut
        picked, at = picked[inside], at[inside]
    if picked.size > count:  # drop the last rows tied at the cut
        extra = picked.size - count
        drop = np.flatnonzero(at == cut)[-extra:]
        keep = np.ones(picked.size, dtype=bool)
        keep[drop] = False
        picked = picked[keep]
    return picked.astype(np.int64, copy=False)


def nearest(dist: np.ndarray, count: int, allowed: np.ndarray | None = None) -> np.ndarray:
    """Positions of the ``count`` smallest distances among the ``allowed`` ones (all when None),
    ascending; rows tied at the cut are taken in position order. Found by a histogram of the
    distances (they are small integers), not a sort."""
    if allowed is not None:
        live = int(np.count_nonzero(allowed))
        if count >= live:
            return np.flatnonzero(allowed)
        dist = np.where(allowed, dist, np.uint16(np.iinfo(np.uint16).max))
    elif count >= dist.size:
        return np.arange(dist.size, dtype=np.int64)
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    return _smallest(dist, count)


class BinaryCodes:
    """Sign bits of a mirror's rows, column-major, kept in step with the rows by the owner
    (``ScanMatrix.put`` / ``remove``; a reload drops them and they are derived again)."""

    def __init__(self, dim: int, capacity: int = 16) -> None:
        self.dim = dim
        self.words = -(-dim // WORD)
        self.bits = np.zeros((self.words, max(16, capacity)), dtype=np.uint64)
        self.block_cache_bytes = BLOCK_CACHE_BYTES
        # key → (version, rows, gathered bits)
        self._blocks: dict[Hashable, tuple[int, np.ndarray, np.ndarray]] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(cls, rows: np.ndarray, n: int) -> BinaryCodes:
        """The codes of the first ``n`` of ``rows`` (float32 rows or int8 codes), in chunks."""
        out = cls(rows.shape[1], n)
        for start in range(0, n, _BUILD_CHUNK):
            stop = min(n, start + _BUILD_CHUNK)
            out.bits[:, start:stop] = sign_words(rows[start:stop]).T
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held by the codes (capacity included)."""
        return int(self.bits.nbytes)

    def set_rows(self, start: int, rows: np.ndarray) -> None:
        """Write the codes of ``rows`` (float32 rows or int8 codes) from row ``start`` on."""
        w = sign_words(rows)
        need = start + w.shape[0]
        if need > self.bits.shape[1]:
            grown = np.zeros((self.words, max(need, 2 * self.bits.shape[1])), dtype=np.uint64)
            grown[:, : self.bits.shape[1]] = self.bits
            self.bits = grown
        self.bits[:, start:need] = w.T
        self._blocks = {}

    def move(self, dst: int, src: int) -> None:
        """Row ``src``'s codes become row ``dst``'s (a swap-remove)."""
        self.bits[:, dst] = self.bits[:, src]
        self._blocks = {}

    def block(self, rows: np.ndarray, key: Hashable | None, version: int) -> np.ndarray:
        """The codes of ``rows`` gathered into a contiguous ``(words, len(rows))`` block, kept
        under ``key`` while the mirror's ``version`` and ``rows`` stay the same."""
        if key is None:
            return np.ascontiguousarray(self.bits[:, rows])
        blocks = self._blocks
        entry = blocks.get(key)
        if entry is not None and entry[0] == version and np.array_equal(entry[1], rows):
            return entry[2]
        gathered = np.ascontiguousarray(self.bits[:, rows])
        size = gathered.nbytes + rows.nbytes
        if size <= self.block_cache_bytes:
            with self._lock:
                if blocks is self._blocks:
                    blocks.pop(key, None)
                    used = sum(b[1].nbytes + b[2].nbytes for b in blocks.values())
                    for old in list(blocks):
                        if used + size <= self.block_cache_bytes:
                            break
                        gone = blocks.pop(old)
                        used -= gone[1].nbytes + gone[2].nbytes
                    blocks[key] = (version, rows.copy(), gathered)
        return gathered

    def shortlist(
        self, query: np.ndarray, n: int, count: int, mask: np.ndarray | None = None,
        rows: np.ndarray | None = None, key: Hashable | None = None, version: int = 0,
        helper: Helper | None = None, split_from: int = 0,
    ) -> np.ndarray:
        """Rows (ascending) of the ``count`` smallest Hamming distances to the unit ``query``.

        Ranks ``rows`` (row numbers, ascending) when given, else the first ``n`` rows; only rows
        where the boolean ``mask`` (over all rows) is True are returned (None: all). ``helper``
        and ``split_from``: as for :func:`hamming`."""
        q = sign_words(np.asarray(query, dtype=np.float32).reshape(1, -1))[0]
        if rows is None:
            dist = hamming(self.bits[:, :n], q, helper, split_from)
            allowed = mask[:n] if mask is not None and not mask[:n].all() else None
            return nearest(dist, count, allowed)
        idx = np.asarray(rows, dtype=np.int64)
        if idx.size == 0:
            return idx
        dist = hamming(self.block(idx, key, version), q, helper, split_from)
        allowed = mask[idx] if mask is not None else None
        return idx[nearest(dist, count, allowed)]
