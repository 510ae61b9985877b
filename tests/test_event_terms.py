"""Event search: soft term matching (each content word of the query against the most similar
other word of each event; graphmem/retrieve/event_terms.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from graphmem import Memory
from graphmem.embed import HashEmbedder
from graphmem.retrieve.event_terms import (
    TermIndex,
    WordVectors,
    query_words,
    term_scores,
    word_vectors,
)
from graphmem.store.search import EventLayout
from tests.test_search_speaker import _record

# single words embedded as a shared concept: "kid" is as close to "family" as a word can be
_CONCEPT = {"kid": "family", "son": "family", "daughter": "family", "fami": "family"}
# every signal but the fused base score and the term signal is off
_QUIET = {"search_weight_rocchio": 0.0, "search_weight_prf": 0.0, "search_weight_hop": 0.0,
          "search_weight_neighbour": 0.0, "search_weight_continuation": 0.0, "search_weight_length": 0.0,
          "search_weight_question_turn": 0.0, "search_weight_vector": 0.0}


class ConceptEmbedder(HashEmbedder):
    """HashEmbedder whose single-word texts in :data:`_CONCEPT` embed as their concept word."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return super().embed([_CONCEPT.get(t, t) for t in texts])


_TURNS = [
    ("s1", "Melanie", "We took the kids camping at the lake."),
    ("s1", "Caroline", "The weather report said rain on Tuesday."),
    ("s2", "Melanie", "The museum bought a new painting this week."),
    ("s2", "Caroline", "Traffic on the bridge was slow again."),
    ("s3", "Caroline", "My family visited on Sunday."),  # a query word the events hold
]


def _mem(tmp_path, **settings: object) -> tuple[Memory, ConceptEmbedder]:
    embedder = ConceptEmbedder()
    mem = Memory(tmp_path / "db.kuzu", user="u", embedder=embedder)
    mem.settings = mem.settings.model_copy(update={**_QUIET, **settings})
    return mem, embedder


def _scores(mem: Memory, query: str) -> dict[str, tuple[float, list[str]]]:
    return {h.node.content: (h.score, h.reasons) for h in mem.search(query, over="events", k=10)}


def test_a_turn_with_a_related_word_outranks_unrelated_turns(tmp_path) -> None:
    mem, _ = _mem(tmp_path, search_weight_terms=0.5, search_weight_fulltext=0.0)
    with mem:
        _record(mem, _TURNS)
        on = _scores(mem, "What does Melanie do with her family?")
        mem.settings = mem.settings.model_copy(update={"search_weight_terms": 0.0})
        off = _scores(mem, "What does Melanie do with her family?")
    kids = _TURNS[0][2]
    assert max(on, key=lambda c: on[c][0]) == kids
    assert on[kids][0] == pytest.approx(off[kids][0] + 0.5)  # the best match: the max-normalised 1
    assert any(r.startswith("words: holds words related") for r in on[kids][1])
    assert not any(r.startswith("words:") for r in off[kids][1])
    museum = _TURNS[2][2]  # the same speaker, no related word
    assert on[museum][0] == pytest.approx(off[museum][0])
    family = _TURNS[4][2]  # holds the word itself: that is BM25's to count
    assert on[family][0] == pytest.approx(off[family][0])


def test_query_words_no_event_holds_count_nothing_and_are_not_embedded(tmp_path) -> None:
    mem, embedder = _mem(tmp_path, search_weight_terms=0.5, search_weight_fulltext=0.0)
    with mem:
        _record(mem, _TURNS[:4])  # no event holds "family"
        embedder.calls.clear()
        on = _scores(mem, "What does Melanie do with her family?")
        assert all("fami" not in call for call in embedder.calls)
        mem.settings = mem.settings.model_copy(update={"search_weight_terms": 0.0})
        off = _scores(mem, "What does Melanie do with her family?")
    assert {t: v[0] for t, v in on.items()} == pytest.approx({t: v[0] for t, v in off.items()})


