"""OpenAIEmbedder: embeddings from any OpenAI-compatible ``/embeddings`` endpoint.

Covers OpenAI, Ollama, vLLM and LiteLLM proxies through the ``openai`` SDK with ``base_url``.
Rows come back unit-normalised float32, in input order; the SDK's retries and timeout apply. The
dimension is given up front (graphmem stores it in the database file) and checked on every answer.

    embedder = OpenAIEmbedder("nomic-embed-text", dim=768, base_url="http://127.0.0.1:11434/v1")
    mem = Memory("agent.kuzu", user="alice", embedder=embedder)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphmem.errors import EmbedderError


class OpenAIEmbedder:
    """An :class:`~graphmem.embed.Embedder` over an OpenAI-compatible embeddings API."""

    def __init__(
        self,
        model: str,
        *,
        dim: int,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        batch_size: int = 256,
        timeout_s: float = 30.0,
        max_retries: int = 3,
    ) -> None:
        if dim < 1:
            raise EmbedderError(f"OpenAIEmbedder needs dim >= 1, got {dim}")
        self.model = model
        self.dim = dim
        self.name = f"openai:{model}"
        self.batch_size = max(1, batch_size)
        self._api_key, self._base_url = api_key, base_url
        self._timeout_s, self._max_retries = timeout_s, max_retries
        self._client = client

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client (created on first use: constructing does no I/O)."""
        if self._client is None:
            try:
                import openai

                self._client = openai.OpenAI(
                    api_key=self._api_key or "unused", base_url=self._base_url,
                    timeout=self._timeout_s, max_retries=self._max_retries,
                )
            except ImportError as e:
                raise EmbedderError("OpenAIEmbedder needs the openai package: pip install 'graphmem[integrations]'") from e
        return self._client

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 array of unit rows."""
        import openai

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            try:
                response = self.client.embeddings.create(model=self.model, input=chunk)
            except openai.OpenAIError as e:
                raise EmbedderError(f"{self.name}: embedding request failed: {e}") from e
            rows = sorted(response.data, key=lambda d: d.index)
            if len(rows) != len(chunk):
                raise EmbedderError(f"{self.name}: asked for {len(chunk)} embeddings, got {len(rows)}")
            for i, row in enumerate(rows):
                vector = np.asarray(row.embedding, dtype=np.float32)
                if vector.shape != (self.dim,):
                    raise EmbedderError(f"{self.name}: got {vector.shape[0]} dimensions, expected dim={self.dim}")
                out[start + i] = vector
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


__all__ = ["OpenAIEmbedder"]
