"""The fast paths behind the server's latency: the same answers as the slower ways they replaced."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from pydantic import TypeAdapter

from graphmem import HashEmbedder, Memory
from graphmem.retrieve import AssembledContext
from graphmem.server.routes_retrieval import context_json
from graphmem.store.vectors import ScanMatrix


def _filled(path: Path) -> None:
    with Memory(path, user="alice", embedder=HashEmbedder()) as mem:
        for i in range(30):
            mem.add_learning(f"when emailing Dana about invoice {i}, keep the subject under {i + 5} words — “naïve” ok",
                             tool="send_email", entities=["Dana"], topics=["email style"])


def test_context_json_equals_the_two_pass_encoding(tmp_path: Path) -> None:
    _filled(tmp_path / "m.kuzu")
    with Memory(tmp_path / "m.kuzu", user="alice", embedder=HashEmbedder()) as mem:
        for query, tool in (("email Dana about the invoice", "send_email"), ("", None), ("nothing matches", None)):
            ctx = mem.context(query, tool=tool)
            expected = TypeAdapter(AssembledContext).dump_python(ctx, mode="json")
            expected["prompt"] = ctx.to_prompt()
            body = context_json(ctx)
            assert json.loads(body) == expected
            assert list(json.loads(body))[-1] == "prompt"
            if tool:
                assert expected["learnings"] and expected["learnings"][0]["learning"]["id"]


def test_learnings_from_loaded_rows_are_independent_copies_and_follow_updates(tmp_path: Path) -> None:
    _filled(tmp_path / "m.kuzu")
    with Memory(tmp_path / "m.kuzu", user="alice", embedder=HashEmbedder()) as mem:  # rows read on open
        ident = mem.learnings()[0].id
        first = mem.store.get_learning(ident)
        first.topics.append("mutated by the caller")
        second = mem.store.get_learning(ident)
        assert "mutated by the caller" not in second.topics
        assert second == mem.store.get_learning(ident)
        mem.update_learning(ident, content="a new text for this learning")
        assert mem.store.get_learning(ident).content == "a new text for this learning"


def test_query_scan_matches_an_exact_product() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((500, 32)).astype(np.float32)
    matrix = ScanMatrix(32, "float32")
    matrix.bulk_load([f"id{i}" for i in range(500)], vectors.copy())
    query = rng.standard_normal(32).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = unit.astype(np.float64) @ (query / np.linalg.norm(query)).astype(np.float64)
    assert np.allclose(matrix.cosine(query), exact, atol=1e-5)
    rows = np.array([3, 77, 499])
    assert np.allclose(matrix.cosine(query, rows), exact[rows], atol=1e-5)
