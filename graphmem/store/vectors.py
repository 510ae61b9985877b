"""The learning catalog's vector mirror: exact cosine over float32 rows or int8 codes.

Context assembly scores the query against every eligible learning. Below
``Settings.vector_int8_min_rows`` learnings the rows are kept as float32 unit vectors (exact
cosine, as before); from that size on (``Settings.vector_storage = "auto"``) each row is kept as
int8 codes with one float32 scale per row (``code = round(x / scale)``, ``scale = max|x| / 127``):
a quarter of the memory, and the scan is an int8 matrix–vector product (``torch._int_mm``), about
half the time of the float32 one on this machine. The query is quantised the same way; the
cosine of row i is ``int_dot(code_i, code_q) · scale_i · scale_q``. On MiniLM vectors the top 10
by this score share 99.3 % of their rows with the exact float32 top 10 at 100k learnings (99.6 %
over 20k texts; benchmarks/scale.py measures it every run).

An approximate graph index (HNSW: usearch or hnswlib) was measured here and not used: building
it over 100k MiniLM-sized vectors took 11 minutes on the shared 2-core machine (hours at 1M), it
would have to be rebuilt or stored beside the single database file on every open, and per-user
filtering needs over-fetching with an exact fallback anyway. See the README's benchmark section.

The mirror never converts back from int8 on its own: asking for float32 storage afterwards
(``configure``) reports that the store must re-read the file.
"""

from __future__ import annotations

from typing import Any

import numpy as np

STORAGES = ("auto", "float32", "int8")
_CHUNK = 65_536  # rows quantised at a time (bounds the temporary float32 copies)

_TORCH: list[Any] = []


def _torch() -> Any:
    """torch if importable (imported on first use, never at import time), else None."""
    if not _TORCH:
        module: Any
        try:
            import torch as module
        except ImportError:
            module = None
        _TORCH.append(module)
    return _TORCH[0]


def normalise(vectors: np.ndarray, *, in_place: bool = False) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32.

    Uses einsum for the squared norms (several times faster than np.linalg.norm on 100k rows)
    and skips the division when every row is already a unit vector, as embedders return them.
    """
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    sq = np.einsum("ij,ij->i", v, v)
    if sq.size and np.all(np.abs(sq - 1.0) < 1e-4):
        return v
    norms = np.sqrt(sq)
    norms[norms == 0] = 1.0
    if in_place and v.flags.writeable:
        v /= norms[:, None]
        return v
    return v / norms[:, None]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length as float32 (zero rows stay zero); always a new array."""
    v = np.array(vectors, dtype=np.float32, ndmin=2)
    norms = np.sqrt(np.einsum("ij,ij->i", v, v))
    norms[norms == 0] = 1.0
    v /= norms[:, None]
    return v


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes and per-row float32 scales of float32 rows (``row ≈ codes · scale``)."""
    v = np.asarray(vectors, dtype=np.float32)
    scale = np.abs(v).max(axis=1) / 127.0 if v.shape[1] else np.zeros(v.shape[0], np.float32)
    scale[scale == 0] = 1.0
    codes = np.rint(v / scale[:, None]).astype(np.int8)
    return codes, scale.astype(np.float32)


class ScanMatrix:
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
        self._m: np.ndarray = np.zeros((16, dim), dtype=np.float32)
        self._scale: np.ndarray = np.ones(16, dtype=np.float32)

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

    def configure(self, storage: str, int8_min_rows: int) -> bool:
        """Set the storage rule; quantises now if it asks for int8. Returns False when the
        rows are int8 but the rule now wants float32: the caller must reload them from the file."""
        if storage not in STORAGES:
            raise ValueError(f"vector storage must be one of {', '.join(STORAGES)}, got {storage!r}")
        self.storage, self.int8_min_rows = storage, int(int8_min_rows)
        if self.quantised:
            return self._want_int8(len(self.ids))
        self._maybe_quantise()
        return True

    def _maybe_quantise(self) -> None:
        n = len(self.ids)
        if self.quantised or not self._want_int8(n):
            return
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
        row = self.rows.get(ident)
        if row is None:
            row = len(self.ids)
            self._grow(row + 1)
            self.ids.append(ident)
            self.rows[ident] = row
        unit = unit_rows(vector)
        if self.quantised:
            codes, scale = quantise(unit)
            self._m[row], self._scale[row] = codes[0], scale[0]
        else:
            self._m[row] = unit[0]
            self._maybe_quantise()
        return row

    def bulk_load(self, ids: list[str], vectors: np.ndarray) -> None:
        """Replace everything with ``ids`` and their vectors (used on open), quantised in chunks
        when the storage rule asks for int8 at this size."""
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

    def remove(self, ident: str) -> tuple[int, int] | None:
        """Swap-remove ``ident``; returns (removed_row, moved_from_row) or None if absent."""
        row = self.rows.pop(ident, None)
        if row is None:
            return None
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self.ids[row] = moved
            self.rows[moved] = row
            self._m[row] = self._m[last]
            self._scale[row] = self._scale[last]
        self.ids.pop()
        return row, last

    # --- scoring -----------------------------------------------------------------------------
    def cosine(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Cosine of the (unnormalised) query to every row, or to ``rows`` only (aligned with them).

        float32: a single-threaded mat-vec (numpy's ``einsum``, no BLAS). A thread pool does not
        pay for one query vector: torch's (MKL/OpenMP) or OpenBLAS's worker threads spin after
        each call and wait for cores when the machine is busy (measured on 2 busy cores, 10k
        rows: ~7 ms CPU and ~20 ms wall per scan on torch's pool, ~1 ms CPU and ~2.5 ms wall on
        one thread), and concurrent requests already use the cores. ``torch.set_num_threads(1)``
        is no cure here: it only takes effect in the thread that calls it (under OpenMP), while
        ``get_num_threads()`` then reads 1 in every thread. int8: ``torch._int_mm`` over the
        codes, rescaled; numpy's integer product when torch is missing.
        """
        n = len(self.ids)
        if n == 0 or (rows is not None and len(rows) == 0):
            return np.zeros(0 if rows is None else len(rows), dtype=np.float32)
        target = self._m[:n] if rows is None else self._m[np.asarray(rows, dtype=np.int64)]
        q = unit_rows(query)
        if not self.quantised:
            return np.asarray(np.einsum("ij,j->i", target, np.ascontiguousarray(q[0])), dtype=np.float32)
        torch = _torch()
        q_codes, q_scale = quantise(q)
        scale = self._scale[:n] if rows is None else self._scale[np.asarray(rows, dtype=np.int64)]
        dots: np.ndarray | None = None
        if torch is not None and hasattr(torch, "_int_mm"):
            try:
                col = torch.from_numpy(np.ascontiguousarray(q_codes.T))
                dots = torch._int_mm(torch.from_numpy(np.ascontiguousarray(target)), col)[:, 0].numpy()
            except RuntimeError:
                dots = None
        if dots is None:
            dots = target.astype(np.int32) @ q_codes[0].astype(np.int32)
        return dots.astype(np.float32) * scale * q_scale[0]
