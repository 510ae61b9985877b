"""The learning catalog's vector mirror: exact cosine over float32 rows or int8 codes.

Context assembly scores the query against every eligible learning. Below
``Settings.vector_int8_min_rows`` learnings the rows are kept as float32 unit vectors (exact
cosine, as before); from that size on (``Settings.vector_storage = "auto"``) each row is kept as
int8 codes with one float32 scale per row (``code = round(x / scale)``, ``scale = max|x| / 127``):
a quarter of the memory, and the scan takes exact int8 dot products with numkong's SIMD kernels
(:func:`graphmem.store.vector_math.int8_dots`; ``torch._int_mm`` when numkong is missing), several
times faster than the float32 scan on this machine. The query is quantised the same way; the
cosine of row i is ``int_dot(code_i, code_q) · scale_i · scale_q``. On MiniLM vectors the top 10
by this score share 99.3 % of their rows with the exact float32 top 10 at 100k learnings (99.6 %
over 20k texts; benchmarks/scale.py measures it every run).

From ``Settings.vector_ann_min_rows`` rows on (0, the default: never) the mirror also keeps an HNSW
index (graphmem/store/ann.py, kept by the mixin in graphmem/store/vector_ann.py): built in the
background, saved beside the database file, asked for the nearest rows with over-fetching for the
eligible ones; the exact scan remains the fallback and the reference (:meth:`ScanMatrix.ann_search`).

The mirror never converts back from int8 on its own: asking for float32 storage afterwards
(``configure``) reports that the store must re-read the file.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

import numpy as np

from graphmem.store import binary_scan
from graphmem.store.vector_ann import AnnRows
from graphmem.store.vector_math import CHUNK as _CHUNK
from graphmem.store.vector_math import _numkong, _torch, int8_dots, normalise, quantise, unit_rows

__all__ = ["STORAGES", "LazyCosine", "ScanMatrix", "_torch", "normalise", "quantise", "scan_cosines", "unit_rows"]

STORAGES = ("auto", "float32", "int8")
BLOCK_CACHE_BYTES = 256 << 20  # gathered row blocks kept at most (ScanMatrix.cosine_block)


def scan_cosines(matrix: ScanMatrix, units: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """``(n, k)`` cosines of every row of ``matrix`` (or of ``rows`` only, aligned with them) to
    ``k`` unit vectors, in one pass over the rows (the event search scans the question and its
    variant together).

    float32 rows: one matrix-matrix product on torch's pool (numpy's when torch is missing).
    int8 rows: the ``k`` vectors are quantised as :meth:`ScanMatrix.cosine` quantises one, the
    exact integer dot products taken in one pass over the rows
    (:func:`graphmem.store.vector_math.int8_dots`), then rescaled by each row's and each vector's
    scale."""
    u = np.ascontiguousarray(np.asarray(units, dtype=np.float32).reshape(-1, matrix.dim))
    k = u.shape[0]
    n = len(matrix)
    idx = None if rows is None else np.asarray(rows, dtype=np.int64)
    if n == 0 or k == 0 or (idx is not None and idx.size == 0):
        return np.zeros((0 if idx is None else idx.size, k), dtype=np.float32)
    torch = _torch()
    if not matrix.quantised:
        target = matrix._m[:n] if idx is None else matrix._m[idx]
        uu = u if k > 1 else np.vstack([u, np.zeros_like(u)])  # one kernel whatever k (see VectorMatrix.cosines)
        if torch is None:
            return np.asarray(target @ uu.T, dtype=np.float32)[:, :k]
        out = torch.mm(torch.from_numpy(np.ascontiguousarray(target)), torch.from_numpy(uu).t()).numpy()
        return out[:, :k]  # type: ignore[no-any-return]
    codes, q_scale = quantise(unit_rows(u))
    scale = matrix._scale[:n] if idx is None else matrix._scale[idx]
    dots = int8_dots(matrix._m[:n], codes, idx)
    out = dots.astype(np.float32)
    out *= scale[:, None]
    out *= q_scale[None, :]
    return out


class ScanMatrix(AnnRows):
    """A growable matrix of unit vectors addressed by id (swap-remove), scanned exactly.

    Rows are float32, or int8 codes plus a scale per row once ``storage`` asks for it (see the
    module docstring). The interface matches the event catalog's float32 ``VectorMatrix``.
    """

    def __init__(self, dim: int, storage: str = "auto", int8_min_rows: int = 50_000) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self.storage = storage
        self.int8_min_rows = int8_min_rows
        self._m = np.zeros((16, dim), dtype=np.float32)
        self._scale = np.ones(16, dtype=np.float32)
        self._init_ann()  # the optional HNSW index (graphmem/store/vector_ann.py)
        self.version = 0  # bumped by every change of the rows (the gathered blocks check it)
        # key → (version, rows, codes or float32 rows, scales): see cosine_block
        self._blocks: dict[Hashable, tuple[int, np.ndarray, np.ndarray, np.ndarray]] = {}
        self.block_cache_bytes = BLOCK_CACHE_BYTES
        self._blocks_lock = threading.Lock()
        # sign bits of the rows (graphmem/store/binary_scan.py), derived on the first binary_top
        self._bits: binary_scan.BinaryCodes | None = None
        self._bits_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def quantised(self) -> bool:
        """True when the rows are held as int8 codes."""
        return bool(self._m.dtype == np.int8)

    @property
    def nbytes(self) -> int:
        """Bytes held by the rows (capacity included)."""
        return int(self._m.nbytes + (self._scale.nbytes if self.quantised else 0))

    def _want_int8(self, n: int) -> bool:
        return self.storage == "int8" or (self.storage == "auto" and n >= self.int8_min_rows)

    def configure(self, storage: str, int8_min_rows: int, ann_min_rows: int | None = None) -> bool:
        """Set the storage rule; quantises now if it asks for int8. Returns False when the
        rows are int8 but the rule now wants float32: the caller must reload them from the file.
        ``ann_min_rows`` (None: unchanged; 0: never): rows from which the HNSW index is kept."""
        if storage not in STORAGES:
            raise ValueError(f"vector storage must be one of {', '.join(STORAGES)}, got {storage!r}")
        self.storage, self.int8_min_rows = storage, int(int8_min_rows)
        if ann_min_rows is not None and int(ann_min_rows) != self.ann_min_rows:
            self.ann_min_rows = int(ann_min_rows)
            if not self._want_ann(len(self.ids)):
                self.drop_ann()
            else:
                self.ensure_ann()
        if self.quantised:
            return self._want_int8(len(self.ids))
        self._maybe_quantise()
        return True

    def _changed(self) -> None:
        """Rows were written, removed, moved or re-encoded: the gathered blocks are stale."""
        self.version += 1
        if self._blocks:
            self._blocks = {}

    def _maybe_quantise(self) -> None:
        n = len(self.ids)
        if self.quantised or not self._want_int8(n):
            return
        self._changed()
        self._bits = None
        cap = max(16, self._m.shape[0])
        codes = np.zeros((cap, self.dim), dtype=np.int8)
        scale = np.ones(cap, dtype=np.float32)
        for start in range(0, n, _CHUNK):
            stop = min(n, start + _CHUNK)
            codes[start:stop], scale[start:stop] = quantise(self._m[start:stop])
        self._m, self._scale = codes, scale

    # --- rows --------------------------------------------------------------------------------
    @property
    def matrix(self) -> np.ndarray:
        """The live rows as float32 (a view when float32; a dequantised copy when int8, so prefer
        :meth:`vectors_of` for a few rows)."""
        n = len(self.ids)
        if not self.quantised:
            return self._m[:n]
        return self._m[:n].astype(np.float32) * self._scale[:n, None]

    def vectors_of(self, rows: np.ndarray | list[int]) -> np.ndarray:
        """float32 vectors of the given rows (dequantised when int8)."""
        idx = np.asarray(rows, dtype=np.int64)
        if not self.quantised:
            return self._m[idx]
        return self._m[idx].astype(np.float32) * self._scale[idx, None]

    def _grow(self, need: int) -> None:
        if need > self._m.shape[0]:
            cap = max(need, self._m.shape[0] * 2)
            grown = np.zeros((cap, self.dim), dtype=self._m.dtype)
            grown[: len(self.ids)] = self._m[: len(self.ids)]
            scale = np.ones(cap, dtype=np.float32)
            scale[: len(self.ids)] = self._scale[: len(self.ids)]
            self._m, self._scale = grown, scale

    def put(self, ident: str, vector: np.ndarray) -> int:
        """Insert or replace the vector of ``ident``; returns its row."""
        self._changed()
        row = self.rows.get(ident)
        if row is None:
            row = len(self.ids)
            self._grow(row + 1)
            self.ids.append(ident)
            self.rows[ident] = row
        if self.quantised:  # the same rounding as a load from the file (bulk_load, append_loaded)
            codes, scale = quantise(unit_rows(vector))
            self._m[row], self._scale[row] = codes[0], scale[0]
        else:
            self._m[row] = normalise(np.array(vector, dtype=np.float32, ndmin=2))[0]
        if self._bits is not None:
            self._bits.set_rows(row, self._m[row : row + 1])
        if not self.quantised:
            self._maybe_quantise()
        self._ann_touch([ident])
        if self.ann_min_rows and self.ann is None and self._builder is None and self._want_ann(len(self.ids)):
            self.start_ann_build()  # grown past the size that asks for the index
        return row

    def bulk_load(self, ids: list[str], vectors: np.ndarray) -> None:
        """Replace everything with ``ids`` and their vectors (used on open), quantised in chunks
        when the storage rule asks for int8 at this size."""
        self._begin_reload()
        try:
            self._bulk_load(ids, vectors)
        finally:
            self.ensure_ann()

    def _bulk_load(self, ids: list[str], vectors: np.ndarray) -> None:
        self._changed()
        self.ids = list(ids)
        self.rows = {ident: i for i, ident in enumerate(self.ids)}
        n = len(self.ids)
        if n == 0:
            self._m = np.zeros((16, self.dim), dtype=np.float32)
            self._scale = np.ones(16, dtype=np.float32)
            return
        if self._want_int8(n):
            self._m = np.zeros((n, self.dim), dtype=np.int8)
            self._scale = np.ones(n, dtype=np.float32)
            for start in range(0, n, _CHUNK):
                stop = min(n, start + _CHUNK)
                self._m[start:stop], self._scale[start:stop] = quantise(unit_rows(vectors[start:stop]))
            return
        m = np.require(vectors, dtype=np.float32, requirements=["C", "W"])
        self._m = normalise(m, in_place=True)
        self._scale = np.ones(n, dtype=np.float32)

    def start_load(self, expected_rows: int) -> None:
        """Begin a chunked load (on open): forget every row and make room for ``expected_rows``.

        The storage (float32 or int8) is chosen by ``expected_rows``, so int8 rows are quantised
        chunk by chunk in :meth:`append_loaded` and no float32 copy of the whole matrix exists.
        Untouched capacity costs no resident memory (zeroed pages are mapped on first write)."""
        self._begin_reload()
        self._changed()
        self.ids, self.rows = [], {}
        cap = max(16, int(expected_rows))
        dtype = np.int8 if self._want_int8(int(expected_rows)) else np.float32
        self._m = np.zeros((cap, self.dim), dtype=dtype)
        self._scale = np.ones(cap, dtype=np.float32)

    def append_loaded(self, ids: list[str], vectors: np.ndarray) -> None:
        """Append rows read by a chunked load (after :meth:`start_load`), unit-normalised (and
        quantised when the rows are int8) as :meth:`bulk_load` stores them."""
        n0, n1 = len(self.ids), len(self.ids) + len(ids)
        if n1 == n0:
            return
        self._changed()
        self._grow(n1)
        for start in range(0, n1 - n0, _CHUNK):
            stop = min(n1 - n0, start + _CHUNK)
            part = vectors[start:stop]
            if self.quantised:
                self._m[n0 + start : n0 + stop], self._scale[n0 + start : n0 + stop] = quantise(unit_rows(part))
            else:
                self._m[n0 + start : n0 + stop] = normalise(part)
        self.ids.extend(ids)

    def finish_load(self) -> None:
        """End a chunked load: index the ids (and quantise now if the final size asks for int8)."""
        self.rows = dict(zip(self.ids, range(len(self.ids))))
        self._maybe_quantise()
        self.ensure_ann()

    def load_snapshot(self, ids: list[str], rows: np.ndarray, scale: np.ndarray) -> None:
        """Replace everything with rows saved by a snapshot (graphmem/store/snapshot.py): unit
        float32 rows, or int8 codes and their scales, as this mirror stores them. ``rows`` may be
        a writable copy-on-write map of the file: it is used as is until the first write grows it."""
        self._begin_reload()
        try:
            self.ids = ids
            self.rows = dict(zip(ids, range(len(ids))))
            if len(ids):
                self._m, self._scale = rows, np.array(scale, dtype=np.float32)
            else:
                self._m = np.zeros((16, self.dim), dtype=np.float32)
                self._scale = np.ones(16, dtype=np.float32)
            self._maybe_quantise()
            self._changed()
        finally:
            self.ensure_ann()

    def remove(self, ident: str) -> tuple[int, int] | None:
        """Swap-remove ``ident``; returns (removed_row, moved_from_row) or None if absent."""
        row = self.rows.pop(ident, None)
        if row is None:
            return None
        self._changed()
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self.ids[row] = moved
            self.rows[moved] = row
            self._m[row] = self._m[last]
            self._scale[row] = self._scale[last]
            if self._bits is not None:
                self._bits.move(row, last)
        self.ids.pop()
        self._ann_touch([ident] if row == last else [ident, self.ids[row]])
        return row, last

    def _begin_reload(self) -> None:
        """A full reload starts: the sign bits go; a build stops, a ready index is kept to repair."""
        self._bits = None
        self._ann_reload_starts()

    # --- scoring -----------------------------------------------------------------------------
    def cosine(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Cosine of the (unnormalised) query to every row, or to ``rows`` only (aligned with them).

        float32: a single-threaded mat-vec (numpy's ``einsum``, no BLAS). A thread pool does not
        pay for one query vector: torch's (MKL/OpenMP) or OpenBLAS's worker threads spin after
        each call and wait for cores when the machine is busy (measured on 2 busy cores, 10k
        rows: ~7 ms CPU and ~20 ms wall per scan on torch's pool, ~1 ms CPU and ~2.5 ms wall on
        one thread), and concurrent requests already use the cores. ``torch.set_num_threads(1)``
        is no cure here: it only takes effect in the thread that calls it (under OpenMP), while
        ``get_num_threads()`` then reads 1 in every thread. int8: numkong's int8 dot products over
        the codes (``torch._int_mm`` without numkong, numpy's integer product without either), rescaled.
        """
        n = len(self.ids)
        if n == 0 or (rows is not None and len(rows) == 0):
            return np.zeros(0 if rows is None else len(rows), dtype=np.float32)
        if rows is None:
            return _scores(query, self._m[:n], self._scale[:n])
        idx = np.asarray(rows, dtype=np.int64)
        return _scores(query, self._m[idx], self._scale[idx])

    def cosine_block(self, query: np.ndarray, rows: np.ndarray, key: Hashable) -> np.ndarray:
        """``cosine(query, rows)``, the same values, with the rows gathered once into a
        contiguous block kept under ``key`` until the rows change or another ``rows`` comes with
        that key.

        For the rows a user may see (their own and the shared learnings), scanned before each
        context(): gathering them from the whole matrix cost more than scoring them (at 100k
        int8 rows, 21 % of them a user's: ~1.1 ms to gather, ~0.8 ms to score the block, ~2.8 ms
        to score the gathered copy). Blocks are kept up to ``block_cache_bytes`` in all (the
        oldest dropped first); any write to the rows drops them.
        """
        idx = np.asarray(rows, dtype=np.int64)
        if len(self.ids) == 0 or idx.size == 0:
            return np.zeros(idx.size, dtype=np.float32)
        blocks, version = self._blocks, self.version
        entry = blocks.get(key)
        if entry is None or entry[0] != version or not np.array_equal(entry[1], idx):
            entry = (version, idx.copy(), self._m[idx], self._scale[idx])
            size = entry[2].nbytes + entry[3].nbytes + entry[1].nbytes
            if size <= self.block_cache_bytes:
                with self._blocks_lock:
                    if blocks is self._blocks and version == self.version:
                        blocks.pop(key, None)
                        used = sum(b[1].nbytes + b[2].nbytes + b[3].nbytes for b in blocks.values())
                        for old in list(blocks):
                            if used + size <= self.block_cache_bytes:
                                break
                            gone = blocks.pop(old)
                            used -= gone[1].nbytes + gone[2].nbytes + gone[3].nbytes
                        blocks[key] = entry
        return _scores(query, entry[2], entry[3])

    def binary_top(
        self, query: np.ndarray, count: int, mask: np.ndarray | None = None,
        rows: np.ndarray | None = None, key: Hashable | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``count`` rows nearest to ``query`` by the sign bits' Hamming distance, among
        ``rows`` (ascending; None: all) where ``mask`` is True, and their exact cosines
        (:meth:`cosine`), rows ascending (graphmem/store/binary_scan.py). ``key``: keep the
        bits of ``rows`` gathered under it, as :meth:`cosine_block` keeps their codes. The bits
        are derived on the first call and kept in step with writes after."""
        found = self.binary_rows(query, count, mask, rows, key)
        return found, self.cosine(query, found)

    def binary_rows(
        self, query: np.ndarray, count: int, mask: np.ndarray | None = None,
        rows: np.ndarray | None = None, key: Hashable | None = None,
        helper: binary_scan.Helper | None = None, split_from: int = 0,
    ) -> np.ndarray:
        """The rows of :meth:`binary_top` without their cosines (for a caller that scores them
        itself, with other vectors beside the query). ``helper`` and ``split_from``: the
        distances over two threads (:func:`graphmem.store.binary_scan.hamming`)."""
        bits = self._bits
        if bits is None:
            with self._bits_lock:
                if self._bits is None:
                    self._bits = binary_scan.BinaryCodes.of(self._m, len(self.ids))
                bits = self._bits
        return bits.shortlist(unit_rows(query)[0], len(self.ids), count, mask, rows, key, self.version,  # type: ignore[no-any-return]
                              helper, split_from)

    @property
    def binary_nbytes(self) -> int:
        """Bytes held by the sign bits (0 until :meth:`binary_top` derived them)."""
        bits = self._bits
        return 0 if bits is None else bits.nbytes

def _scores(query: np.ndarray, target: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Cosine of the (unnormalised) query to the unit rows ``target``: float32 rows, or int8
    codes with their per-row ``scale`` (see :meth:`ScanMatrix.cosine`)."""
    q = unit_rows(query)
    if target.dtype != np.int8:
        return np.asarray(np.einsum("ij,j->i", target, np.ascontiguousarray(q[0])), dtype=np.float32)
    torch = _torch()
    q_codes, q_scale = quantise(q)
    dots: np.ndarray | None = None
    if _numkong() is not None:  # the same integers as below, with SIMD int8 kernels on this thread
        dots = int8_dots(target, q_codes)[:, 0]
    elif torch is not None and hasattr(torch, "_int_mm"):
        try:
            col = torch.from_numpy(np.ascontiguousarray(q_codes.T))
            dots = torch._int_mm(torch.from_numpy(np.ascontiguousarray(target)), col)[:, 0].numpy()
        except RuntimeError:
            dots = None
    if dots is None:
        dots = target.astype(np.int32) @ q_codes[0].astype(np.int32)
    return dots.astype(np.float32) * scale * q_scale[0]


class LazyCosine:
    """The cosine of a query to every row, computed only for the rows asked for (and kept).

    What :func:`graphmem.retrieve.candidates.vector_candidates` returns when the HNSW index
    found the candidates: the rest of ranking reads cosines at a few hundred rows, never all.
    Supports ``sims[row]`` and ``sims[rows]`` (an integer array).
    """

    def __init__(self, matrix: ScanMatrix, query: np.ndarray, rows: np.ndarray | None = None,
                 values: np.ndarray | None = None) -> None:
        n = len(matrix)
        self._matrix = matrix
        self._query = query
        self._values = np.zeros(n, dtype=np.float32)
        self._known = np.zeros(n, dtype=bool)
        self.shape = (n,)
        self._found = np.zeros(0, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
        if rows is not None and values is not None:
            self._values[rows] = values
            self._known[rows] = True

    def known_rows(self) -> np.ndarray:
        """The rows whose cosines were given at construction (the search's candidates; the
        graph stage ranks a hub's learnings among them first, as nothing else is closer)."""
        return self._found

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, (int, np.integer)):
            i = int(idx)
            if not self._known[i]:
                self._values[i] = self._matrix.cosine(self._query, np.asarray([i]))[0]
                self._known[i] = True
            return self._values[i]
        rows = np.asarray(idx)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        missing = rows[~self._known[rows]]
        if missing.size:
            missing = np.unique(missing)
            self._values[missing] = self._matrix.cosine(self._query, missing)
            self._known[missing] = True
        return self._values[rows]

