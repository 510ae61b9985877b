"""Numeric helpers of the vector mirrors: unit rows, int8 quantisation, torch on demand.

Shared by :mod:`graphmem.store.vectors` (which re-exports them) and its HNSW part
(:mod:`graphmem.store.vector_ann`).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

CHUNK = 65_536  # rows quantised at a time (bounds the temporary float32 copies)

_TORCH: list[Any] = []
_NUMKONG: list[Any] = []


def _torch() -> Any:
    """torch if importable (imported on first use, never at import time), else None."""
    if not _TORCH:
        module: Any
        try:
            module = importlib.import_module("torch")
        except ImportError:
            module = None
        _TORCH.append(module)
    return _TORCH[0]


def _numkong() -> Any:
    """numkong (SIMD kernels, usearch's own) if importable, else None: imported on first use."""
    if not _NUMKONG:
        module: Any
        try:
            import numkong as module
        except ImportError:  # pragma: no cover - a core dependency; einsum stands in without it
            module = None
        _NUMKONG.append(module)
    return _NUMKONG[0]


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


def db_floats(vector: Any) -> list[float]:
    """A vector as the list of Python floats a Kùzu parameter takes (the same values as
    ``[float(x) for x in vector]``, a few times faster)."""
    return np.asarray(vector, dtype=np.float64).reshape(-1).tolist()  # type: ignore[no-any-return]


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


DOT_CHUNK = 16_384  # int8 rows gathered and multiplied at a time by int8_dots


def _dots(block: np.ndarray, q: np.ndarray) -> np.ndarray:
    """int32 dot products of a C-contiguous int8 block with the int8 query codes ``q``."""
    nk = _numkong()
    if nk is None:
        return np.einsum("ij,kj->ik", block, q, dtype=np.int32)  # type: ignore[no-any-return]
    # float64 holds every such sum exactly (below 2**23); numkong adds int8 products with SIMD
    return np.asarray(nk.cdist(block, q, metric="dot")).astype(np.int32)


def int8_dots(codes: np.ndarray, q_codes: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """``(n, k)`` int32 dot products of int8 rows with ``k`` int8 query codes: every row of
    ``codes`` (a view, no copy) or the rows ``rows`` only (aligned with them, gathered a chunk
    at a time so the copy stays in cache).

    Exact: a product of two int8 codes is at most 127² and a row of 384 of them sums far
    below 2²³, so any order of summation gives the same integers (the scale factors are
    applied by the caller). The products are taken by numkong's SIMD int8 kernel on the
    caller's thread (numpy's ``einsum`` when numkong is missing). CPU p50 on this 2-core
    machine for two query columns: 100k rows 6.2 ms against 24.2 ms with einsum; 21.8k
    gathered rows 4.5 ms against 8.4 ms (``python -m benchmarks.vector_scans``)."""
    q = np.ascontiguousarray(q_codes, dtype=np.int8)
    if rows is None:
        return _dots(np.ascontiguousarray(codes), q)
    idx = np.asarray(rows, dtype=np.int64)
    if idx.size <= DOT_CHUNK:
        return _dots(np.take(codes, idx, axis=0), q)
    out = np.empty((idx.size, q.shape[0]), dtype=np.int32)
    for start in range(0, idx.size, DOT_CHUNK):
        part = idx[start : start + DOT_CHUNK]
        out[start : start + part.size] = _dots(np.take(codes, part, axis=0), q)
    return out
