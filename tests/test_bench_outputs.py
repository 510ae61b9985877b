"""Benchmarks write to the ignored results/local/ folder unless asked to save."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchmarks.common as common
from benchmarks import ingest


def test_ingest_writes_local_results_unless_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    small = ["--n", "4", "--batch", "2", "--singles", "1", "--open-size", "0", "--embedder", "hash", "--sizes", "1"]
    ingest.main(small)
    local = json.loads((tmp_path / "local" / "ingest.json").read_text())
    assert local["n"] == 4 and set(local["file_bytes"]) == {"1"}
    # a batch's time splits into the embedder's and the rest
    hashed = local["ingest"]["hash"]
    assert hashed["add_learnings_embed_ms_per_batch"] > 0 and hashed["add_learnings_rest_ms_per_batch"] > 0
    per_batch = 1000 * 2 / hashed["add_learnings_per_s"]
    assert hashed["add_learnings_embed_ms_per_batch"] + hashed["add_learnings_rest_ms_per_batch"] == pytest.approx(per_batch)
    assert (tmp_path / "local" / "ingest.png").exists()
    assert not (tmp_path / "ingest.json").exists()
    ingest.main([*small, "--save"])
    assert json.loads((tmp_path / "ingest.json").read_text())["n"] == 4


def test_embedding_clock_counts_embed_calls_and_puts_the_method_back() -> None:
    from graphmem import HashEmbedder

    embedder = HashEmbedder(8)
    with ingest._embedding_clock(embedder) as spent:
        assert embedder.embed(["one", "two"]).shape == (2, 8)
    assert spent[0] > 0 and "embed" not in vars(embedder)
    assert embedder.embed(["three"]).shape == (1, 8)


def test_write_path_accounts_for_every_statement_of_an_add(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import write_path

    monkeypatch.setattr(common, "RESULTS", tmp_path)
    result = write_path.main(["--at", "300", "--singles", "12", "--parts-rounds", "2"])
    local = json.loads((tmp_path / "local" / "write_path.json").read_text())
    assert local == result and not (tmp_path / "write_path.json").exists()
    adds = result["add_learning"]
    assert adds["calls"] == 12 and 0 < adds["p50_ms"] <= adds["p95_ms"]
    statements = adds["statements"]
    # every add creates its learning in one statement and writes its vector before one commit
    assert statements["CREATE the learning with its edges and RELATED"]["per_call"] == 1.0
    assert statements["MATCH (l:Learning {id: $id}) SET l.embedding = $embedding"]["per_call"] == 1.0
    assert statements["COMMIT"]["per_call"] >= 1.0 and statements["BEGIN TRANSACTION"]["per_call"] >= 1.0
    # the statements are part of each add's time (rounded to 0.01 ms each)
    assert sum(s["ms_per_call"] for s in statements.values()) <= adds["mean_ms"] + 0.01 * len(statements)
    assert set(result["parts_ms"]) == set(write_path.PARTS) and all(v > 0 for v in result["parts_ms"].values())
    # each add's embedding: computed once per add, waited for once, and the same texts alone
    embedding = adds["embedding_p50_ms"]
    assert set(embedding) == {"computing", "waited", "alone"} and all(v >= 0 for v in embedding.values())
    assert embedding["waited"] <= adds["p95_ms"]
