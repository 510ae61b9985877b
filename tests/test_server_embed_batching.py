"""A served memory coalesces concurrent query embeddings and answers what Memory.context answers."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from graphmem import HashEmbedder, Memory, Settings
from graphmem.embed_batching import CoalescingEmbedder
from graphmem.server.routes_retrieval import context_json
from tests.server_helpers import serve_in_thread
from tests.test_server_fastpath import FixedClock, _comparable, _fill

SETTINGS = Settings(server_max_body_bytes=50_000, random_seed=7)
CLIENTS = 8
ROUNDS = 3


class SlowEmbedder:
    """HashEmbedder's vectors after a pause that releases the interpreter lock, as a model's
    forward pass does (so queries pile up behind a running pass)."""

    name = "hash-384"
    dim = 384

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.sizes: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.sizes.append(len(texts))
        time.sleep(0.03)
        return self.inner.embed(texts)


def _queries() -> list[dict[str, Any]]:
    return [{"query": f"email Dana about invoice {i} and the renewal", "tool": "send_email" if i % 2 else "crm",
             "entities": ["Dana"] if i % 3 else []} for i in range(CLIENTS)]


def test_concurrent_contexts_share_embedding_passes_and_match_in_process(tmp_path: Path) -> None:
    _fill(tmp_path / "a.kuzu")
    shutil.copyfile(tmp_path / "a.kuzu", tmp_path / "b.kuzu")
    clock = FixedClock(datetime.now(UTC))
    qs = _queries()
    with Memory(tmp_path / "b.kuzu", user="alice", embedder=HashEmbedder(), settings=SETTINGS, clock=clock) as mem:
        expected = [_comparable(json.loads(context_json(mem.context(q["query"], tool=q["tool"],
                                                                       entities=q["entities"])))) for q in qs]
    slow = SlowEmbedder()
    answers: dict[tuple[int, int], Any] = {}
    errors: list[str] = []
    with serve_in_thread(tmp_path / "a.kuzu", settings=SETTINGS, mcp=False, clock=clock, embedder=slow) as served:
        wrapped = served.owner.root.deps.embedder
        assert isinstance(wrapped, CoalescingEmbedder) and wrapped.inner is slow
        barrier = threading.Barrier(CLIENTS)

        def client(n: int) -> None:
            with httpx.Client(base_url=served.url, headers=served.headers("alice"), timeout=60) as c:
                for r in range(ROUNDS):
                    barrier.wait(30)
                    resp = c.post("/v1/context", json=qs[n])
                    if resp.status_code != 200:
                        errors.append(resp.text)
                        continue
                    answers[(n, r)] = _comparable(resp.json())

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
    assert errors == []
    for (n, _r), answer in answers.items():
        assert answer == expected[n]
    assert len(answers) == CLIENTS * ROUNDS
    assert wrapped.coalesced > 0 and max(slow.sizes) > 1  # some queries shared a pass


def test_embed_batch_1_turns_coalescing_off(tmp_path: Path) -> None:
    _fill(tmp_path / "a.kuzu")
    slow = SlowEmbedder()
    with serve_in_thread(tmp_path / "a.kuzu", settings=Settings(server_embed_batch=1), mcp=False,
                         embedder=slow) as served:
        assert served.owner.root.deps.embedder is slow
