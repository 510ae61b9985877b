"""KuzuGraphStore: the Kùzu store, assembled from the engine (``kuzu_store.KuzuBase``) and one
store per concern (``learnings.py``, ``events.py``, ...; see :mod:`graphmem.store.interfaces`)."""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from typing import TYPE_CHECKING

from graphmem.store import snapshot
from graphmem.store.analytics import AnalyticsStore
from graphmem.store.bulk import BulkStore
from graphmem.store.distill import DistillStore
from graphmem.store.domains import DomainStore
from graphmem.store.events import EventStore
from graphmem.store.evolution import EvolutionStore
from graphmem.store.facts import FactStore
from graphmem.store.forget import ForgetStore
from graphmem.store.learnings import LearningStore
from graphmem.store.loop import LoopStore
from graphmem.store.prompts import PromptStore
from graphmem.store.regression import RegressionStore
from graphmem.store.retrieval import RetrievalStore
from graphmem.store.search import SearchStore
from graphmem.store.summaries import SummaryStore
from graphmem.store.traces import TraceStore
from graphmem.store.tuning import TuningStore

if TYPE_CHECKING:
    from graphmem.store.interfaces import GraphStore


class KuzuGraphStore(BulkStore, LearningStore, EventStore, RetrievalStore, SearchStore, AnalyticsStore, LoopStore, SummaryStore, TraceStore,
                     ForgetStore, FactStore, PromptStore, DistillStore, RegressionStore, EvolutionStore, TuningStore,
                     DomainStore):
    """The Kùzu implementation of :class:`GraphStore`."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        dim: int,
        embedder_name: str,
        read_only: bool = False,
        vector_storage: str = "auto",
        vector_int8_min_rows: int = 50_000,
        buffer_pool_mb: int = 0,
        vector_ann_min_rows: int = 0,
        mirror_snapshot: bool = True,
        mirror_snapshot_min_rows: int = 10_000,
    ) -> None:
        self.mirror_snapshot = bool(mirror_snapshot)
        self.mirror_snapshot_min_rows = int(mirror_snapshot_min_rows)
        super().__init__(path, dim=dim, embedder_name=embedder_name, read_only=read_only, buffer_pool_mb=buffer_pool_mb)
        vectors = self.learning_catalog.vectors
        if self.path is not None:  # the HNSW index is saved beside the file (graphmem/store/ann.py)
            vectors.ann_path = str(self.path) + ".ann"
            vectors.ann_save = not read_only
        vectors.configure(vector_storage, vector_int8_min_rows, vector_ann_min_rows)  # before the load
        if not self._load_snapshot():
            self.reload_catalogs()

    def _load_snapshot(self) -> bool:
        """Fill the catalogs from the snapshot beside the file (graphmem/store/snapshot.py) when
        it matches the file; False: the caller loads them from the file. A writable store then
        deletes the snapshot before its first write."""
        if self.path is None:
            return False
        ok = False
        with self._lock.exclusive():
            if self.mirror_snapshot and self._open_print is not None:
                self.forget_cached_learnings()
                self.forget_summary_texts()
                try:
                    ok = snapshot.load(self, self._open_print)
                except Exception:  # never worse than no snapshot: the caller reloads from the file
                    ok = False
            self._snapshot_loaded = ok
            if not self.read_only:
                if not ok:
                    snapshot.discard(self.path)
                snapshot.discard_temporaries(self.path)
                self._snapshot_on_disk = ok
        return ok

    def close(self) -> None:
        """Close the database; the vector mirror's HNSW index is saved first when it changed."""
        if not self.closed:
            with suppress(Exception):
                self.learning_catalog.vectors.close_ann()
        super().close()

    def configure_vectors(self, storage: str, int8_min_rows: int) -> None:
        """Change how the learnings' vector mirror is stored ("auto", "float32", "int8"; see
        graphmem/store/vectors.py); re-reads the file when int8 rows must become float32."""
        with self._lock.exclusive():
            if not self.learning_catalog.vectors.configure(storage, int8_min_rows):
                self.reload_catalogs()

    def reload_catalogs(self) -> None:
        """Rebuild the in-memory catalogs from the file (on open, and after raw Cypher writes).

        Holds the store exclusively, so no ranking reads half-rebuilt mirrors.
        """
        with self._lock.exclusive():
            self.forget_cached_learnings()
            self.forget_summary_texts()
            self.load_learning_catalog()
            self.load_event_catalog()
        release_unused_memory()


def release_unused_memory() -> None:
    """Hand memory freed after a catalog load back to the OS (Arrow's pool and glibc's heap keep
    it otherwise: ~290 MB of resident memory at 100k learnings)."""
    with suppress(Exception):
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        with suppress(Exception):
            import ctypes

            ctypes.CDLL("libc.so.6").malloc_trim(0)


if TYPE_CHECKING:  # mypy checks the Kùzu store against every Protocol of store/interfaces.py
    _SATISFIES: type[GraphStore] = KuzuGraphStore
