"""The bundled embedder sets torch's thread count deliberately: one for a query, the default for batches."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphmem import Memory, Settings


@pytest.mark.slow
def test_query_uses_one_thread_and_batches_the_default() -> None:
    torch = pytest.importorskip("torch")
    from graphmem.embed import SentenceTransformerEmbedder

    default = torch.get_num_threads()
    emb = SentenceTransformerEmbedder(query_threads=1, batch_threads=0)
    one = emb.embed(["Email Dana about the renewal"])
    assert torch.get_num_threads() == 1
    both = emb.embed(["Email Dana about the renewal", "Book a table for two"])
    assert torch.get_num_threads() == default
    np.testing.assert_allclose(one[0], both[0], atol=1e-5)  # the thread count does not change the vector


def test_memory_passes_the_thread_settings_to_its_default_embedder() -> None:
    mem = Memory(None, settings=Settings(embed_query_threads=2, embed_batch_threads=1))
    try:
        assert (mem.embedder.query_threads, mem.embedder.batch_threads) == (2, 1)  # type: ignore[attr-defined]
    finally:
        mem.close()


def test_memory_passes_the_openmp_setting_to_its_default_embedder() -> None:
    for passive in (True, False):
        mem = Memory(None, settings=Settings(embed_passive_omp=passive))
        try:
            assert mem.embedder.passive_omp is passive  # type: ignore[attr-defined]
        finally:
            mem.close()


_PROBE = """
import os, sys
from graphmem.embed import _passive_openmp
before = "torch" in sys.modules
first = _passive_openmp()
policy = os.environ.get("OMP_WAIT_POLICY")
import torch
print(before, first, policy, _passive_openmp())
"""


@pytest.mark.parametrize(("policy", "expected"), [(None, "False True PASSIVE False"),
                                                  ("ACTIVE", "False False ACTIVE False")])
def test_openmp_waits_passively_unless_the_environment_or_torch_decided_already(
    policy: str | None, expected: str
) -> None:
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.split("\n")[-2] == expected  # set only before torch loads, never over the environment's
