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
    assert (tmp_path / "local" / "ingest.png").exists()
    assert not (tmp_path / "ingest.json").exists()
    ingest.main([*small, "--save"])
    assert json.loads((tmp_path / "ingest.json").read_text())["n"] == 4
