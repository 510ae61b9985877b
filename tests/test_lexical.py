"""The in-memory lexical (BM25) mirror: scores, per-user statistics, updates, reopen, hot path."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from graphmem import HashEmbedder, Memory
from graphmem.retrieve.candidates import fulltext_candidates
from graphmem.store.catalog import LearningCatalog
from graphmem.store.lexical import LexicalIndex
from graphmem.store.text import search_text

CORPUS = [
    ("alice", False, "Never send attachments over 10 MB to Acme"),
    ("alice", False, "Keep emails to Acme short: three paragraphs at most"),
    ("alice", True, "Always confirm the time zone before scheduling a meeting"),
    ("bob", False, "Bob prefers bullet points in email summaries"),
    ("bob", False, "Attach the latest invoice when emailing billing at Globex"),
    ("bob", False, "Email Globex billing before the deadline, never after"),
    ("carol", False, "Deploy the service only after the tests pass"),
]


def reference_bm25(docs: list[tuple[str, bool, str]], user: str, query: str, k1: float = 1.2, b: float = 0.75) -> dict[int, float]:
    """Textbook BM25 (Lucene idf) over the documents ``user`` sees, by document index."""
    visible = {i: search_text(text).split() for i, (u, shared, text) in enumerate(docs) if shared or u == user}
    n = len(visible)
    avgdl = sum(len(t) for t in visible.values()) / n
    out: dict[int, float] = {}
    for term in dict.fromkeys(search_text(query).split()):
        df = sum(1 for t in visible.values() if term in t)
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, toks in visible.items():
            tf = toks.count(term)
            if tf:
                out[i] = out.get(i, 0.0) + idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(toks) / avgdl))
    return out


def build(docs: list[tuple[str, bool, str]]) -> LexicalIndex:
    index = LexicalIndex()
    for row, (user, shared, text) in enumerate(docs):
        index.add(row, user, shared, search_text(text))
    return index


@pytest.mark.parametrize("user,query", [
    ("bob", "email billing Globex"), ("alice", "Acme email attachments"), ("bob", "never send meeting"),
    ("carol", "time zone tests"), ("alice", "paragraphs paragraphs short"),
])
def test_scores_equal_reference_bm25(user: str, query: str) -> None:
    index = build(CORPUS)
    expected = reference_bm25(CORPUS, user, query)
    got = dict(index.search(query, user, k=100))
    assert expected, "the query should match something"
    assert got.keys() == expected.keys()
    for row, score in expected.items():
        assert got[row] == pytest.approx(score, rel=1e-12)
    loaded = LexicalIndex()
    loaded.load([search_text(t) for _, _, t in CORPUS], [u for u, _, _ in CORPUS], [s for _, s, _ in CORPUS])
    assert dict(loaded.search(query, user, k=100)) == pytest.approx(got, rel=1e-12)
    other = dict(index.search(query, user, k=100, k1=2.0, b=0.3))
    assert other == pytest.approx(reference_bm25(CORPUS, user, query, k1=2.0, b=0.3), rel=1e-12)


@pytest.mark.parametrize("user,query", [("bob", "email billing Globex"), ("alice", "Acme email attachments short")])
def test_few_postings_among_many_rows_score_as_the_reference(user: str, query: str) -> None:
    """Few postings against many rows are summed by sorting them, not over an array of every row:
    the same rows (ascending) and the same scores."""
    docs = CORPUS + [(("alice", "bob", "carol")[i % 3], False, f"filler row {i} about kayaks and lanterns")
                     for i in range(400)]
    index = build(docs)
    rows, scores = index.scores(query, user)
    expected = reference_bm25(docs, user, query)
    assert sum(index._postings(t)[0].size for t in index.query_terms(query)) * 8 < len(docs)  # the sorted sums
    assert rows.tolist() == sorted(expected)
    assert scores.tolist() == pytest.approx([expected[r] for r in rows.tolist()], rel=1e-12)


def test_search_orders_truncates_and_masks() -> None:
    index = build(CORPUS)
    hits = index.search("email billing Globex never", "bob", k=2)
    assert len(hits) == 2 and hits[0][1] >= hits[1][1]
    assert {r for r, _ in hits} <= {3, 4, 5}
    mask = np.ones(len(CORPUS), dtype=bool)
    mask[hits[0][0]] = False
    masked = index.search("email billing Globex never", "bob", k=10, mask=mask)
    assert hits[0][0] not in {r for r, _ in masked} and masked
    assert index.search("email", "nobody", k=5) == []  # nobody sees no shared doc with "email"
    assert [r for r, _ in index.search("time zone", "nobody", k=5)] == [2]  # the shared one


def test_other_users_volume_does_not_change_scores() -> None:
    index = build(CORPUS)
    queries = ["email billing Globex", "never send attachments", "bullet points summaries deadline"]
    before = {q: index.search(q, "bob", k=10) for q in queries}
    rng = np.random.default_rng(0)
    words = ["email", "billing", "globex", "never", "send", "acme", "bullet", "point", "deadline", "invoice", "attach"]
    for i in range(500):
        index.add(100 + i, "alice", False, " ".join(rng.choice(words, size=int(rng.integers(3, 12)))))
    after = {q: index.search(q, "bob", k=10) for q in queries}
    assert after == before
    assert index.stats("bob") == build(CORPUS).stats("bob")
    assert index.doc_freq("email", "alice") > index.doc_freq("email", "bob")


def _loaded(docs: list[tuple[str, bool, str]]) -> LexicalIndex:
    index = LexicalIndex()
    index.load([search_text(t) for _, _, t in docs], [u for u, _, _ in docs], [s for _, s, _ in docs])
    return index


def _mapped(docs: list[tuple[str, bool, str]]) -> LexicalIndex:
    """Loaded as a snapshot loads it: the texts stay in an Arrow array, read when asked for."""
    import pyarrow as pa

    parts = build(docs).snapshot_arrays(len(docs))
    parts["texts"] = pa.array(parts["texts"], type=pa.string())
    index = LexicalIndex()
    index.load_snapshot_arrays(parts)
    return index


def test_snapshot_texts_stay_in_the_arrow_array_until_written() -> None:
    index = _mapped(CORPUS)
    assert index._docs._over == {}  # nothing turned into Python strings on load
    assert len(index) == len(CORPUS) and 3 in index and len(CORPUS) not in index
    assert index.terms_of(1) == Counter(search_text(CORPUS[1][2]).split())
    index.add(1, "alice", False, search_text("Keep emails to Acme very short"))
    index.remove(2)
    assert len(index) == len(CORPUS) - 1 and 2 not in index and index.terms_of(2) == Counter()
    assert dict(index._docs) == {r: search_text(t) for r, (_, _, t) in enumerate(CORPUS) if r not in (1, 2)} | {
        1: search_text("Keep emails to Acme very short")}


@pytest.mark.parametrize("make", [build, _loaded, _mapped], ids=["incremental", "loaded", "snapshot"])
def test_update_owner_change_remove_and_move(make: Callable[[list[tuple[str, bool, str]]], LexicalIndex]) -> None:
    index = make(CORPUS)
    index.add(3, "bob", False, search_text("Bob wants tables, not bullets"))
    assert 3 not in {r for r, _ in index.search("points summaries", "bob", k=10)}
    assert 3 in {r for r, _ in index.search("tables", "bob", k=10)}
    index.set_owner(4, "bob", True)  # shared now: alice sees it and counts it
    assert 4 in {r for r, _ in index.search("invoice", "alice", k=10)}
    assert index.stats("alice")[0] == 4
    index.remove(5)
    assert 5 not in {r for r, _ in index.search("deadline", "bob", k=10)}
    index.move(6, 5)  # swap-remove: the last row takes the freed one
    assert index.search("deploy service", "carol", k=5)[0][0] == 5
    fresh = LexicalIndex()
    docs = {0: CORPUS[0], 1: CORPUS[1], 2: CORPUS[2], 4: ("bob", True, CORPUS[4][2]), 5: CORPUS[6]}
    docs[3] = ("bob", False, "Bob wants tables, not bullets")
    for row, (u, s, t) in docs.items():
        fresh.add(row, u, s, search_text(t))
    for user in ("alice", "bob", "carol"):
        for q in ("bullets tables invoice", "deploy tests", "acme email never"):
            assert index.search(q, user, k=10) == fresh.search(q, user, k=10)


def _catalog_hits(mem: Memory, query: str, user: str) -> dict[str, float]:
    catalog = mem.store.learning_catalog
    mask = np.ones(len(catalog), dtype=bool)
    return {catalog.ids[r]: s for r, s in fulltext_candidates(catalog, query, user, mask, 50)}


def test_learning_updates_retire_and_catalog_delete(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory("bob")
    a = mem.add_learning("Send the weekly report to Globex on Fridays")
    b = mem.add_learning("Globex wants invoices as PDF attachments")
    assert a.id in _catalog_hits(mem, "weekly report", "bob")
    mem.update_learning(a.id, content="Send the monthly digest to Globex")
    assert a.id not in _catalog_hits(mem, "weekly report", "bob")
    assert a.id in _catalog_hits(mem, "monthly digest", "bob")
    mem.retire_learning(b.id)
    ranked = [h.id for h in mem.search("invoices PDF", over="learnings", k=5)]
    assert b.id not in ranked  # retired: filtered out of the candidates by the eligibility mask
    catalog: LearningCatalog = mem.store.learning_catalog
    catalog.remove(a.id)  # what a delete does to the mirror (swap-remove)
    assert a.id not in _catalog_hits(mem, "monthly digest Globex", "bob")
    assert b.id in _catalog_hits(mem, "invoices Globex", "bob")
    assert catalog.lexical.stats("bob")[0] == 1


def _snapshot(mem: Memory, queries: list[str], users: list[str]) -> dict[tuple[str, str], dict[str, float]]:
    return {(q, u): _catalog_hits(mem, q, u) for q in queries for u in users}


def test_reopen_equals_incremental(make_memory: Callable[..., Memory]) -> None:
    alice = make_memory("alice")
    made = alice.add_learnings([{"content": t} for u, _, t in CORPUS if u == "alice"])
    alice.update_learning(made[0].id, content="Never send attachments over 25 MB to Acme or Globex")
    alice.update_learning(made[1].id, shared=True)
    bob = alice.for_user("bob")
    bob.add_learnings([{"content": t} for u, _, t in CORPUS if u == "bob"])
    users, queries = ["alice", "bob", "carol"], ["email billing Globex", "acme attachments MB", "time zone meeting"]
    before = _snapshot(alice, queries, users)
    stats = {u: alice.store.learning_catalog.lexical.stats(u) for u in users}
    assert any(before.values())
    alice.close()
    again = make_memory("alice")
    after = _snapshot(again, queries, users)
    assert after.keys() == before.keys()
    for key, hits in before.items():
        assert after[key] == pytest.approx(hits, rel=1e-12)
    assert {u: again.store.learning_catalog.lexical.stats(u) for u in users} == stats


def test_bob_context_unchanged_by_alices_learnings(make_memory: Callable[..., Memory]) -> None:
    bob = make_memory("bob")
    bob.add_learnings([{"content": t} for u, _, t in CORPUS if u == "bob"])
    query = "email Globex billing about the invoice"

    def view() -> list[tuple[str, Any]]:
        ctx = bob.context(query)
        return [(s.learning.id, s.signals.get("bm25")) for s in ctx.learnings]

    before = view()
    assert any(bm25 for _, bm25 in before)
    alice = bob.for_user("alice")
    words = ["email", "billing", "globex", "invoice", "never", "send", "acme", "deadline", "attach", "report"]
    rng = np.random.default_rng(1)
    alice.add_learnings([
        {"content": " ".join(rng.choice(words, size=8)) + f" rule {i}"} for i in range(500)
    ])
    assert bob.store.learning_catalog.lexical.stats("alice")[0] >= 500
    assert view() == before


class _ReadSpy:
    """Counts the Cypher a store reads, by whether it calls Kùzu's FTS procedure."""

    def __init__(self, mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fts: list[str] = []
        self.reads = 0
        original = mem.store.read

        def read(cypher: str, *args: Any, **kwargs: Any) -> Any:
            self.reads += 1
            if "QUERY_FTS_INDEX" in cypher:
                self.fts.append(cypher)
            return original(cypher, *args, **kwargs)

        monkeypatch.setattr(mem.store, "read", read)


def test_context_and_event_search_never_query_kuzu_fts(make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch) -> None:
    mem = make_memory("alice")
    mem.add_learnings([{"content": t} for _, _, t in CORPUS])
    mem.record_events([{"kind": "message", "content": "Caroline ran a charity race for mental health", "role": "user"},
                       {"kind": "message", "content": "Melanie painted a sunrise by the lake", "role": "user"}])
    spy = _ReadSpy(mem, monkeypatch)
    ctx = mem.context("email Acme attachments")
    hits = mem.search("charity race", over="events", k=2)
    mem.search("Acme attachments", over="all", k=3)
    assert spy.fts == []
    assert any("bm25" in s.signals for s in ctx.learnings)
    assert hits and any(r.startswith("fulltext") for r in hits[0].reasons)
    # the analysts' index is still there and still answers
    assert mem.store.fulltext_learnings("acme", 5)


def test_event_bm25_uses_the_users_own_events(make_memory: Callable[..., Memory]) -> None:
    bob = make_memory("bob")
    bob.record_events([{"kind": "message", "content": c, "role": "user"} for c in
                       ("The charity race raised money", "We walked by the lake", "Race day was sunny")])

    def bm25() -> list[str]:
        return [r for h in bob.search("charity race lake", over="events", k=3) for r in h.reasons if r.startswith("fulltext")]

    before = bm25()
    alice = bob.for_user("alice")
    alice.record_events([{"kind": "message", "content": f"race {i} at the lake", "role": "user"} for i in range(200)])
    assert before and bm25() == before
    catalog = bob.store.event_catalog
    assert catalog.lexical.stats("bob")[0] == 3 and catalog.lexical.stats("alice")[0] == 200


def test_single_user_matches_the_same_learnings_as_kuzu_fts(make_memory: Callable[..., Memory]) -> None:
    """With one user the mirror finds the learnings Kùzu's FTS index finds (scores differ in
    detail: Kùzu's tokenizer drops digits and its idf is not Lucene's). Kùzu's index is built on
    demand over existing rows, which leaves out English stop words ("never"): the queries have none."""
    mem = make_memory("alice", embedder=HashEmbedder())
    mem.add_learnings([{"content": t} for _, _, t in CORPUS])
    catalog = mem.store.learning_catalog
    for query in ("email billing globex", "send attachments acme", "time zone meeting"):
        kuzu = dict(mem.store.fulltext_learnings(search_text(query), 50))
        ours = {catalog.ids[r]: s for r, s in catalog.lexical.search(query, "alice", 50)}
        assert kuzu and ours.keys() == kuzu.keys()
    assert Counter(catalog.lexical.terms_of(0)) == Counter(search_text(CORPUS[0][2]).split())
