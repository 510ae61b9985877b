"""Bulk loads on a Bolt store (UNWIND batches in one transaction) against Kùzu's COPY path: the
same learnings, anchor edges, RELATED edges and node counts, and the same context() answers.
Skipped when neo4j / arcadedb_embedded are missing or GRAPHMEM_SKIP_BOLT=1."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from graphmem import HashEmbedder, Memory
from graphmem.models import Learning
from graphmem.store import KuzuGraphStore
from graphmem.store.bolt import open_bolt_store
from graphmem.store.bolt.testing import ArcadeServer
from tests.conftest import offline_llm

pytestmark = pytest.mark.bolt

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _learnings() -> list[Learning]:
    tools, ents, tops = ["send_email", "schedule", "call"], ["Acme", "Dana", "Bob", "CRM"], ["billing", "meetings", "style"]
    out = []
    for i in range(23):
        when = NOW - timedelta(days=30 - i)
        out.append(Learning(user_id="alice" if i % 3 else "bob", content=f"rule {i}: {tools[i % 3]} with {ents[i % 4]} about {tops[i % 3]}",
                            tool=tools[i % 3], entities=[ents[i % 4], ents[(i + 1) % 4]], topics=[tops[i % 3]],
                            helpful=i % 4, harmful=i % 2, created_at=when, updated_at=when))
    return out


def _related(items: list[Learning]) -> list[tuple[str, str, str, str, int]]:
    pairs: dict[tuple[str, str, str, str], int] = {}
    for l in items:
        if l.user_id == "alice":
            for e in l.entities:
                key = ("Entity", e, "Topic", l.topics[0])
                pairs[key] = pairs.get(key, 0) + 1
    return [(*k, w) for k, w in pairs.items()]


def test_bulk_load_matches_kuzu(tmp_path: Path, bolt_url: str, arcade: ArcadeServer) -> None:
    emb = HashEmbedder()
    items = _learnings()
    vectors = emb.embed([l.content for l in items]).astype(np.float32)
    kuzu = KuzuGraphStore(tmp_path / "k.kuzu", dim=emb.dim, embedder_name=emb.name)
    bolt = open_bolt_store(bolt_url, dim=emb.dim, embedder_name=emb.name, auth=arcade.auth)
    try:
        bolt.bulk_rows = 4  # several UNWIND batches per label
        for store in (kuzu, bolt):
            store.bulk_insert_learnings(items, vectors)
            store.bulk_insert_related(_related(items), user_id="alice")
        assert len(bolt.learning_catalog) == len(items)  # the mirrors were rebuilt
        k_stats, b_stats = kuzu.stats(), bolt.stats()
        assert {k: v for k, v in k_stats.items() if v and k != "Meta"} == {k: v for k, v in b_stats.items() if v and k != "Meta"}
        assert b_stats["Learning"] == len(items) and b_stats["RELATED"] == len(_related(items))
        # graph expansion in Cypher (the analysts' path; ranking reads the anchor mirror): the same
        # rows on both engines, and the per-anchor cap honoured
        anchors = {"entity": ["Acme", "Dana"], "tool": ["call"]}
        assert sorted(kuzu.one_hop_learnings(anchors)) == sorted(bolt.one_hop_learnings(anchors))
        capped = bolt.one_hop_learnings(anchors, cap=2)
        assert capped and all(sum(1 for _, k, n in capped if (k, n) == a) <= 2 for a in {(k, n) for _, k, n in capped})
        assert kuzu.related_neighbours(["Acme"], ["billing"], 10, user="alice") == \
               bolt.related_neighbours(["Acme"], ["billing"], 10, user="alice")
        hop = [("topic", "meetings"), ("entity", "Bob")]
        assert sorted(kuzu.second_hop_learnings(hop, 100)) == sorted(bolt.second_hop_learnings(hop, 100))
        assert len(bolt.second_hop_learnings(hop, 1)) == 2
        for l in bolt.get_learnings([items[0].id, items[7].id]):
            want = next(x for x in items if x.id == l.id)
            assert (l.content, l.tool, sorted(l.entities), l.topics, l.helpful, l.harmful) == \
                   (want.content, want.tool, sorted(want.entities), want.topics, want.helpful, want.harmful)
    finally:
        kuzu.close()
        bolt.close()
    answers = []
    for db, auth in ((tmp_path / "k.kuzu", None), (bolt_url, arcade.auth)):
        with Memory(db, user="alice", embedder=emb, llm=offline_llm(), bolt_auth=auth, clock=lambda: NOW) as mem:
            answers.append([[s.learning.id for s in mem.context(q, entities=e).learnings]
                            for q, e in (("email Acme", ["Acme"]), ("meetings with Bob", []), ("billing", ["CRM"]))])
    assert answers[0] == answers[1] and any(answers[0])
