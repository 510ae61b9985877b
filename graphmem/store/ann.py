"""An approximate nearest-neighbour index (HNSW, usearch) beside the exact vector mirror.

From ``Settings.vector_ann_min_rows`` learnings on, an exact scan of every eligible row costs
tens of milliseconds per query (1M × 384 int8 codes), so the mirror (graphmem/store/vectors.py)
also keeps an HNSW graph over the same unit vectors and asks it for the nearest rows. The exact
scan stays the reference and the fallback:

- the index is built in a background thread (minutes at 1M rows), never during open or a query;
  until it is ready queries scan exactly;
- it is saved beside the database file (``<file>.ann`` and ``<file>.ann.ids``) after a build and
  when the store closes, and loaded on the next open; rows written since (by this or another
  process) are found by a fingerprint of each row's int8 codes and re-added, removed rows are
  dropped, so a stale file is repaired rather than trusted;
- the graph has no notion of users or statuses: a query over-fetches (``k`` / the eligible share,
  doubled) and keeps the eligible rows; when that leaves fewer than asked, or when few rows are
  eligible (``Settings.vector_ann_exact_below``), the caller scans the eligible rows exactly.

Keys are stable integers (one per stored vector, never reused), mapped to learning ids here, so
the swap-removes of the mirror's rows never touch the graph.

usearch is imported on first use; without it the mirror simply keeps scanning exactly.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

_FP = np.random.default_rng(20240607).integers(1, 2**63, size=1024, dtype=np.uint64) | np.uint64(1)


_AVAILABLE: list[bool] = []


def available() -> bool:
    """True when usearch can be imported (imported on the first call, remembered)."""
    if not _AVAILABLE:
        try:
            import usearch.index  # noqa: F401
        except ImportError:
            _AVAILABLE.append(False)
        else:
            _AVAILABLE.append(True)
    return _AVAILABLE[0]


def fingerprints(codes: np.ndarray) -> np.ndarray:
    """One int64 per row of int8 codes (8 codes at a time as a uint64, times fixed odd
    constants, summed with wrap-around): equal codes, equal prints."""
    c = np.ascontiguousarray(codes, dtype=np.int8)
    if c.ndim == 1:
        c = c[None, :]
    pad = (-c.shape[1]) % 8
    if pad:
        c = np.concatenate([c, np.zeros((c.shape[0], pad), dtype=np.int8)], axis=1)
    words = c.view(np.uint64)
    return (words * _FP[: words.shape[1]]).sum(axis=1, dtype=np.uint64).view(np.int64)


class AnnIndex:
    """HNSW over unit vectors, addressed by learning id (usearch, cosine, int8 storage).

    Not thread-safe on its own: the owner (``ScanMatrix``) serialises writes and searches.
    """

    def __init__(self, dim: int, *, connectivity: int = 16, expansion_add: int = 64, expansion_search: int = 64) -> None:
        from usearch.index import Index

        self.dim = dim
        self.connectivity = connectivity
        self.expansion_add = expansion_add
        self.expansion_search = expansion_search
        self.index = Index(ndim=dim, metric="cos", dtype="i8", connectivity=connectivity,
                           expansion_add=expansion_add, expansion_search=expansion_search)
        self.key_of: dict[str, int] = {}
        self.id_of: list[str | None] = []  # key -> id (None: removed)
        self.prints: list[int] = []  # key -> fingerprint of the codes it was added with

    def __len__(self) -> int:
        return len(self.key_of)

    @property
    def nbytes(self) -> int:
        """Memory the graph and its vectors take (usearch's own count)."""
        return int(self.index.memory_usage)

    def add(self, ids: list[str], vectors: np.ndarray, prints: np.ndarray, threads: int = 1) -> None:
        """Add (or replace) the unit vectors of ``ids``; ``prints`` are their codes' fingerprints."""
        if not ids:
            return
        old = [self.key_of[i] for i in ids if i in self.key_of]
        if old:
            self.index.remove(np.asarray(old, dtype=np.uint64))
            for k in old:
                self.id_of[k] = None
        start = len(self.id_of)
        keys = np.arange(start, start + len(ids), dtype=np.uint64)
        self.index.add(keys, np.ascontiguousarray(vectors, dtype=np.float32), threads=threads)
        self.id_of.extend(ids)
        self.prints.extend(int(p) for p in prints)
        for k, ident in zip(range(start, start + len(ids)), ids):
            self.key_of[ident] = k

    def remove(self, ids: list[str]) -> None:
        """Drop ``ids`` (unknown ids are ignored)."""
        keys = [self.key_of.pop(i) for i in ids if i in self.key_of]
        if keys:
            self.index.remove(np.asarray(keys, dtype=np.uint64))
            for k in keys:
                self.id_of[k] = None

    def search(self, query: np.ndarray, k: int, ef: int) -> list[str]:
        """Ids of (about) the ``k`` rows nearest to the unit ``query``, nearest first."""
        if k <= 0 or not self.key_of:
            return []
        if self.index.expansion_search != max(ef, k):
            self.index.expansion_search = max(ef, k)  # type: ignore[misc]  # a setter in usearch
        found = self.index.search(np.ascontiguousarray(query, dtype=np.float32), min(k, len(self.key_of)), threads=1)
        out = []
        for key in np.asarray(found.keys).tolist():
            ident = self.id_of[key] if 0 <= key < len(self.id_of) else None
            if ident is not None:
                out.append(ident)
        return out

    # --- persistence -------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the graph to ``path`` and the key → id map (with fingerprints) to ``path.ids``.

        Written to temporary names and renamed, so a crash leaves the previous pair or none."""
        p = Path(path)
        tmp, tmp_ids = p.with_name(p.name + ".tmp"), p.with_name(p.name + ".ids.tmp")
        self.index.save(str(tmp))
        live = [(k, i) for k, i in enumerate(self.id_of) if i is not None]
        with open(tmp_ids, "wb") as fh:
            header = f"graphmem-ann 1 {self.dim} {len(self.id_of)} {len(live)}\n"
            fh.write(header.encode())
            keys = np.asarray([k for k, _ in live], dtype=np.int64)
            prints = np.asarray([self.prints[k] for k, _ in live], dtype=np.int64)
            fh.write(keys.tobytes())
            fh.write(prints.tobytes())
            fh.write("\n".join(i for _, i in live).encode())
        os.replace(tmp, p)
        os.replace(tmp_ids, p.with_name(p.name + ".ids"))

    @classmethod
    def load(cls, path: str | os.PathLike[str], dim: int, **params: Any) -> AnnIndex | None:
        """The index saved at ``path`` (None when missing, unreadable or of another dimension)."""
        p = Path(path)
        ids_path = p.with_name(p.name + ".ids")
        if not p.exists() or not ids_path.exists():
            return None
        try:
            raw = ids_path.read_bytes()
            end = raw.index(b"\n")
            magic, version, d, total, live = raw[:end].decode().split()
            if magic != "graphmem-ann" or version != "1" or int(d) != dim:
                return None
            total_n, live_n = int(total), int(live)
            off = end + 1
            keys = np.frombuffer(raw, dtype=np.int64, count=live_n, offset=off)
            prints = np.frombuffer(raw, dtype=np.int64, count=live_n, offset=off + 8 * live_n)
            names = raw[off + 16 * live_n :].decode().split("\n") if live_n else []
            if len(names) != live_n:
                return None
            out = cls(dim, **params)
            out.index.load(str(p))
            if len(out.index) != live_n:
                return None
        except (OSError, ValueError, RuntimeError, UnicodeDecodeError):
            return None
        out.id_of = [None] * total_n
        out.prints = [0] * total_n
        for k, pr, ident in zip(keys.tolist(), prints.tolist(), names):
            out.id_of[k] = ident
            out.prints[k] = pr
        out.key_of = dict(zip(names, keys.tolist()))
        return out


class AnnBuilder(threading.Thread):
    """Builds an :class:`AnnIndex` over a mirror's rows in the background (see ScanMatrix)."""

    def __init__(self, owner: Any, generation: int, params: dict[str, Any], threads: int) -> None:
        super().__init__(name="graphmem-ann-build", daemon=True)
        self.owner = owner
        self.generation = generation
        self.params = params
        self.threads = threads
        self.cancelled = threading.Event()

    def run(self) -> None:
        owner = self.owner
        try:
            index = AnnIndex(owner.dim, **self.params)
            ids = list(owner.ids)
            step = 16_384
            for start in range(0, len(ids), step):
                if self.cancelled.is_set() or owner.generation != self.generation:
                    return
                stop = min(len(ids), start + step)
                rows = np.arange(start, stop)
                vectors, prints = owner.rows_for_index(rows)
                index.add(ids[start:stop], vectors, prints, threads=self.threads)
            owner.ann_built(index, self)
        except Exception as e:  # a failed build leaves the exact scan in place
            owner.ann_failed(self, e)
