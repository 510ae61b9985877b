"""Numeric helpers of the vector mirrors: unit rows, int8 quantisation, torch on demand.

Shared by :mod:`graphmem.store.vectors` (which re-exports them) and its HNSW part
(:mod:`graphmem.store.vector_ann`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

CHUNK = 65_536  # rows quantised at a time (bounds the temporary float32 copies)

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
