"""The mirror's optional HNSW index: when to keep one, building, loading, repairing and saving it,
and asking it for the nearest eligible rows.

:class:`AnnRows` is a mixin of :class:`graphmem.store.vectors.ScanMatrix`: from
``Settings.vector_ann_min_rows`` rows on (0, the default: never) the mirror keeps an
:class:`graphmem.store.ann.AnnIndex` over its rows, built in a background thread
(:class:`graphmem.store.ann.AnnBuilder`), saved beside the database file, kept in step with every
write of the rows, and repaired from the saved file on the next open. The exact scan remains the
fallback and the reference (:meth:`AnnRows.ann_search`).
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from graphmem.store import ann
from graphmem.store.vector_math import CHUNK, quantise, unit_rows


class AnnRows:
    """The HNSW part of the vector mirror (a mixin: the host keeps the rows ``_m``, their
    ``_scale``, ``ids`` and ``rows``, and calls :meth:`_init_ann` from its constructor)."""

    dim: int
    ids: list[str]
    rows: dict[str, int]
    _m: np.ndarray
    _scale: np.ndarray

    def _init_ann(self) -> None:
        """The index's settings and state: none until the size asks for one."""
        # the approximate index (graphmem/store/ann.py); 0 rows: never
        self.ann_min_rows = 0
        # ef_search 1024: recall@10 0.943 at 1M (docs/benchmarks.md); 64 gave 0.67
        self.ann_params: dict[str, Any] = {"connectivity": 16, "expansion_add": 64, "expansion_search": 1024}
        self.ann_max_fetch = 4096  # over-fetch at most this many neighbours per query
        self.ann_build_threads = 1
        self.ann_path: str | None = None  # where the index is saved (None: kept in memory only)
        self.ann_save = True  # False for a read-only store: the saved index is read, never written
        self.ann: ann.AnnIndex | None = None
        self.ann_error: str | None = None
        self.generation = 0  # bumped by every full (re)load of the rows
        self._builder: ann.AnnBuilder | None = None
        self._dirty: set[str] = set()  # ids written while the index was being built or loaded
        self._ann_lock = threading.RLock()
        self._ann_changes = 0  # index writes since it was last saved
        self._previous: ann.AnnIndex | None = None  # a ready index kept across a reload

    def _want_ann(self, n: int) -> bool:
        return self.ann_min_rows > 0 and n >= self.ann_min_rows and ann.available()

    @property
    def ann_ready(self) -> bool:
        """True when the HNSW index answers queries (built or loaded, and up to date)."""
        return self.ann is not None

    def _ann_reload_starts(self) -> None:
        """A full reload starts: stop a build; keep a ready index to repair after the load."""
        with self._ann_lock:
            self.generation += 1
            if self._builder is not None:
                self._builder.cancelled.set()
                self._builder = None
            self._previous = self.ann
            self.ann = None
            self._dirty = set()

    def drop_ann(self) -> None:
        """Forget the index (and stop a build in progress)."""
        with self._ann_lock:
            if self._builder is not None:
                self._builder.cancelled.set()
                self._builder = None
            self.ann = None
            self._previous = None
            self._dirty = set()

    def ensure_ann(self) -> None:
        """Have an index when the size asks for one: repair the one kept across a reload, else
        load the saved one (``ann_path``) and repair it, else start a background build."""
        with self._ann_lock:
            previous, self._previous = self._previous, None
            if not self._want_ann(len(self.ids)):
                self.ann = None
                return
            if self.ann is not None or self._builder is not None:
                return
            index = previous
            if index is None and self.ann_path is not None:
                index = ann.AnnIndex.load(self.ann_path, self.dim, **self.ann_params)
            if index is not None and self._repair(index):
                self.ann = index
                return
            self.start_ann_build()

    def start_ann_build(self) -> None:
        """Build the index in a background thread (queries scan exactly until it is ready)."""
        with self._ann_lock:
            if self._builder is not None:
                return
            self._dirty = set()
            self._builder = ann.AnnBuilder(self, self.generation, dict(self.ann_params), self.ann_build_threads)
            self._builder.start()

    def wait_ann(self, timeout: float | None = None) -> bool:
        """Wait for a background build to finish; True when an index is ready."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
        return self.ann is not None

    def rows_for_index(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unit float32 vectors of ``rows`` and the fingerprints of their int8 codes."""
        idx = np.asarray(rows, dtype=np.int64)
        if self._m.dtype == np.int8:
            codes = self._m[idx]
            return codes.astype(np.float32) * self._scale[idx, None], ann.fingerprints(codes)
        vectors = self._m[idx].copy()
        return vectors, ann.fingerprints(quantise(vectors)[0])

    def _fingerprints_all(self) -> np.ndarray:
        n = len(self.ids)
        out = np.zeros(n, dtype=np.int64)
        for start in range(0, n, CHUNK):
            stop = min(n, start + CHUNK)
            codes = self._m[start:stop] if self._m.dtype == np.int8 else quantise(self._m[start:stop])[0]
            out[start:stop] = ann.fingerprints(codes)
        return out

    def _repair(self, index: ann.AnnIndex) -> bool:
        """Bring ``index`` in line with the rows (re-add changed or new rows, drop removed ones);
        False when too much differs (more than a fifth of the rows): rebuild instead."""
        n = len(self.ids)
        prints = self._fingerprints_all()
        saved = np.asarray(index.prints, dtype=np.int64)
        keys = np.fromiter((index.key_of.get(i, -1) for i in self.ids), dtype=np.int64, count=n)
        known = keys >= 0
        stale = ~known
        stale[known] |= saved[keys[known]] != prints[known]
        gone = len(index) - int(known.sum())
        if int(stale.sum()) + gone > max(1000, n // 5):
            return False
        if gone:
            live = set(self.ids)
            index.remove([i for i in list(index.key_of) if i not in live])
        rows = np.flatnonzero(stale)
        for start in range(0, rows.size, 4096):
            part = rows[start : start + 4096]
            vectors, fps = self.rows_for_index(part)
            index.add([self.ids[r] for r in part.tolist()], vectors, fps, threads=self.ann_build_threads)
        if rows.size or gone:
            self._ann_changes += 1
        return True

    def _ann_touch(self, ids: list[str]) -> None:
        """Rows of ``ids`` changed (written, removed or moved): update the index or note them."""
        if self.ann is None and self._builder is None:
            return
        with self._ann_lock:
            if self._builder is not None:
                self._dirty.update(ids)
            elif self.ann is not None:
                self._apply(self.ann, ids)

    def _apply(self, index: ann.AnnIndex, ids: list[str] | set[str]) -> None:
        present = [i for i in ids if i in self.rows]
        absent = [i for i in ids if i not in self.rows]
        if absent:
            index.remove(absent)
        if present:
            vectors, fps = self.rows_for_index(np.asarray([self.rows[i] for i in present], dtype=np.int64))
            index.add(present, vectors, fps)
        self._ann_changes += 1

    def ann_built(self, index: ann.AnnIndex, builder: ann.AnnBuilder) -> None:
        """Called by the builder thread: take the index (unless a reload made it stale)."""
        with self._ann_lock:
            if builder is not self._builder or builder.generation != self.generation:
                return
            self._apply(index, self._dirty)
            self._dirty = set()
            self._builder = None
            self.ann = index
            self.ann_error = None
        self.save_ann()

    def ann_failed(self, builder: ann.AnnBuilder, error: Exception) -> None:
        """Called by the builder thread when the build failed: keep scanning exactly."""
        with self._ann_lock:
            if builder is self._builder:
                self._builder = None
                self.ann_error = f"{type(error).__name__}: {error}"

    def save_ann(self) -> None:
        """Save the index beside the database file when it changed since it was last saved."""
        with self._ann_lock:
            if self.ann is None or self.ann_path is None or not self.ann_save or self._ann_changes == 0:
                return
            try:
                self.ann.save(self.ann_path)
                self._ann_changes = 0
            except (OSError, RuntimeError) as e:
                self.ann_error = f"saving {self.ann_path} failed: {e}"

    def close_ann(self) -> None:
        """Stop a build and save the index (when the store closes)."""
        with self._ann_lock:
            if self._builder is not None:
                self._builder.cancelled.set()
                self._builder = None
        self.save_ann()

    def ann_search(self, query: np.ndarray, mask: np.ndarray, n: int, eligible: int) -> np.ndarray | None:
        """Rows allowed by ``mask`` among the HNSW index's nearest to ``query`` (at least
        min(``n``, ``eligible``) of them, in the index's order: rerank them exactly); None when
        there is no index or the over-fetch found too few eligible rows (the caller then scans
        exactly). ``eligible`` = ``mask.sum()``."""
        total = len(self.ids)
        index = self.ann
        if index is None or total == 0 or n <= 0:
            return None
        want = min(n, eligible)
        share = eligible / total
        ef = int(self.ann_params.get("expansion_search", 64))
        k = min(self.ann_max_fetch, total, max(ef, 2 * want, math.ceil(2 * want / max(share, 1e-9))))
        with self._ann_lock:
            if self.ann is not index:
                return None
            found = index.search(unit_rows(query)[0], k, ef)
        rows = np.fromiter((self.rows.get(i, -1) for i in found), dtype=np.int64, count=len(found))
        rows = rows[rows >= 0]
        rows = rows[mask[rows]]
        if rows.size < want:
            return None
        return rows