def test_the_query_word_itself_counts_nothing(tmp_path) -> None:
    """BM25 counts the very word; the term signal only related ones."""
    mem, _ = _mem(tmp_path, search_weight_terms=0.5, search_weight_fulltext=0.0)
    with mem:
        _record(mem, _TURNS)
        on = _scores(mem, "museum painting")
        mem.settings = mem.settings.model_copy(update={"search_weight_terms": 0.0})
        off = _scores(mem, "museum painting")
    for text in on:
        assert on[text][0] == pytest.approx(off[text][0])


def test_record_events_embeds_the_new_words_once(tmp_path) -> None:
    mem, embedder = _mem(tmp_path, search_weight_terms=0.15)
    with mem:
        _record(mem, _TURNS)
        words = word_vectors(mem.store.event_catalog)
        assert {"kid", "camp", "museum", "bridge", "fami"} <= set(words.index)
        index = mem.store.event_layout(mem.user).derived["term_index"]
        assert index.count == len(_TURNS)  # covered at ingest: the search embeds no event word
        embedder.calls.clear()
        mem.search("What does Melanie do with her family?", over="events", k=3)
        embedded = [t for call in embedder.calls for t in call]
        assert not {"kid", "camp", "fami"} & set(embedded)  # only the query itself was embedded
        mem.record_event("message", "My son loves the lake.", role="Melanie", session_id="s3", entities=["Melanie"])
        hits = mem.search("What does Melanie do with her family?", over="events", k=5)
        assert index.count == len(_TURNS) + 1  # a single write: covered by the next search
        assert "My son loves the lake." in [h.node.content for h in hits]


def test_off_above_the_size_threshold_and_when_the_weight_is_zero(tmp_path) -> None:
    mem, _ = _mem(tmp_path, search_weight_terms=0.15, search_terms_max_events=3)
    with mem:
        _record(mem, _TURNS)  # 4 events > 3: nothing embedded, no index kept
        assert "term_index" not in mem.store.event_layout(mem.user).derived
        hits = mem.search("What does Melanie do with her family?", over="events", k=4)
        assert not any(r.startswith("words:") for h in hits for r in h.reasons)
        assert "term_index" not in mem.store.event_layout(mem.user).derived


def test_term_scores_match_a_plain_computation() -> None:
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(40)]
    vecs = {w: rng.normal(size=8) for w in [*vocab, "zz"]}
    docs = [list(rng.choice(vocab, size=int(rng.integers(0, 6)))) for _ in range(30)]
    docs[-1] = []  # an event without a word at the end

    def embed(ws: list[str]) -> np.ndarray:
        return np.stack([vecs[w] for w in ws])

    words, index = WordVectors(8), TermIndex(8)
    index.extend(EventLayout(order=[str(i) for i in range(18)], rows=np.arange(18)), lambda r: docs[r], words, embed)
    index.extend(EventLayout(order=[str(i) for i in range(30)], rows=np.arange(30)), lambda r: docs[r], words, embed)
    query = ["w1", "w7", "zz"]
    rows = words.ensure(query, embed)
    got = term_scores(index, 30, words.matrix[rows], query, 0.3)
    unit = {w: v / np.linalg.norm(v) for w, v in vecs.items()}
    weight = np.array([max(0.0, np.log(31 / (sum(w in d for d in docs) + 0.5))) for w in query])
    expected = [sum(weight[j] * max([max(0.0, (unit[q] @ unit[x] - 0.3) / 0.7) for x in set(d) if x != q], default=0.0)
                    for j, q in enumerate(query)) / weight.sum() for d in docs]
    assert np.allclose(got, expected, atol=1e-6)
    assert got[-1] == 0.0


def test_query_words_drop_stop_words_names_and_numbers() -> None:
    assert query_words("What activities has Melanie done with her family in 2023?", ["Melanie"]) == [
        "activity", "done", "fami"]
